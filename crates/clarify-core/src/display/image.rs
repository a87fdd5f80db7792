//! Images in display blocks: `data:` URLs whose bytes are checked to be the type they claim.
//!
//! A browser sniffs content and would run an SVG's script or render HTML sent as `image/png`, so
//! only four raster formats are accepted, each recognised by its signature bytes, and the type
//! served later is the one the bytes proved, never the one the agent wrote.

use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// Standard base64, with or without padding (both are common in data: URLs).
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// One image's bytes.
pub const MAX_IMAGE_BYTES: usize = 1024 * 1024;
/// All images of one request together, in bytes.
pub const MAX_IMAGES_BYTES: usize = 2 * 1024 * 1024;

/// A decoded image of a known raster format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageData {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`, as the bytes show.
    pub media_type: &'static str,
    pub bytes: Vec<u8>,
}

impl ImageData {
    /// Reads `data:<type>;base64,<bytes>`, refusing other types, other encodings, more than
    /// [`MAX_IMAGE_BYTES`], and bytes that are not the type claimed.
    pub fn parse(data_url: &str) -> Result<Self, String> {
        let rest = data_url
            .strip_prefix("data:")
            .ok_or("an image must be a data: URL, e.g. data:image/png;base64,...")?;
        let (header, payload) = rest
            .split_once(',')
            .ok_or("a data: URL needs a comma before its data")?;
        let mut parts = header.split(';');
        let claimed = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        if !parts.any(|p| p.trim().eq_ignore_ascii_case("base64")) {
            return Err("the image data must be base64 (data:image/png;base64,...)".to_owned());
        }
        let claimed = match claimed.as_str() {
            "image/png" => "image/png",
            "image/jpeg" | "image/jpg" => "image/jpeg",
            "image/gif" => "image/gif",
            "image/webp" => "image/webp",
            other => {
                return Err(format!(
                    "images may be PNG, JPEG, GIF or WebP, got {}",
                    crate::text::quoted(other)
                ));
            }
        };
        // The decoded size is known from the length before decoding anything large.
        let payload: String = payload
            .chars()
            .filter(|c| !c.is_ascii_whitespace())
            .collect();
        if payload.len() / 4 * 3 > MAX_IMAGE_BYTES + 3 {
            return Err(format!(
                "an image may be at most {} MiB, got about {:.1} MiB",
                MAX_IMAGE_BYTES / (1024 * 1024),
                (payload.len() / 4 * 3) as f64 / (1024.0 * 1024.0)
            ));
        }
        let bytes = LENIENT
            .decode(&payload)
            .map_err(|e| format!("the image data is not valid base64 ({e})"))?;
        if bytes.len() > MAX_IMAGE_BYTES {
            return Err(format!(
                "an image may be at most {} MiB, got {:.1} MiB",
                MAX_IMAGE_BYTES / (1024 * 1024),
                bytes.len() as f64 / (1024.0 * 1024.0)
            ));
        }
        match sniff(&bytes) {
            Some(actual) if actual == claimed => Ok(Self {
                media_type: actual,
                bytes,
            }),
            Some(actual) => Err(format!(
                "the data says {claimed} but its bytes are {actual}"
            )),
            None => Err(format!(
                "the data says {claimed} but its bytes are not an image of that type"
            )),
        }
    }

    /// The canonical `data:` URL of these bytes.
    pub fn to_data_url(&self) -> String {
        format!(
            "data:{};base64,{}",
            self.media_type,
            base64::engine::general_purpose::STANDARD.encode(&self.bytes)
        )
    }
}

/// The format the signature bytes show, if one of the four.
fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}
