//! Sweep plots: one line per target against N, written as SVG and PNG with `plotters`.
//!
//! Charts: fully delivered messages/s, deliveries/s, post round-trip p50 (solid) and p99
//! (dashed), and post→all-clients p99.
//!
//! Text needs a font: `plotters` is built with its `ab_glyph` backend, which renders only fonts
//! registered at run time, so the first TrueType font found (`$LOADGEN_FONT`, then DejaVu Sans or
//! Liberation Sans in the usual Debian paths, then any `.ttf` under `/usr/share/fonts`) is
//! loaded. Without one, the charts are drawn without any text (axes, grid and lines only) and
//! the caller is told so; the markdown table carries the numbers either way.

use crate::report::TableRow;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

static FONT: OnceLock<Option<PathBuf>> = OnceLock::new();

/// Finds and registers a TrueType font as `sans-serif`; returns its path, or `None` when no
/// font could be loaded (then plots carry no text).
pub fn ensure_font() -> Option<PathBuf> {
    FONT.get_or_init(|| {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Ok(p) = std::env::var("LOADGEN_FONT") {
            candidates.push(p.into());
        }
        for p in [
            "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
            "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
            "/usr/share/fonts/TTF/DejaVuSans.ttf",
            "/usr/share/fonts/dejavu/DejaVuSans.ttf",
        ] {
            candidates.push(p.into());
        }
        candidates.extend(find_ttf(Path::new("/usr/share/fonts"), 4));
        for path in candidates {
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                return Some(path);
            }
        }
        None
    })
    .clone()
}

fn find_ttf(dir: &Path, depth: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() && depth > 0 {
            out.extend(find_ttf(&p, depth - 1));
        } else if p.extension().is_some_and(|e| e.eq_ignore_ascii_case("ttf")) {
            out.push(p);
        }
    }
    out
}

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points (N, value).
    pub points: Vec<(f64, f64)>,
    /// Palette index (same index = same colour).
    pub colour: usize,
    /// Dashed instead of solid.
    pub dashed: bool,
}

/// A chart to draw.
#[derive(Debug, Clone)]
pub struct Chart {
    /// File stem, e.g. `delivered`.
    pub stem: String,
    /// Caption.
    pub title: String,
    /// Y axis description.
    pub y_label: String,
    /// Lines.
    pub series: Vec<Series>,
}

const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

/// A y-axis tick label for an axis whose top is `axis_max`: thousands separators when the
/// axis reaches 1,000, whole numbers from 10, two decimals below.
pub fn y_tick(v: f64, axis_max: f64) -> String {
    if axis_max >= 1000.0 {
        crate::report::thousands(v)
    } else if axis_max >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

const LEGEND_COLUMNS: usize = 2;

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
    text: bool,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(err)?;
    // The legend gets its own strip under the chart so it never hides a line.
    let rows_needed = chart.series.len().div_ceil(LEGEND_COLUMNS) as u32;
    let legend_h = if text { 12 + 22 * rows_needed } else { 0 };
    let (_, h) = root.dim_in_pixel();
    let (plot_area, legend_area) = root.split_vertically(h.saturating_sub(legend_h));
    let max_x = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(1.0f64, f64::max);
    let max_y = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let mut builder = ChartBuilder::on(&plot_area);
    builder.margin(16);
    if text {
        builder
            .caption(&chart.title, ("sans-serif", 22))
            .x_label_area_size(44)
            .y_label_area_size(90);
    } else {
        builder.x_label_area_size(8).y_label_area_size(8);
    }
    let mut ctx = builder
        .build_cartesian_2d(0f64..max_x * 1.05, 0f64..max_y * 1.1)
        .map_err(err)?;
    let mut mesh = ctx.configure_mesh();
    let x_fmt = |x: &f64| format!("{x:.0}");
    let y_fmt = |y: &f64| y_tick(*y, max_y);
    if text {
        mesh.x_desc("N (clients)")
            .y_desc(chart.y_label.as_str())
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .label_style(("sans-serif", 14));
    } else {
        mesh.x_labels(0).y_labels(0);
    }
    mesh.draw().map_err(err)?;
    for s in &chart.series {
        let colour = COLOURS[s.colour % COLOURS.len()];
        let style = ShapeStyle::from(&colour).stroke_width(2);
        if s.dashed {
            ctx.draw_series(DashedLineSeries::new(s.points.clone(), 8, 5, style))
                .map_err(err)?;
        } else {
            ctx.draw_series(LineSeries::new(s.points.clone(), style))
                .map_err(err)?;
        }
        ctx.draw_series(
            s.points
                .iter()
                .map(|&(x, y)| Circle::new((x, y), 3, colour.filled())),
        )
        .map_err(err)?;
    }
    if text {
        let (w, _) = legend_area.dim_in_pixel();
        let col_w = (w as i32 - 40) / LEGEND_COLUMNS as i32;
        for (i, s) in chart.series.iter().enumerate() {
            let colour = COLOURS[s.colour % COLOURS.len()];
            let style = ShapeStyle::from(&colour).stroke_width(3);
            let x = 40 + (i % LEGEND_COLUMNS) as i32 * col_w;
            let y = 8 + (i / LEGEND_COLUMNS) as i32 * 22 + 8;
            if s.dashed {
                for k in 0..3 {
                    legend_area
                        .draw(&PathElement::new(
                            vec![(x + k * 11, y), (x + k * 11 + 7, y)],
                            style,
                        ))
                        .map_err(err)?;
                }
            } else {
                legend_area
                    .draw(&PathElement::new(vec![(x, y), (x + 29, y)], style))
                    .map_err(err)?;
            }
            legend_area
                .draw(&Text::new(
                    s.label.clone(),
                    (x + 38, y - 8),
                    ("sans-serif", 15).into_font(),
                ))
                .map_err(err)?;
        }
    }
    root.present().map_err(err)?;
    Ok(())
}

