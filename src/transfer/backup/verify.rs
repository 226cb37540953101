//! Reading a backup through before anything is written: every entry's name, type, size and
//! digest against the manifest. Nothing is written anywhere; the first problem found is the
//! error.

use std::collections::BTreeMap;
use std::io::{BufReader, Read};
use std::path::Path;

use super::hashing::Hashing;
use super::manifest::{self, Entry, Manifest};
use crate::transfer::Progress;

/// An entry as read: its size and digest (SHA-256 hex for the database and the secrets,
/// base64 MD5 for a blob's file).
type Seen = BTreeMap<Entry, (u64, String)>;

/// Reads the backup at `path` whole and returns its manifest once every entry matches it.
///
/// # Errors
/// The file cannot be read; it is not a tar archive or is cut short (an entry shorter than its
/// header says, or no manifest); an entry of a name, type or size the format does not allow, or
/// twice; a manifest refused by [`Manifest::parse`]; an entry the manifest does not list, or
/// one it lists that is missing; a size or digest other than the manifest's.
pub fn verify(path: &Path, show_progress: bool) -> anyhow::Result<Manifest> {
    let file = std::fs::File::open(path)
        .map_err(|e| anyhow::anyhow!("opening {}: {e}", path.display()))?;
    let total = file.metadata()?.len();
    let mut progress = Progress::new("verify", total, show_progress);
    let mut archive = tar::Archive::new(BufReader::with_capacity(1 << 20, file));
    let mut seen = Seen::new();
    let mut manifest_bytes: Option<Vec<u8>> = None;
    for entry in archive.entries().map_err(|e| not_tar(&e))? {
        let mut entry = entry.map_err(|e| not_tar(&e))?;
        let kind = Entry::of(&entry.path_bytes())?;
        anyhow::ensure!(
            entry.header().entry_type() == tar::EntryType::Regular,
            "entry {} is not a regular file",
            kind.name()
        );
        let size = entry.size();
        anyhow::ensure!(
            kind != Entry::Manifest || size <= manifest::MANIFEST_MAX_BYTES,
            "manifest.json is {size} bytes, more than a manifest can be"
        );
        let duplicate =
            seen.contains_key(&kind) || (kind == Entry::Manifest && manifest_bytes.is_some());
        anyhow::ensure!(!duplicate, "entry {} appears twice", kind.name());
        let (read, digest) = read_entry(&mut entry, &kind, &mut progress, &mut manifest_bytes)?;
        anyhow::ensure!(
            read == size,
            "the backup is cut short: entry {} holds {read} of its {size} bytes",
            kind.name()
        );
        if kind != Entry::Manifest {
            seen.insert(kind, (read, digest));
        }
    }
    progress.finish();
    let bytes = manifest_bytes.ok_or_else(|| {
        anyhow::anyhow!("the backup has no manifest.json: it is cut short, or not a Hearth backup")
    })?;
    let manifest = Manifest::parse(&bytes)?;
    matches(&manifest, &seen)?;
    Ok(manifest)
}

fn not_tar(e: &std::io::Error) -> anyhow::Error {
    anyhow::anyhow!("the backup is not a whole tar archive: {e}")
}

/// Reads one entry to its end: the manifest into `manifest`, anything else through its digest.
fn read_entry(
    reader: &mut impl Read,
    kind: &Entry,
    progress: &mut Progress,
    manifest: &mut Option<Vec<u8>>,
) -> anyhow::Result<(u64, String)> {
    Ok(match kind {
        Entry::Manifest => {
            let mut bytes = Vec::new();
            reader.read_to_end(&mut bytes)?;
            progress.inc(bytes.len() as u64);
            let read = bytes.len() as u64;
            *manifest = Some(bytes);
            (read, String::new())
        }
        Entry::File(_) => {
            let mut hashing = Hashing::<_, md5::Md5>::new(reader, Some(progress));
            hashing.drain()?;
            hashing.base64()
        }
        Entry::Database | Entry::State(_) => {
            let mut hashing = Hashing::<_, sha2::Sha256>::new(reader, Some(progress));
            hashing.drain()?;
            hashing.hex()
        }
    })
}

/// Every entry the manifest lists is there with its size and digest, and nothing else is.
fn matches(manifest: &Manifest, seen: &Seen) -> anyhow::Result<()> {
    let expected = expected_digests(manifest);
    for (entry, (size, digest)) in &expected {
        let Some((found_size, found)) = seen.get(entry) else {
            anyhow::bail!(
                "the backup lacks {}, which its manifest lists",
                entry.name()
            );
        };
        anyhow::ensure!(
            found_size == size,
            "{}: {found_size} bytes, the manifest says {size}",
            entry.name()
        );
        anyhow::ensure!(
            found == digest,
            "{}: checksum {found}, the manifest says {digest}",
            entry.name()
        );
    }
    if let Some(extra) = seen.keys().find(|e| !expected.contains_key(e)) {
        anyhow::bail!(
            "the backup holds {}, which its manifest does not list",
            extra.name()
        );
    }
    Ok(())
}

/// What the manifest says each entry must be: its size and digest.
pub fn expected_digests(manifest: &Manifest) -> BTreeMap<Entry, (u64, String)> {
    let mut expected = BTreeMap::new();
    let db = &manifest.database;
    expected.insert(Entry::Database, (db.size, db.sha256.clone()));
    for s in &manifest.state {
        expected.insert(Entry::State(s.name.clone()), (s.size, s.sha256.clone()));
    }
    for f in &manifest.files {
        expected.insert(Entry::File(f.key.clone()), (f.size, f.checksum.clone()));
    }
    expected
}
