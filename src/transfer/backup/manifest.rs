//! The manifest of a backup file (`manifest.json`, the archive's last entry) and the names of
//! the archive's entries.
//!
//! A backup is a tar archive (POSIX ustar/GNU, uncompressed) of, in this order:
//!
//! | entry | what |
//! |---|---|
//! | `database.sqlite3` | the snapshot of Hearth's SQLite database |
//! | `state/secret_key_base`, `state/vapid_private_key` | the data directory's generated secrets, when present |
//! | `files/<key>` | each blob's file of the disk service, by its Active Storage key |
//! | `manifest.json` | this manifest: what every other entry must be |
//!
//! Nothing else may appear: an entry of any other name (`../x`, `/etc/x`, `files/a/b`) or
//! type (a link, a directory) is refused by [`Entry::of`].

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

/// The `format` of every Hearth backup's manifest.
pub const FORMAT: &str = "hearth-backup";

/// The version of the archive's layout and manifest this Hearth writes and reads. A manifest
/// of any other version is refused with the version it found.
pub const FORMAT_VERSION: u64 = 1;

/// The manifest's entry name.
pub const MANIFEST: &str = "manifest.json";

/// The database snapshot's entry name.
pub const DATABASE: &str = "database.sqlite3";

/// The folder of the blobs' files: `files/<key>`.
const FILES: &str = "files/";

/// The folder of the data directory's secrets: `state/<name>`.
const STATE: &str = "state/";

/// The data directory's files a backup carries (`hearth serve` generates them when no
/// `SECRET_KEY_BASE` or `VAPID_PRIVATE_KEY` is given): without the same secret, a restored
/// server signs everyone out and its mention chips no longer verify; without the same VAPID
/// key, push subscriptions stop working.
pub const STATE_FILES: [&str; 2] = ["secret_key_base", "vapid_private_key"];

/// The longest manifest read, in bytes (a million files take about 150 MB).
pub const MANIFEST_MAX_BYTES: u64 = 1 << 30;

/// What a backup holds; the JSON of `manifest.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`FORMAT_VERSION`] when written.
    pub format_version: u64,
    /// The version of the Hearth that wrote it (`CARGO_PKG_VERSION`).
    pub hearth_version: String,
    /// When the snapshot was taken, ISO 8601 UTC with milliseconds.
    pub created_at: String,
    /// The newest migration applied in the snapshot (`_sqlx_migrations.version`).
    pub schema_version: i64,
    /// The database snapshot.
    pub database: Sealed,
    /// Rows per table of the snapshot (FTS5's own tables left out).
    pub counts: BTreeMap<String, u64>,
    /// The data directory's secrets carried ([`STATE_FILES`]).
    pub state: Vec<Sealed>,
    /// Every file of the disk service the snapshot's `active_storage_blobs` lists and the
    /// disk held.
    pub files: Vec<File>,
    /// Blobs of the disk service whose file was not on disk when it was read.
    pub missing: Vec<Missing>,
    /// Blobs of another service (S3): their files stay in the bucket and are not in the backup.
    pub elsewhere: u64,
}

/// A file of the archive named and sealed by its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sealed {
    /// Its entry name (the database) or its name in the data directory (a secret).
    pub name: String,
    /// Bytes.
    pub size: u64,
    /// SHA-256, lowercase hex.
    pub sha256: String,
}

/// A blob's file: `files/<key>` in the archive, `<root>/ab/cd/<key>` on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct File {
    /// Active Storage's `key`.
    pub key: String,
    /// Bytes.
    pub size: u64,
    /// Base64 of the MD5 of the bytes, as Active Storage's `checksum` column.
    pub checksum: String,
}

/// A blob listed in the snapshot whose file the disk service did not have.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Missing {
    /// Active Storage's `key`.
    pub key: String,
    /// Whether a record used it (an attachment row). An unattached one is most often a
    /// direct upload whose bytes had not arrived yet (its row is made first).
    pub attached: bool,
}

/// What an archive entry is, by its name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Entry {
    /// `manifest.json`.
    Manifest,
    /// `database.sqlite3`.
    Database,
    /// `state/<name>`, one of [`STATE_FILES`].
    State(String),
    /// `files/<key>`.
    File(String),
}