/// Writes `chart` as `<dir>/<stem>.svg` and `<dir>/<stem>.png` (900 × 560 px).
///
/// Errors: a backend error text (e.g. the directory is not writable).
pub fn write_chart(chart: &Chart, dir: &Path) -> Result<Vec<PathBuf>, String> {
    let text = ensure_font().is_some();
    let svg = dir.join(format!("{}.svg", chart.stem));
    let png = dir.join(format!("{}.png", chart.stem));
    draw(
        &SVGBackend::new(&svg, (900, 560)).into_drawing_area(),
        chart,
        text,
    )?;
    draw(
        &BitMapBackend::new(&png, (900, 560)).into_drawing_area(),
        chart,
        text,
    )?;
    Ok(vec![svg, png])
}

/// The sweep charts for `rows` (see the module docs).
pub fn sweep_charts(rows: &[TableRow]) -> Vec<Chart> {
    let mut targets: Vec<&str> = Vec::new();
    for r in rows {
        if !targets.contains(&r.target.as_str()) {
            targets.push(&r.target);
        }
    }
    let line =
        |t: &str, i: usize, suffix: &str, dashed: bool, f: &dyn Fn(&TableRow) -> f64| Series {
            label: format!("{t}{suffix}"),
            points: rows
                .iter()
                .filter(|r| r.target == t)
                .map(|r| (r.n as f64, f(r)))
                .collect(),
            colour: i,
            dashed,
        };
    let per_target = |f: &dyn Fn(&TableRow) -> f64| -> Vec<Series> {
        targets
            .iter()
            .enumerate()
            .map(|(i, t)| line(t, i, "", false, f))
            .collect()
    };
    let mut latency = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        latency.push(line(t, i, " p50", false, &|r| r.post_p50_ms));
        latency.push(line(t, i, " p99", true, &|r| r.post_p99_ms));
    }
    vec![
        Chart {
            stem: "delivered".into(),
            title: "Fully delivered messages/s".into(),
            y_label: "messages/s reaching every client".into(),
            series: per_target(&|r| r.delivered_msgs_per_sec),
        },
        Chart {
            stem: "deliveries".into(),
            title: "Deliveries/s (client × message receipts)".into(),
            y_label: "receipts/s".into(),
            series: per_target(&|r| r.deliveries_per_sec),
        },
        Chart {
            stem: "post_latency".into(),
            title: "Post round trip p50 (solid) and p99 (dashed)".into(),
            y_label: "ms".into(),
            series: latency,
        },
        Chart {
            stem: "post_to_all_p99".into(),
            title: "Post → all clients p99".into(),
            y_label: "ms".into(),
            series: per_target(&|r| r.all_p99_ms),
        },
    ]
}

/// Writes every sweep chart into `dir`; returns the files written and whether text was drawn.
///
/// Errors: the first backend error.
pub fn write_sweep_plots(rows: &[TableRow], dir: &Path) -> Result<(Vec<PathBuf>, bool), String> {
    let mut files = Vec::new();
    for chart in sweep_charts(rows) {
        files.extend(write_chart(&chart, dir)?);
    }
    Ok((files, ensure_font().is_some()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: &str, n: usize, v: f64) -> TableRow {
        TableRow {
            target: t.into(),
            n,
            delivered_msgs_per_sec: v,
            deliveries_per_sec: v * n as f64,
            post_p50_ms: 1.0,
            post_p99_ms: 3.0,
            all_p99_ms: 5.0,
            ..Default::default()
        }
    }

    #[test]
    fn charts_have_one_line_per_target() {
        let rows = vec![row("a", 50, 10.0), row("b", 50, 8.0), row("a", 100, 6.0)];
        let charts = sweep_charts(&rows);
        assert_eq!(charts.len(), 4);
        assert_eq!(charts[0].series.len(), 2);
        assert_eq!(charts[0].series[0].points, vec![(50.0, 10.0), (100.0, 6.0)]);
        assert_eq!(charts[2].series.len(), 4, "p50 and p99 per target");
        assert!(charts[2].series[1].dashed);
    }

    #[test]
    fn tick_labels() {
        assert_eq!(y_tick(250_000.0, 300_000.0), "250,000");
        assert_eq!(y_tick(0.0, 300_000.0), "0");
        assert_eq!(y_tick(42.4, 50.0), "42");
        assert_eq!(y_tick(1.234, 5.0), "1.23");
    }

    #[test]
    fn writes_svg_and_png_files() {
        let dir = std::env::temp_dir().join(format!("loadgen-plot-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let rows = vec![row("a", 50, 10.0), row("a", 100, 6.0), row("b", 100, 7.0)];
        let (files, _text) = write_sweep_plots(&rows, &dir).unwrap();
        assert_eq!(files.len(), 8);
        for f in &files {
            let bytes = std::fs::read(f).unwrap();
            assert!(bytes.len() > 100, "{} is too small", f.display());
            if f.extension().unwrap() == "png" {
                assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
            } else {
                assert!(String::from_utf8_lossy(&bytes).contains("<svg"));
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
