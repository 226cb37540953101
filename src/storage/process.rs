//! Image analysis and variants with the `image` crate (what Rails does with
//! `ActiveStorage::Analyzer::ImageAnalyzer` and `image_processing`). Blocking work: callers run
//! it on the blocking pool, off the post path.
//!
//! Every decode is bounded, by every route that decodes (a message's file, avatars, the
//! account logo): before any decoder runs, [`probe`] reads the headers and refuses an image
//! more than [`MAX_DIMENSION`] pixels a side or [`MAX_PIXELS`] pixels in all, a GIF any of
//! whose frames lies outside its logical screen (the GIF decoder sizes a frame by its own
//! header, not the screen), and a WebP any of whose bitstreams or animation frames is larger
//! than its canvas (the WebP decoder decodes while it opens the file, before any limit is
//! set). A sequential (baseline) JPEG, what cameras and phones write, may be larger than
//! [`MAX_PIXELS`] (up to [`MAX_DIMENSION`] a side): it is decoded already scaled down by ½, ¼
//! or ⅛ in its inverse DCT ([`jpeg_scale`]), so no more than [`MAX_PIXELS`] pixels are ever
//! decoded at once; a progressive JPEG keeps every coefficient of the full image until its
//! last scan, so it stays within [`MAX_PIXELS`]. The decoders then run within [`limits`]
//! ([`MAX_ALLOC`] bytes), and resizing never scales a source up before cropping it, so one
//! image's decode and resize hold at most a few times [`MAX_PIXELS`] pixels, whatever the file
//! claims: a small file that claims a huge image (a decompression bomb) is refused instead of
//! filling memory. Variants are re-encoded from pixels, so no metadata of the original (EXIF,
//! GPS, comments) reaches them.

use std::io::{BufReader, Cursor, Read, Seek, SeekFrom};
use std::path::Path;

use image::imageops::FilterType;
use image::{DynamicImage, ImageFormat, ImageOutputFormat};

/// Largest accepted width or height, in pixels.
pub const MAX_DIMENSION: u32 = 12_000;
/// Largest image decoded at once, in pixels (width × height): 25 megapixels (a 6,000 × 4,000
/// photo fits). At 8 bytes a pixel (16-bit RGBA) that is 200 MB decoded, so one image's decode
/// and resize stay well under the 512 MiB the documentation promises. The largest accepted
/// image but for sequential JPEGs, which are decoded scaled down to it (see the module docs).
pub const MAX_PIXELS: u64 = 25_000_000;
/// Largest allocation the decoders may make for one image, in bytes (the `image` crate's
/// `Limits::max_alloc`, also the GIF decoder's memory limit).
pub const MAX_ALLOC: u64 = 256 * 1024 * 1024;

/// Why an image could not be processed.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// Not an image the decoders read, or beyond the limits.
    #[error("image: {0}")]
    Image(#[from] image::ImageError),
    /// Reading the file failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// Refused by [`probe`] before any decoder ran: beyond the limits, or a format that is not
    /// decoded (anything but PNG, JPEG, GIF and WebP).
    #[error("image refused: {0}")]
    Refused(String),
}

/// The decode limits (see the module docs).
pub fn limits() -> image::io::Limits {
    let mut limits = image::io::Limits::default();
    limits.max_image_width = Some(MAX_DIMENSION);
    limits.max_image_height = Some(MAX_DIMENSION);
    limits.max_alloc = Some(MAX_ALLOC);
    limits
}

/// What [`analyze`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageInfo {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// An animated GIF (more than one frame): its variants are the original, so the animation
    /// is kept.
    pub animated: bool,
}

/// What an image's headers say, checked against the limits: [`probe`]'s answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    /// PNG, JPEG, GIF or WebP (from the bytes, never the name).
    pub format: ImageFormat,
    /// Width in pixels, as stored (before any EXIF orientation).
    pub width: u32,
    /// Height in pixels, as stored.
    pub height: u32,
    /// How many frames a GIF has (1 for the other formats).
    pub frames: u32,
}

