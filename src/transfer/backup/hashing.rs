//! A reader that hashes what passes through it and counts it on a [`Progress`].

use std::io::Read;

use base64::Engine as _;
use sha2::Digest;

use crate::transfer::Progress;

/// Reads `inner`, feeding every byte to the digest `D` (MD5 for a blob's file, SHA-256 for the
/// database and the secrets) and adding the count to a progress line.
#[derive(Debug)]
pub struct Hashing<'p, R, D> {
    inner: R,
    digest: D,
    bytes: u64,
    progress: Option<&'p mut Progress>,
}

impl<'p, R: Read, D: Digest> Hashing<'p, R, D> {
    /// Hashes `inner`, counting on `progress` when given.
    pub fn new(inner: R, progress: Option<&'p mut Progress>) -> Self {
        Self {
            inner,
            digest: D::new(),
            bytes: 0,
            progress,
        }
    }

    /// Reads what is left (for an entry's bytes that nobody else needs).
    ///
    /// # Errors
    /// A read that fails.
    pub fn drain(&mut self) -> std::io::Result<()> {
        std::io::copy(self, &mut std::io::sink()).map(|_| ())
    }

    /// Bytes read so far.
    pub fn read_so_far(&self) -> u64 {
        self.bytes
    }

    /// The bytes read and their digest, lowercase hex (SHA-256's form in the manifest).
    pub fn hex(self) -> (u64, String) {
        (self.bytes, hex::encode(self.digest.finalize()))
    }

    /// The bytes read and their digest in base64 (Active Storage's `checksum`).
    pub fn base64(self) -> (u64, String) {
        let digest = base64::engine::general_purpose::STANDARD.encode(self.digest.finalize());
        (self.bytes, digest)
    }
}

impl<R: Read, D: Digest> Read for Hashing<'_, R, D> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.digest.update(&buf[..n]);
        self.bytes += n as u64;
        if let Some(progress) = self.progress.as_deref_mut() {
            progress.inc(n as u64);
        }
        Ok(n)
    }
}

/// SHA-256 of the file at `path`, lowercase hex, and its size.
///
/// # Errors
/// The file cannot be opened or read.
pub fn sha256_file(path: &std::path::Path) -> std::io::Result<(u64, String)> {
    let mut reader = Hashing::<_, sha2::Sha256>::new(std::fs::File::open(path)?, None);
    reader.drain()?;
    Ok(reader.hex())
}
