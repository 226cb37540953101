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
    // A JPEG stored sideways (EXIF orientation 5-8) is as wide as it is tall when shown.
    let (width, height) =
        if format == Some(ImageFormat::Jpeg) && jpeg_orientation(&read_head(path)?) >= 5 {
            (height, width)
        } else {
            (width, height)
        };
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
    /// A square no larger than `n` px a side: centre-cropped to its shorter side, then scaled
    /// down to `n` if larger (never up). Avatars.
    Square(u32),
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
/// JPEG original, PNG otherwise. A JPEG's EXIF orientation is applied first.
pub fn variant(path: &Path, fit: Fit) -> Result<Encoded, ProcessError> {
    variant_as(path, fit, false)
}

/// [`variant`], always as PNG when `png` (icons).
pub fn variant_as(path: &Path, fit: Fit, png: bool) -> Result<Encoded, ProcessError> {
    let reader = reader(path)?;
    let jpeg = reader.format() == Some(ImageFormat::Jpeg);
    let img = reader.decode()?;
    let img = if jpeg {
        apply_orientation(img, jpeg_orientation(&read_head(path)?))
    } else {
        img
    };
    let resized = match fit {
        Fit::Limit(w, h) if img.width() <= w && img.height() <= h => img,
        Fit::Limit(w, h) => img.resize(w, h, FilterType::Triangle),
        Fit::Fill(w, h) => img.resize_to_fill(w, h, FilterType::Triangle),
        Fit::Square(n) => {
            let side = img.width().min(img.height()).min(n);
            img.resize_to_fill(side, side, FilterType::Triangle)
        }
    };
    encode(&resized, jpeg && !png)
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