/// `Err(Refused)` unless `width` × `height` is within [`MAX_DIMENSION`] and [`MAX_PIXELS`].
fn check_size(what: &str, width: u32, height: u32) -> Result<(), ProcessError> {
    check_size_within(what, width, height, MAX_PIXELS)
}

/// `Err(Refused)` unless `width` × `height` is within [`MAX_DIMENSION`] and `max_pixels`.
fn check_size_within(
    what: &str,
    width: u32,
    height: u32,
    max_pixels: u64,
) -> Result<(), ProcessError> {
    let pixels = u64::from(width) * u64::from(height);
    if width == 0
        || height == 0
        || width > MAX_DIMENSION
        || height > MAX_DIMENSION
        || pixels > max_pixels
    {
        return Err(ProcessError::Refused(format!(
            "{what} of {width}×{height} pixels is beyond the limits ({MAX_DIMENSION} a side, \
             {max_pixels} in all)"
        )));
    }
    Ok(())
}

/// Whether the JPEG at `path` is sequential (baseline or extended, one scan decoded row by
/// row), from its headers (`jpeg-decoder`'s `read_info`, which stops before the first scan).
///
/// # Errors
/// [`ProcessError::Refused`] for headers the decoder cannot read; [`ProcessError::Io`] when
/// the file cannot be opened.
fn jpeg_is_sequential(path: &Path) -> Result<bool, ProcessError> {
    let mut decoder = jpeg_decoder::Decoder::new(BufReader::new(std::fs::File::open(path)?));
    decoder
        .read_info()
        .map_err(|e| ProcessError::Refused(format!("a JPEG whose headers cannot be read: {e}")))?;
    Ok(decoder
        .info()
        .is_some_and(|i| i.coding_process == jpeg_decoder::CodingProcess::DctSequential))
}

/// The size a `width` × `height` JPEG is decoded at: itself within [`MAX_PIXELS`], otherwise
/// the largest of ½, ¼ and ⅛ (the scales of the inverse DCT, `jpeg-decoder`'s
/// `Decoder::scale`; each side rounded up) within it. ⅛ of [`MAX_DIMENSION`] a side is
/// 2.25 megapixels, always within.
pub fn jpeg_scale(width: u32, height: u32) -> (u32, u32) {
    let scaled = |side: u32, eighths: u64| {
        u32::try_from((u64::from(side) * eighths).div_ceil(8)).unwrap_or(side)
    };
    let mut size = (width, height);
    for eighths in [8, 4, 2, 1] {
        size = (scaled(width, eighths), scaled(height, eighths));
        if u64::from(size.0) * u64::from(size.1) <= MAX_PIXELS {
            break;
        }
    }
    size
}

/// Reads the headers of the image at `path` and checks them against the limits (see the module
/// docs) without decoding any pixel: its format, size and, for a GIF, its frame count.
///
/// # Errors
/// [`ProcessError::Refused`] for a format other than PNG, JPEG, GIF or WebP, a size beyond
/// the limits, a GIF frame outside its screen or a WebP bitstream or frame beyond its canvas;
/// [`ProcessError::Image`] or [`ProcessError::Io`] for headers that cannot be read.
pub fn probe(path: &Path) -> Result<Probe, ProcessError> {
    let guessed = image::io::Reader::open(path)?.with_guessed_format()?;
    let format = guessed.format();
    let mut max_pixels = MAX_PIXELS;
    let frames = match format {
        Some(ImageFormat::Png) => 1,
        Some(ImageFormat::Jpeg) => {
            if jpeg_is_sequential(path)? {
                max_pixels = u64::from(MAX_DIMENSION) * u64::from(MAX_DIMENSION);
            }
            1
        }
        Some(ImageFormat::Gif) => gif_frames(path)?,
        Some(ImageFormat::WebP) => {
            check_webp(path)?;
            1
        }
        _ => return Err(ProcessError::Refused("not a PNG, JPEG, GIF or WebP".into())),
    };
    let mut reader = guessed;
    reader.limits(limits());
    let (width, height) = reader.into_dimensions()?;
    check_size_within("an image", width, height, max_pixels)?;
    Ok(Probe {
        format: format.unwrap_or(ImageFormat::Png),
        width,
        height,
        frames,
    })
}

