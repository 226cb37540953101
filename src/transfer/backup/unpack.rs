//! Restoring a verified backup: every entry staged beside its place (the database beside the
//! target's, the secrets in the data directory, the files under the disk service's `tmp/`),
//! checked again as it is written, then moved into place by [`Staged::commit`], the database
//! last: until its rename, the target's database is the one it was.

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use super::hashing::Hashing;
use super::manifest::{Entry, Manifest};
use super::verify::expected_digests;
use crate::transfer::{Progress, Staging};

/// A file written beside its final place, removed when dropped unless moved there.
#[derive(Debug)]
struct StagedFile {
    staged: PathBuf,
    to: PathBuf,
    moved: bool,
}

impl StagedFile {
    /// A staged name for `to`: `.<name>.restore-<pid>` in the same directory (same file system,
    /// so the move is a rename).
    fn beside(to: &Path) -> anyhow::Result<Self> {
        let name = to
            .file_name()
            .ok_or_else(|| anyhow::anyhow!("{} names no file", to.display()))?;
        let mut staged = std::ffi::OsString::from(".");
        staged.push(name);
        staged.push(format!(".restore-{}", std::process::id()));
        Ok(Self {
            staged: to.with_file_name(staged),
            to: to.to_path_buf(),
            moved: false,
        })
    }

    fn commit(mut self) -> std::io::Result<()> {
        std::fs::rename(&self.staged, &self.to)?;
        self.moved = true;
        Ok(())
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if !self.moved {
            super::snapshot::remove_with_journals(&self.staged);
        }
    }
}

/// Everything of a backup written beside its place.
#[derive(Debug)]
pub struct Staged {
    database: StagedFile,
    state: Vec<StagedFile>,
    files: Staging,
}

impl Staged {
    /// The staged database (for its checks before the commit).
    pub fn database(&self) -> &Path {
        &self.database.staged
    }

    /// Moves the files, then the secrets, then the database into place, and syncs the
    /// database's directory. The target's `-wal` and `-shm` (left by no one: see
    /// `super::in_use`) are removed just before the database's rename.
    ///
    /// # Errors
    /// A move that fails; the database is then still the target's own.
    pub fn commit(self) -> anyhow::Result<()> {
        let Self {
            database,
            state,
            files,
        } = self;
        files.commit()?;
        for secret in state {
            secret.commit()?;
        }
        for suffix in ["-wal", "-shm"] {
            let mut journal = database.to.as_os_str().to_owned();
            journal.push(suffix);
            match std::fs::remove_file(PathBuf::from(journal)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                _ => {}
            }
        }
        let dir = database.to.parent().map(Path::to_path_buf);
        database.commit()?;
        if let Some(dir) = dir.filter(|d| !d.as_os_str().is_empty()) {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    }
}

/// Where a restore writes: the database file, the disk service's root, the data directory.
#[derive(Debug, Clone, Copy)]
pub struct Places<'a> {
    /// The database file.
    pub database: &'a Path,
    /// The disk service's root.
    pub storage_root: &'a Path,
    /// The data directory (the secrets).
    pub data_dir: &'a Path,
}

/// Reads the backup at `from` again and stages every entry `manifest` lists, each checked
/// against it as it is written.
///
/// # Errors
/// A directory or file that cannot be written, or an entry that no longer matches the manifest
/// (the file changed since it was verified); everything staged is removed.
pub fn stage(
    from: &Path,
    manifest: &Manifest,
    places: Places<'_>,
    show_progress: bool,
) -> anyhow::Result<Staged> {
    for dir in [places.database.parent(), Some(places.data_dir)]
        .into_iter()
        .flatten()
        .filter(|d| !d.as_os_str().is_empty())
    {
        std::fs::create_dir_all(dir)?;
    }
    let expected = expected_digests(manifest);
    let mut staged = Staged {
        database: StagedFile::beside(places.database)?,
        state: Vec::new(),
        files: Staging::new(places.storage_root)?,
    };
    let mut progress = Progress::new("restore", manifest.total_bytes(), show_progress);
    let file = std::fs::File::open(from)?;
    let mut archive = tar::Archive::new(BufReader::with_capacity(1 << 20, file));
    let mut done = 0usize;
    for entry in archive.entries()? {
        let mut entry = entry?;
        let kind = Entry::of(&entry.path_bytes())?;
        if kind == Entry::Manifest {
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes)?;
            anyhow::ensure!(
                Manifest::parse(&bytes)? == *manifest,
                "the backup changed while it was restored"
            );
            continue;
        }
        let (size, digest) = expected
            .get(&kind)
            .ok_or_else(|| anyhow::anyhow!("the backup changed: {} is new", kind.name()))?;
        stage_entry(
            &mut staged,
            places,
            &kind,
            &mut entry,
            (*size, digest),
            &mut progress,
        )?;
        done += 1;
    }
    progress.finish();
    anyhow::ensure!(
        done == expected.len(),
        "the backup changed while it was restored"
    );
    Ok(staged)
}

/// Stages one entry, checking its size and digest.
fn stage_entry(
    staged: &mut Staged,
    places: Places<'_>,
    kind: &Entry,
    reader: &mut impl Read,
    (size, digest): (u64, &str),
    progress: &mut Progress,
) -> anyhow::Result<()> {
    let written = match kind {
        Entry::File(key) => {
            let counted = Hashing::<_, md5::Md5>::new(reader, Some(progress));
            staged.files.stage_reader(key, counted, Some(digest))?
        }
        Entry::Database => write_sealed(&staged.database.staged, reader, digest, progress)?,
        Entry::State(name) => {
            let secret = StagedFile::beside(&places.data_dir.join(name))?;
            let written = write_sealed(&secret.staged, reader, digest, progress)?;
            staged.state.push(secret);
            written
        }
        Entry::Manifest => 0,
    };
    anyhow::ensure!(
        written == size,
        "the backup changed while it was restored: {} has {written} bytes",
        kind.name()
    );
    Ok(())
}

/// Writes `reader` into the new file `path` (readable by its owner only), synced, checking its
/// SHA-256 is `sha256`; returns its size.
fn write_sealed(
    path: &Path,
    reader: &mut impl Read,
    sha256: &str,
    progress: &mut Progress,
) -> anyhow::Result<u64> {
    super::snapshot::remove_with_journals(path);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    let mut hashing = Hashing::<_, sha2::Sha256>::new(reader, Some(progress));
    std::io::copy(&mut hashing, &mut file)?;
    file.sync_all()?;
    let (size, found) = hashing.hex();
    anyhow::ensure!(
        found == sha256,
        "{}: checksum {found}, the manifest says {sha256}",
        path.display()
    );
    Ok(size)
}
