//! Image analysis and variants with the `image` crate (what Rails does with
//! `ActiveStorage::Analyzer::ImageAnalyzer` and `image_processing`). Blocking work: callers run
//! it on the blocking pool, off the post path.
//!
//! Every decode is bounded ([`limits`]): at most [`MAX_DIMENSION`] pixels a side and
//! [`MAX_ALLOC`] bytes of decoded image, so a small file that claims a huge image (a
//! decompression bomb) is refused instead of filling memory. Variants are re-encoded from
//! pixels, so no metadata of the original (EXIF, GPS, comments) reaches them.

use std::io::Cursor;
use std::path::Path;

use image::imageops::FilterType;
use image::{DynamicImage, ImageFormat, ImageOutputFormat};

/// Largest accepted width or height, in pixels.
pub const MAX_DIMENSION: u32 = 12_000;
/// Largest decoded image, in bytes.
pub const MAX_ALLOC: u64 = 512 * 1024 * 1024;

/// Why an image could not be processed.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// Not an image the decoders read, or beyond the limits.
    #[error("image: {0}")]
    Image(#[from] image::ImageError),
    /// Reading the file failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
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

fn reader(
    path: &Path,
) -> Result<image::io::Reader<std::io::BufReader<std::fs::File>>, ProcessError> {
    let mut reader = image::io::Reader::open(path)?.with_guessed_format()?;
    reader.limits(limits());
    Ok(reader)
}

/// Width, height and whether it is animated, reading only the header (and, for a GIF, its
/// first two frames).
pub fn analyze(path: &Path) -> Result<ImageInfo, ProcessError> {
    let reader = reader(path)?;
    let format = reader.format();
    let (width, height) = reader.into_dimensions()?;
    if width > MAX_DIMENSION || height > MAX_DIMENSION {
        return Err(
            image::ImageError::Limits(image::error::LimitError::from_kind(
                image::error::LimitErrorKind::DimensionError,
            ))
            .into(),
        );
    }
    let animated = format == Some(ImageFormat::Gif) && {
        use image::AnimationDecoder as _;
        let file = std::io::BufReader::new(std::fs::File::open(path)?);
        let decoder = image::codecs::gif::GifDecoder::new(file)?;
        decoder.into_frames().take(2).filter(Result::is_ok).count() > 1
    };
    Ok(ImageInfo {
        width,
        height,
        animated,
    })
}

/// How a variant fits its box.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    /// `resize_to_limit: [w, h]`: scaled down to fit within, never up.
    Limit(u32, u32),
    /// `resize_to_fill: [w, h]`: scaled and centre-cropped to exactly w×h.
    Fill(u32, u32),
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

/// Decodes the image at `path` (within [`limits`]) and encodes the variant `fit`: JPEG for a
/// JPEG original, PNG otherwise.
pub fn variant(path: &Path, fit: Fit) -> Result<Encoded, ProcessError> {
    let reader = reader(path)?;
    let jpeg = reader.format() == Some(ImageFormat::Jpeg);
    let img = reader.decode()?;
    let resized = match fit {
        Fit::Limit(w, h) if img.width() <= w && img.height() <= h => img,
        Fit::Limit(w, h) => img.resize(w, h, FilterType::Triangle),
        Fit::Fill(w, h) => img.resize_to_fill(w, h, FilterType::Triangle),
    };
    encode(&resized, jpeg)
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