/// The frame count of the GIF at `path`, reading its frame headers only (their pixels are
/// skipped, never decoded).
///
/// # Errors
/// [`ProcessError::Refused`] when the logical screen is beyond the limits or a frame lies
/// outside it; [`ProcessError::Image`] for a GIF that cannot be read.
fn gif_frames(path: &Path) -> Result<u32, ProcessError> {
    let refused = |e: gif::DecodingError| {
        ProcessError::Image(image::ImageError::Decoding(
            image::error::DecodingError::new(
                image::error::ImageFormatHint::Exact(ImageFormat::Gif),
                e,
            ),
        ))
    };
    let mut options = gif::DecodeOptions::new();
    // Frames are checked against the screen below, with a message that says so; skipping
    // their decoding, nothing is allocated for their pixels here.
    options.skip_frame_decoding(true);
    if let Some(limit) = std::num::NonZeroU64::new(MAX_ALLOC) {
        options.set_memory_limit(gif::MemoryLimit::Bytes(limit));
    }
    let mut decoder = options
        .read_info(BufReader::new(std::fs::File::open(path)?))
        .map_err(refused)?;
    let (screen_w, screen_h) = (u32::from(decoder.width()), u32::from(decoder.height()));
    check_size("a GIF screen", screen_w, screen_h)?;
    let mut frames = 0u32;
    while let Some(frame) = decoder.next_frame_info().map_err(refused)? {
        let right = u32::from(frame.left) + u32::from(frame.width);
        let bottom = u32::from(frame.top) + u32::from(frame.height);
        if right > screen_w || bottom > screen_h {
            return Err(ProcessError::Refused(format!(
                "a GIF frame of {}×{} pixels at ({}, {}) lies outside its {screen_w}×{screen_h} screen",
                frame.width, frame.height, frame.left, frame.top
            )));
        }
        frames = frames.saturating_add(1);
    }
    Ok(frames)
}

/// Checks the WebP at `path` chunk by chunk (RIFF, the WebP container specification), reading
/// only chunk headers and the first bytes of each bitstream: the canvas of `VP8X`, and every
/// `VP8 ` and `VP8L` bitstream and `ANMF` frame, must be within the limits, and within the
/// canvas when there is one.
///
/// # Errors
/// [`ProcessError::Refused`] as described; [`ProcessError::Io`] when the file cannot be read.
fn check_webp(path: &Path) -> Result<(), ProcessError> {
    let mut file = BufReader::new(std::fs::File::open(path)?);
    let end = file.get_ref().metadata()?.len();
    let mut riff = [0u8; 12];
    file.read_exact(&mut riff)?;
    if &riff[0..4] != b"RIFF" || &riff[8..12] != b"WEBP" {
        return Err(ProcessError::Refused("not a WebP".into()));
    }
    let mut canvas = None;
    let mut sizes = Vec::new();
    webp_chunks(&mut file, end, 0, &mut canvas, &mut sizes)?;
    if let Some((w, h)) = canvas {
        check_size("a WebP canvas", w, h)?;
    }
    if sizes.is_empty() {
        return Err(ProcessError::Refused("a WebP without an image".into()));
    }
    for (w, h) in sizes {
        check_size("a WebP image", w, h)?;
        if let Some((cw, ch)) = canvas {
            if w > cw || h > ch {
                return Err(ProcessError::Refused(format!(
                    "a WebP image of {w}×{h} pixels is larger than its {cw}×{ch} canvas"
                )));
            }
        }
    }
    Ok(())
}