impl Entry {
    /// The entry named `name` (raw bytes of the tar header's path).
    ///
    /// # Errors
    /// Any other name: not UTF-8, absolute, with `..`, a folder, an unknown secret, a file
    /// name that is not a blob key.
    pub fn of(name: &[u8]) -> anyhow::Result<Self> {
        let text = std::str::from_utf8(name).map_err(|_| {
            anyhow::anyhow!("entry {:?} is not UTF-8", String::from_utf8_lossy(name))
        })?;
        let entry = match text {
            MANIFEST => Some(Self::Manifest),
            DATABASE => Some(Self::Database),
            _ => match (text.strip_prefix(STATE), text.strip_prefix(FILES)) {
                (Some(state), _) if STATE_FILES.contains(&state) => {
                    Some(Self::State(state.to_owned()))
                }
                (_, Some(key)) if crate::storage::disk::valid_key(key) => {
                    Some(Self::File(key.to_owned()))
                }
                _ => None,
            },
        };
        entry.ok_or_else(|| anyhow::anyhow!("entry {text:?} is not one a Hearth backup holds"))
    }

    /// Its name in the archive.
    pub fn name(&self) -> String {
        match self {
            Self::Manifest => MANIFEST.to_owned(),
            Self::Database => DATABASE.to_owned(),
            Self::State(name) => format!("{STATE}{name}"),
            Self::File(key) => format!("{FILES}{key}"),
        }
    }
}

impl Manifest {
    /// Reads a manifest: its `format` and `format_version` first (so a newer layout is named by
    /// its version, not by a field this Hearth does not know), then the rest, then [`Self::check`].
    ///
    /// # Errors
    /// Not JSON, not a Hearth backup's, another format version, a field missing or of the wrong
    /// type, or what [`Self::check`] refuses.
    pub fn parse(bytes: &[u8]) -> anyhow::Result<Self> {
        let value: serde_json::Value =
            serde_json::from_slice(bytes).context("manifest.json is not JSON")?;
        let format = value.get("format").and_then(serde_json::Value::as_str);
        anyhow::ensure!(
            format == Some(FORMAT),
            "manifest.json is not a Hearth backup's (format {format:?}, expected {FORMAT:?})"
        );
        let version = value
            .get("format_version")
            .and_then(serde_json::Value::as_u64);
        anyhow::ensure!(
            version == Some(FORMAT_VERSION),
            "the backup's format version is {}; this Hearth reads version {FORMAT_VERSION} only",
            value
                .get("format_version")
                .map_or("missing".to_owned(), ToString::to_string)
        );
        let manifest: Self = serde_json::from_value(value).context("manifest.json")?;
        manifest.check()?;
        Ok(manifest)
    }

    /// Checks every name the manifest gives: the database's is [`DATABASE`], each secret's one
    /// of [`STATE_FILES`], each file's and missing file's a blob key (so no path leaves the
    /// target: no `/`, no `..`), none twice.
    ///
    /// # Errors
    /// The first name refused, quoted.
    pub fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.database.name == DATABASE,
            "the manifest names the database {:?}; a Hearth backup's is {DATABASE:?}",
            self.database.name
        );
        let mut seen = BTreeSet::new();
        for state in &self.state {
            anyhow::ensure!(
                STATE_FILES.contains(&state.name.as_str()),
                "the manifest names the state file {:?}, which is not one of {STATE_FILES:?}",
                state.name
            );
            anyhow::ensure!(
                seen.insert(&state.name),
                "the manifest names {:?} twice",
                state.name
            );
        }
        let keys = self.files.iter().map(|f| &f.key);
        for key in keys.chain(self.missing.iter().map(|m| &m.key)) {
            anyhow::ensure!(
                crate::storage::disk::valid_key(key),
                "the manifest names the file {key:?}, which is not an Active Storage key"
            );
            anyhow::ensure!(
                seen.insert(key),
                "the manifest names the file {key:?} twice"
            );
        }
        Ok(())
    }

    /// Every entry the archive must hold besides the manifest, with its size.
    pub fn entries(&self) -> BTreeMap<Entry, u64> {
        let mut entries = BTreeMap::new();
        entries.insert(Entry::Database, self.database.size);
        for state in &self.state {
            entries.insert(Entry::State(state.name.clone()), state.size);
        }
        for file in &self.files {
            entries.insert(Entry::File(file.key.clone()), file.size);
        }
        entries
    }

    /// The bytes of every entry but the manifest.
    pub fn total_bytes(&self) -> u64 {
        self.entries().values().sum()
    }
}
