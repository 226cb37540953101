//! Files moved by a transfer: Active Storage's checksum of a file on disk, and [`Staging`], which
//! copies files beside their final place and moves them there only once the database commit is
//! done (dropped before [`Staging::commit`], it removes what it copied).

use std::io::Read;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use md5::Digest as _;

use crate::storage::disk::DiskService;

/// Base64 of the MD5 of the file at `path`: Active Storage's `checksum` column, read in 64 KiB
/// chunks.
///
/// # Errors
/// The file cannot be opened or read.
pub fn checksum(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut md5 = md5::Md5::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        md5.update(&buf[..n]);
    }
    Ok(base64::engine::general_purpose::STANDARD.encode(md5.finalize()))
}

/// Files copied into `<root>/tmp/transfer-<pid>/` and moved to `<root>/ab/cd/<key>` by
/// [`Staging::commit`]; dropped without a commit, the staged copies are removed and the disk
/// service is as it was.
#[derive(Debug)]
pub struct Staging {
    disk: DiskService,
    dir: PathBuf,
    staged: Vec<String>,
}

impl Staging {
    /// A staging area under the disk service rooted at `root` (same file system, so the final
    /// move is a rename).
    ///
    /// # Errors
    /// The staging directory cannot be created.
    pub fn new(root: &Path) -> std::io::Result<Self> {
        let disk = DiskService::new(root.to_path_buf());
        let dir = disk
            .tmp_dir()
            .join(format!("transfer-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(Self {
            disk,
            dir,
            staged: Vec::new(),
        })
    }

    /// Copies `source` as the blob `key`, checking that its checksum is `expected` (base64 MD5)
    /// when one is given.
    ///
    /// # Errors
    /// An invalid key, a copy that fails, or a checksum other than `expected` (named in the
    /// message with both values).
    pub fn stage(
        &mut self,
        key: &str,
        source: &Path,
        expected: Option<&str>,
    ) -> anyhow::Result<()> {
        anyhow::ensure!(
            crate::storage::disk::valid_key(key),
            "blob key {key:?} is not one Active Storage writes"
        );
        let staged = self.dir.join(key);
        std::fs::copy(source, &staged)
            .map_err(|e| anyhow::anyhow!("copying {}: {e}", source.display()))?;
        if let Some(expected) = expected {
            let found = checksum(&staged)?;
            anyhow::ensure!(
                found == expected,
                "{}: checksum {found}, the blob says {expected}",
                source.display()
            );
        }
        self.staged.push(key.to_owned());
        Ok(())
    }

    /// Writes `bytes` as the blob `key`.
    ///
    /// # Errors
    /// An invalid key or a write that fails.
    pub fn stage_bytes(&mut self, key: &str, bytes: &[u8]) -> anyhow::Result<()> {
        anyhow::ensure!(
            crate::storage::disk::valid_key(key),
            "blob key {key:?} is not one Active Storage writes"
        );
        std::fs::write(self.dir.join(key), bytes)?;
        self.staged.push(key.to_owned());
        Ok(())
    }

    /// Streams `reader` into the staged file of the blob `key`, synced to disk, and returns its
    /// size in bytes; its checksum (base64 MD5) must be `expected` when one is given.
    ///
    /// # Errors
    /// An invalid key, a read or write that fails, or a checksum other than `expected` (named
    /// in the message with both values); the partial copy is removed with the staging area.
    pub fn stage_reader(
        &mut self,
        key: &str,
        mut reader: impl Read,
        expected: Option<&str>,
    ) -> anyhow::Result<u64> {
        anyhow::ensure!(
            crate::storage::disk::valid_key(key),
            "blob key {key:?} is not one Active Storage writes"
        );
        let mut file = std::fs::File::create(self.dir.join(key))?;
        let mut md5 = md5::Md5::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut size = 0u64;
        loop {
            let n = reader.read(&mut buf)?;
            if n == 0 {
                break;
            }
            md5.update(&buf[..n]);
            std::io::Write::write_all(&mut file, &buf[..n])?;
            size += n as u64;
        }
        file.sync_all()?;
        let found = base64::engine::general_purpose::STANDARD.encode(md5.finalize());
        if let Some(expected) = expected {
            anyhow::ensure!(
                found == expected,
                "file {key}: checksum {found}, expected {expected}"
            );
        }
        self.staged.push(key.to_owned());
        Ok(size)
    }

    /// How many files are staged.
    pub fn len(&self) -> usize {
        self.staged.len()
    }

    /// Whether nothing is staged.
    pub fn is_empty(&self) -> bool {
        self.staged.is_empty()
    }

    /// Moves every staged file to its place in the disk service (call after the database
    /// commit).
    ///
    /// # Errors
    /// A move that fails; the files already moved stay.
    pub fn commit(mut self) -> anyhow::Result<()> {
        for key in std::mem::take(&mut self.staged) {
            let to = self
                .disk
                .path_for(&key)
                .ok_or_else(|| anyhow::anyhow!("blob key {key:?}"))?;
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::rename(self.dir.join(&key), &to)?;
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