/// The chunks from the reader's position to `end` (nested once, in `ANMF`): records the
/// `VP8X` canvas and the size of every bitstream and frame (a frame's by its offset plus size).
fn webp_chunks<R: Read + Seek>(
    r: &mut R,
    end: u64,
    depth: u8,
    canvas: &mut Option<(u32, u32)>,
    sizes: &mut Vec<(u32, u32)>,
) -> Result<(), ProcessError> {
    fn le24(b: &[u8]) -> u32 {
        u32::from(b[0]) | (u32::from(b[1]) << 8) | (u32::from(b[2]) << 16)
    }
    let truncated = || ProcessError::Refused("a truncated WebP chunk".into());
    loop {
        let at = r.stream_position()?;
        if at + 8 > end {
            return Ok(());
        }
        let mut header = [0u8; 8];
        r.read_exact(&mut header)?;
        let len = u64::from(u32::from_le_bytes([
            header[4], header[5], header[6], header[7],
        ]));
        let body = at + 8;
        let head_len = match &header[0..4] {
            b"VP8X" | b"VP8 " => 10,
            b"VP8L" => 5,
            b"ANMF" => 16,
            _ => 0,
        };
        if head_len > 0 {
            if len < head_len || body + head_len > end {
                return Err(truncated());
            }
            let mut head = [0u8; 16];
            let head = &mut head[..head_len as usize];
            r.read_exact(head)?;
            match &header[0..4] {
                b"VP8X" => *canvas = Some((le24(&head[4..7]) + 1, le24(&head[7..10]) + 1)),
                b"VP8 " => {
                    if head[3..6] != [0x9d, 0x01, 0x2a] {
                        return Err(ProcessError::Refused(
                            "a VP8 bitstream without its start code".into(),
                        ));
                    }
                    sizes.push((
                        u32::from(u16::from_le_bytes([head[6], head[7]]) & 0x3fff),
                        u32::from(u16::from_le_bytes([head[8], head[9]]) & 0x3fff),
                    ));
                }
                b"VP8L" => {
                    if head[0] != 0x2f {
                        return Err(ProcessError::Refused(
                            "a VP8L bitstream without its signature".into(),
                        ));
                    }
                    let bits = u32::from_le_bytes([head[1], head[2], head[3], head[4]]);
                    sizes.push(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1));
                }
                _ => {
                    // ANMF: X/2, Y/2, width - 1, height - 1 (24 bits each), then its own chunks.
                    let (x, y) = (le24(&head[0..3]) * 2, le24(&head[3..6]) * 2);
                    let (w, h) = (le24(&head[6..9]) + 1, le24(&head[9..12]) + 1);
                    sizes.push((x + w, y + h));
                    if depth == 0 {
                        webp_chunks(r, (body + len).min(end), depth + 1, canvas, sizes)?;
                    }
                }
            }
        }
        // Chunks are padded to an even length.
        let next = body + len + (len & 1);
        if next >= end {
            return Ok(());
        }
        r.seek(SeekFrom::Start(next))?;
    }
}

/// Width, height and whether it is animated, from the headers alone ([`probe`]): a JPEG's
/// sizes are the upright ones (EXIF orientation 5-8 swaps them).
///
/// # Errors
/// As [`probe`].
pub fn analyze(path: &Path) -> Result<ImageInfo, ProcessError> {
    let probe = probe(path)?;
    let (width, height) =
        if probe.format == ImageFormat::Jpeg && jpeg_orientation(&read_head(path)?) >= 5 {
            (probe.height, probe.width)
        } else {
            (probe.width, probe.height)
        };
    Ok(ImageInfo {
        width,
        height,
        animated: probe.format == ImageFormat::Gif && probe.frames > 1,
    })
}

/// How a variant fits its box.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    /// `resize_to_limit: [w, h]`: scaled down to fit within, never up.
    Limit(u32, u32),
    /// `resize_to_fill: [w, h]`: centre-cropped to the box's proportions, then scaled to
    /// exactly w×h (up, for a smaller image).
    Fill(u32, u32),
    /// A square no larger than `n` px a side: centre-cropped to its shorter side, then scaled
    /// down to `n` if larger (never up). Avatars.
    Square(u32),
}

impl Fit {
    /// The box turned a quarter (for an image that is turned upright after resizing).
    fn transposed(self) -> Self {
        match self {
            Self::Limit(w, h) => Self::Limit(h, w),
            Self::Fill(w, h) => Self::Fill(h, w),
            Self::Square(n) => Self::Square(n),
        }
    }
}

/// An encoded variant.
#[derive(Clone, Debug)]
pub struct Encoded {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// Its content type.
    pub content_type: &'static str,
    /// Its file extension.
    pub extension: &'static str,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

/// Decodes the image at `path` (after [`probe`], within [`limits`]) and encodes the variant
/// `fit`: JPEG for a JPEG original, PNG otherwise. A JPEG's EXIF orientation is applied (to
/// the variant, after resizing, so the full-size pixels are never copied to turn them).
///
/// # Errors
/// As [`probe`], and what the decoder finds in the pixels (a truncated file).
pub fn variant(path: &Path, fit: Fit) -> Result<Encoded, ProcessError> {
    variant_as(path, fit, false)
}

/// [`variant`], always as PNG when `png` (icons).
///
/// # Errors
/// As [`variant`].
pub fn variant_as(path: &Path, fit: Fit, png: bool) -> Result<Encoded, ProcessError> {
    let probe = probe(path)?;
    let jpeg = probe.format == ImageFormat::Jpeg;
    let img = if jpeg && u64::from(probe.width) * u64::from(probe.height) > MAX_PIXELS {
        // A sequential JPEG beyond the pixels decoded at once (`probe` refuses any other).
        let (w, h) = jpeg_scale(probe.width, probe.height);
        let mut decoder =
            image::codecs::jpeg::JpegDecoder::new(BufReader::new(std::fs::File::open(path)?))?;
        let too_wide = |_| ProcessError::Refused("a JPEG beyond the limits".into());
        decoder.scale(
            u16::try_from(w).map_err(too_wide)?,
            u16::try_from(h).map_err(too_wide)?,
        )?;
        let (dw, dh) = image::ImageDecoder::dimensions(&decoder);
        check_size("a scaled JPEG", dw, dh)?;
        DynamicImage::from_decoder(decoder)?
    } else {
        let mut reader = image::io::Reader::open(path)?;
        reader.set_format(probe.format);
        reader.limits(limits());
        reader.decode()?
    };
    let orientation = if jpeg {
        jpeg_orientation(&read_head(path)?)
    } else {
        1
    };
    let fit = if orientation >= 5 {
        fit.transposed()
    } else {
        fit
    };
    let resized = resize(img, fit);
    encode(&apply_orientation(resized, orientation), jpeg && !png)
}

/// `img` fitted to `fit`. Cropping comes before scaling, so scaling up (a small logo filled to
/// its icon) only ever makes the box's pixels, never a scaled-up copy of the whole source.
fn resize(img: DynamicImage, fit: Fit) -> DynamicImage {
    let (w, h) = (img.width(), img.height());
    match fit {
        Fit::Limit(bw, bh) if w <= bw && h <= bh => img,
        Fit::Limit(bw, bh) => img.resize(bw, bh, FilterType::Triangle),
        Fit::Fill(bw, bh) => {
            let (bw, bh) = (bw.max(1), bh.max(1));
            // The largest centred crop with the box's proportions.
            let (cw, ch) = if u64::from(w) * u64::from(bh) > u64::from(h) * u64::from(bw) {
                let cw = u64::from(h) * u64::from(bw) / u64::from(bh);
                (u32::try_from(cw).unwrap_or(w).clamp(1, w), h)
            } else {
                let ch = u64::from(w) * u64::from(bh) / u64::from(bw);
                (w, u32::try_from(ch).unwrap_or(h).clamp(1, h))
            };
            let cropped = img.crop_imm((w - cw) / 2, (h - ch) / 2, cw, ch);
            if (cw, ch) == (bw, bh) {
                cropped
            } else {
                cropped.resize_exact(bw, bh, FilterType::Triangle)
            }
        }
        Fit::Square(n) => {
            let side = w.min(h);
            let cropped = if w == h {
                img
            } else {
                img.crop_imm((w - side) / 2, (h - side) / 2, side, side)
            };
            if side > n {
                cropped.resize_exact(n, n, FilterType::Triangle)
            } else {
                cropped
            }
        }
    }
}

/// The first 64 KiB of a file (where a JPEG's EXIF segment is).
fn read_head(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut head = Vec::with_capacity(64 * 1024);
    std::fs::File::open(path)?
        .take(64 * 1024)
        .read_to_end(&mut head)?;
    Ok(head)
}

/// The EXIF `Orientation` (tag 0x0112, 1-8) of a JPEG whose first bytes are `head`; 1 (as
/// stored) when there is none or it cannot be read. Reads the APP1 `Exif` segment's TIFF
/// header and IFD0 only, bounds-checked throughout.
pub fn jpeg_orientation(head: &[u8]) -> u16 {
    fn at<const N: usize>(b: &[u8], i: usize) -> Option<[u8; N]> {
        b.get(i..i.checked_add(N)?)?.try_into().ok()
    }
    fn exif(tiff: &[u8]) -> Option<u16> {
        let le = match tiff.get(0..2)? {
            b"II" => true,
            b"MM" => false,
            _ => return None,
        };
        let u16_at = |i| {
            at::<2>(tiff, i).map(|b| {
                if le {
                    u16::from_le_bytes(b)
                } else {
                    u16::from_be_bytes(b)
                }
            })
        };
        let u32_at = |i| {
            at::<4>(tiff, i).map(|b| {
                if le {
                    u32::from_le_bytes(b)
                } else {
                    u32::from_be_bytes(b)
                }
            })
        };
        if u16_at(2)? != 42 {
            return None;
        }
        let ifd = usize::try_from(u32_at(4)?).ok()?;
        let count = usize::from(u16_at(ifd)?);
        for n in 0..count.min(512) {
            let entry = ifd + 2 + n * 12;
            if u16_at(entry)? == 0x0112 {
                return Some(u16_at(entry + 8)?).filter(|o| (1..=8).contains(o));
            }
        }
        None
    }
    if head.get(0..2) != Some(&[0xFF, 0xD8]) {
        return 1;
    }
    let mut i = 2;
    while let Some([0xFF, marker]) = at::<2>(head, i) {
        // Start of scan or end of image: no more metadata segments.
        if marker == 0xDA || marker == 0xD9 {
            break;
        }
        let Some(len) = at::<2>(head, i + 2).map(u16::from_be_bytes) else {
            break;
        };
        let len = usize::from(len);
        let Some(segment) = head.get(i + 4..i + 2 + len) else {
            break;
        };
        if marker == 0xE1 && segment.starts_with(b"Exif\0\0") {
            if let Some(o) = exif(&segment[6..]) {
                return o;
            }
        }
        i += 2 + len;
    }
    1
}

/// `img` turned upright for EXIF `orientation` (1-8): what a camera's sideways photo needs
/// before its variant is made (the variant keeps no EXIF to say it).
pub fn apply_orientation(img: DynamicImage, orientation: u16) -> DynamicImage {
    match orientation {
        2 => img.fliph(),
        3 => img.rotate180(),
        4 => img.flipv(),
        5 => img.rotate90().fliph(),
        6 => img.rotate90(),
        7 => img.rotate270().fliph(),
        8 => img.rotate270(),
        _ => img,
    }
}

fn encode(img: &DynamicImage, jpeg: bool) -> Result<Encoded, ProcessError> {
    let mut bytes = Vec::new();
    let (format, content_type, extension) = if jpeg {
        (ImageOutputFormat::Jpeg(85), "image/jpeg", "jpg")
    } else {
        (ImageOutputFormat::Png, "image/png", "png")
    };
    if jpeg {
        DynamicImage::ImageRgb8(img.to_rgb8()).write_to(&mut Cursor::new(&mut bytes), format)?;
    } else {
        img.write_to(&mut Cursor::new(&mut bytes), format)?;
    }
    Ok(Encoded {
        bytes,
        content_type,
        extension,
        width: img.width(),
        height: img.height(),
    })
}

/// A video's poster frame with `ffmpeg` (when it is on the PATH), fitted within `w`×`h`, as
/// PNG; `None` without ffmpeg or when it fails.
pub fn video_poster(path: &Path, w: u32, h: u32) -> Option<Encoded> {
    let out = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-nostdin", "-i"])
        .arg(path)
        .args([
            "-frames:v",
            "1",
            "-vf",
            &format!("scale='min({w},iw)':'min({h},ih)':force_original_aspect_ratio=decrease"),
            "-f",
            "image2pipe",
            "-c:v",
            "png",
            "-",
        ])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() || out.stdout.is_empty() {
        return None;
    }
    let mut reader = image::io::Reader::with_format(Cursor::new(&out.stdout), ImageFormat::Png);
    reader.limits(limits());
    let img = reader.decode().ok()?;
    encode(&img, false).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GIF89a with a `screen`-sized logical screen and one empty frame per `frames` size.
    fn gif(screen: (u16, u16), frames: &[(u16, u16)]) -> Vec<u8> {
        let mut gif = b"GIF89a".to_vec();
        gif.extend_from_slice(&screen.0.to_le_bytes());
        gif.extend_from_slice(&screen.1.to_le_bytes());
        gif.extend_from_slice(&[0x80, 0, 0, 0, 0, 0, 255, 255, 255]);
        for (w, h) in frames {
            gif.extend_from_slice(&[0x2C, 0, 0, 0, 0]);
            gif.extend_from_slice(&w.to_le_bytes());
            gif.extend_from_slice(&h.to_le_bytes());
            gif.extend_from_slice(&[0, 2, 1, 4 | (5 << 3), 0]);
        }
        gif.push(0x3B);
        gif
    }

    fn probe_bytes(name: &str, bytes: &[u8]) -> Result<Probe, ProcessError> {
        let path = std::env::temp_dir().join(format!("hearth-probe-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        let probed = probe(&path);
        let _ = std::fs::remove_file(&path);
        probed
    }

    #[test]
    fn probe_reads_headers_and_refuses_what_is_beyond_the_limits() {
        let two = probe_bytes("two.gif", &gif((16, 16), &[(16, 16), (8, 8)])).unwrap();
        assert_eq!(
            (two.format, two.width, two.height, two.frames),
            (ImageFormat::Gif, 16, 16, 2)
        );
        for (name, bytes) in [
            ("frame.gif", gif((16, 16), &[(16, 16), (65_535, 65_535)])),
            ("screen.gif", gif((12_000, 12_000), &[(1, 1)])),
        ] {
            assert!(
                matches!(probe_bytes(name, &bytes), Err(ProcessError::Refused(_))),
                "{name}"
            );
        }
        // A PNG header claiming 11,000 × 11,000 (no pixels needed to refuse it).
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend_from_slice(&11_000u32.to_be_bytes());
        png.extend_from_slice(&11_000u32.to_be_bytes());
        png.extend_from_slice(&[8, 6, 0, 0, 0, 0x5c, 0x1b, 0x2e, 0x4d]);
        assert!(probe_bytes("big.png", &png).is_err());
        // WebP: a lossless bitstream of 16,384 × 16,384, and a 16 × 16 canvas holding a larger one.
        let riff = |chunks: &[u8]| {
            let mut w = b"RIFF".to_vec();
            w.extend_from_slice(&u32::try_from(4 + chunks.len()).unwrap().to_le_bytes());
            w.extend_from_slice(b"WEBP");
            w.extend_from_slice(chunks);
            w
        };
        let vp8l = |w: u32, h: u32| {
            let mut c = b"VP8L\x10\0\0\0\x2f".to_vec();
            c.extend_from_slice(&((w - 1) | ((h - 1) << 14)).to_le_bytes());
            c.extend_from_slice(&[0; 11]);
            c
        };
        assert!(matches!(
            probe_bytes("big.webp", &riff(&vp8l(16_384, 16_384))),
            Err(ProcessError::Refused(_))
        ));
        let mut extended = b"VP8X\x0a\0\0\0\0\0\0\0\x0f\0\0\x0f\0\0".to_vec();
        extended.extend_from_slice(&vp8l(4_000, 4_000));
        assert!(matches!(
            probe_bytes("canvas.webp", &riff(&extended)),
            Err(ProcessError::Refused(_))
        ));
        assert!(matches!(
            probe_bytes(
                "drawing.svg",
                b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>"
            ),
            Err(ProcessError::Refused(_))
        ));
    }

    #[test]
    fn a_jpeg_beyond_the_pixels_decoded_at_once_is_scaled_by_the_largest_dct_scale_within() {
        assert_eq!(jpeg_scale(6_000, 4_000), (6_000, 4_000));
        assert_eq!(jpeg_scale(8_000, 6_000), (4_000, 3_000));
        assert_eq!(jpeg_scale(12_000, 9_000), (3_000, 2_250));
        assert_eq!(jpeg_scale(12_000, 12_000), (3_000, 3_000));
        assert_eq!(jpeg_scale(8_001, 6_001), (4_001, 3_001));
        assert_eq!(jpeg_scale(u32::MAX, u32::MAX).0, 536_870_912);
    }

    #[test]
    fn a_fill_crops_before_it_scales_and_a_square_never_scales_up() {
        let sliver = DynamicImage::new_rgba8(12_000, 1);
        let filled = resize(sliver.clone(), Fit::Fill(512, 512));
        assert_eq!((filled.width(), filled.height()), (512, 512));
        let square = resize(sliver, Fit::Square(512));
        assert_eq!((square.width(), square.height()), (1, 1));
        let wide = resize(DynamicImage::new_rgb8(300, 200), Fit::Fill(100, 50));
        assert_eq!((wide.width(), wide.height()), (100, 50));
        let limited = resize(DynamicImage::new_rgb8(2400, 1000), Fit::Limit(1200, 800));
        assert_eq!((limited.width(), limited.height()), (1200, 500));
    }

    #[test]
    fn jpeg_orientation_reads_exif_and_survives_garbage() {
        // SOI, APP1 "Exif" with a big-endian TIFF whose IFD0 has Orientation = 8, then SOS.
        let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xE1, 0x00, 34];
        jpeg.extend_from_slice(
            b"Exif\0\0MM\0\x2a\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01\0\x08\0\0\0\0\0\0",
        );
        jpeg.extend_from_slice(&[0xFF, 0xDA]);
        assert_eq!(jpeg_orientation(&jpeg), 8);
        // Truncated anywhere, a wrong byte order mark, an out-of-range value, or no JPEG: 1.
        for cut in 0..jpeg.len() - 2 {
            assert!((1..=8).contains(&jpeg_orientation(&jpeg[..cut])));
        }
        let mut bad = jpeg.clone();
        bad[12] = b'X';
        assert_eq!(jpeg_orientation(&bad), 1);
        let mut nine = jpeg.clone();
        nine[31] = 9;
        assert_eq!(jpeg_orientation(&nine), 1);
        assert_eq!(jpeg_orientation(b"\x89PNG\r\n"), 1);
        let img = DynamicImage::new_rgb8(4, 2);
        assert_eq!(apply_orientation(img.clone(), 6).width(), 2);
        assert_eq!(apply_orientation(img, 3).width(), 4);
    }
}
