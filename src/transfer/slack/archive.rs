//! Reading Slack's export zip safely: every entry's name, kind and size is checked before
//! anything is read, and what is read is bounded.
//!
//! The whole export is refused, naming the entry, when any entry
//! - has a name that leaves the export (`../x`, `a/../../x`), is absolute (`/etc/x`, `C:\x`)
//!   or holds a NUL;
//! - is a symbolic link;
//! - says it inflates past [`Limits::max_entry_bytes`], or all of them together past
//!   [`Limits::max_total_bytes`] (a zip bomb);
//! - inflates past either limit while read, whatever its header says.
//!
//! Nothing is ever written out of the zip: JSON files are inflated into memory, one at a time,
//! and parsed. The export's files may sit at the zip's root or inside one folder (a re-zipped
//! export): the folder holding `users.json` is the root.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;

use anyhow::Context as _;
use serde::de::DeserializeOwned;

/// The bounds on what an export inflates to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most one entry may inflate to, in bytes (default 256 MiB: a day of one channel is
    /// kilobytes, `users.json` of 100,000 people about 150 MB).
    pub max_entry_bytes: u64,
    /// The most all entries together may inflate to, in bytes (default 16 GiB).
    pub max_total_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_entry_bytes: 256 << 20,
            max_total_bytes: 16 << 30,
        }
    }
}

/// An export zip whose entries were all checked ([`Archive::open`]).
pub struct Archive {
    zip: zip::ZipArchive<std::io::BufReader<std::fs::File>>,
    limits: Limits,
    /// The folder holding the export (`""`, or `"name/"` for a re-zipped export).
    root: String,
    /// Each file's name under `root`, and its index in the zip.
    files: HashMap<String, usize>,
    /// Each folder under `root` holding day files, with them by date (`2024-01-31` → name).
    folders: HashMap<String, BTreeMap<String, String>>,
    /// Bytes inflated so far.
    inflated: u64,
}

impl std::fmt::Debug for Archive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Archive")
            .field("root", &self.root)
            .field("files", &self.files.len())
            .field("inflated", &self.inflated)
            .finish_non_exhaustive()
    }
}

/// Why an entry's name is refused, if it is: one that would leave the export when unpacked
/// (a `..` part), an absolute one, or one holding a NUL.
pub fn unsafe_name(name: &str) -> Option<&'static str> {
    if name.contains('\0') {
        return Some("holds a NUL byte");
    }
    let bytes = name.as_bytes();
    if name.starts_with('/') || name.starts_with('\\') {
        return Some("is an absolute path");
    }
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        return Some("is an absolute path");
    }
    if name.split(['/', '\\']).any(|part| part == "..") {
        return Some("leaves the export (`..`)");
    }
    None
}

/// Whether `file` is a day file's name: `YYYY-MM-DD.json`.
fn is_day_file(file: &str) -> bool {
    let Some(date) = file.strip_suffix(".json") else {
        return false;
    };
    date.len() == 10
        && date.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        })
}

impl Archive {
    /// Opens the zip at `path` and checks every entry (see the [module docs](self)).
    ///
    /// # Errors
    /// The file cannot be read or is not a zip; an entry is refused (named with the reason);
    /// there is no `users.json` (nor `org_users.json`), or more than one folder holds one.
    pub fn open(path: &Path, limits: Limits) -> anyhow::Result<Self> {
        let file =
            std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))
            .with_context(|| format!("{} is not a zip file", path.display()))?;
        let mut names = Vec::with_capacity(zip.len());
        let mut declared: u64 = 0;
        for i in 0..zip.len() {
            let entry = zip
                .by_index_raw(i)
                .with_context(|| format!("entry {i} of the zip cannot be read"))?;
            let name = entry
                .name()
                .with_context(|| format!("entry {i} of the zip has no readable name"))?
                .into_owned();
            if let Some(why) = unsafe_name(&name) {
                anyhow::bail!("refusing the export: the entry {name:?} {why}");
            }
            if entry.enclosed_name().is_none() {
                anyhow::bail!("refusing the export: the entry {name:?} leaves the export");
            }
            if entry.is_symlink() {
                anyhow::bail!("refusing the export: the entry {name:?} is a symbolic link");
            }
            check_entry_size(&name, entry.size(), limits)?;
            declared = declared.saturating_add(entry.size());
            if declared > limits.max_total_bytes {
                anyhow::bail!(
                    "refusing the export: its entries inflate to more than the limit of {} bytes \
                     (a zip bomb?)",
                    limits.max_total_bytes
                );
            }
            if !entry.is_dir() {
                names.push((name, i));
            }
        }
        let root = find_root(&names)?;
        let mut files = HashMap::new();
        let mut folders: HashMap<String, BTreeMap<String, String>> = HashMap::new();
        for (name, i) in names {
            let Some(rel) = name.strip_prefix(&root) else {
                continue;
            };
            if let Some((folder, file)) = rel.split_once('/') {
                if is_day_file(file) {
                    folders
                        .entry(folder.to_owned())
                        .or_default()
                        .insert(file[..10].to_owned(), rel.to_owned());
                }
            }
            files.insert(rel.to_owned(), i);
        }
        Ok(Self {
            zip,
            limits,
            root,
            files,
            folders,
            inflated: 0,
        })
    }

    /// Whether the export holds the file `name` (relative to its root).
    pub fn has(&self, name: &str) -> bool {
        self.files.contains_key(name)
    }

    /// The day files of the conversation folder `folder`, oldest first (empty when there is no
    /// such folder).
    pub fn day_files(&self, folder: &str) -> Vec<String> {
        self.folders
            .get(folder)
            .map(|days| days.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Whether a conversation folder `folder` exists.
    pub fn has_folder(&self, folder: &str) -> bool {
        self.folders.contains_key(folder)
    }

    /// The folders holding day files, by name.
    pub fn folders(&self) -> Vec<String> {
        let mut all: Vec<String> = self.folders.keys().cloned().collect();
        all.sort();
        all
    }

    /// How many bytes were inflated so far.
    pub fn inflated(&self) -> u64 {
        self.inflated
    }

    /// The file `name` (relative to the root), parsed as JSON of shape `T`.
    ///
    /// # Errors
    /// No such file; it inflates past a limit or cannot be read; it is not valid JSON or not
    /// of that shape (the message names the file, the line and the column).
    pub fn read_json<T: DeserializeOwned>(&mut self, name: &str) -> anyhow::Result<T> {
        let bytes = self.read(name)?;
        serde_json::from_slice(&bytes).map_err(|e| {
            let what = if e.is_syntax() || e.is_eof() {
                "invalid JSON"
            } else {
                "unexpected JSON"
            };
            anyhow::anyhow!("{}{name}: {what}: {e}", self.root)
        })
    }

    /// [`Archive::read_json`] of a file that may be missing (None then).
    ///
    /// # Errors
    /// As [`Archive::read_json`].
    pub fn read_optional_json<T: DeserializeOwned>(
        &mut self,
        name: &str,
    ) -> anyhow::Result<Option<T>> {
        if self.has(name) {
            self.read_json(name).map(Some)
        } else {
            Ok(None)
        }
    }

    /// The inflated bytes of `name`, bounded by the limits whatever its header says.
    fn read(&mut self, name: &str) -> anyhow::Result<Vec<u8>> {
        let full = format!("{}{name}", self.root);
        let &i = self
            .files
            .get(name)
            .ok_or_else(|| anyhow::anyhow!("the export has no {full}"))?;
        let entry = self
            .zip
            .by_index(i)
            .with_context(|| format!("{full} cannot be read"))?;
        let left = self.limits.max_total_bytes.saturating_sub(self.inflated);
        let bound = self.limits.max_entry_bytes.min(left);
        let capacity = usize::try_from(entry.size().min(bound)).unwrap_or(0);
        let mut bytes = Vec::with_capacity(capacity);
        entry
            .take(bound.saturating_add(1))
            .read_to_end(&mut bytes)
            .with_context(|| format!("{full} cannot be read"))?;
        let n = bytes.len() as u64;
        if n > self.limits.max_entry_bytes {
            anyhow::bail!(
                "refusing the export: {full} inflates past the limit of {} bytes (a zip bomb?)",
                self.limits.max_entry_bytes
            );
        }
        if n > left {
            anyhow::bail!(
                "refusing the export: it inflates past the limit of {} bytes (a zip bomb?)",
                self.limits.max_total_bytes
            );
        }
        self.inflated += n;
        Ok(bytes)
    }
}

/// Refuses an entry whose header says it inflates past the limit for one entry.
fn check_entry_size(name: &str, size: u64, limits: Limits) -> anyhow::Result<()> {
    if size > limits.max_entry_bytes {
        anyhow::bail!(
            "refusing the export: the entry {name:?} inflates to {size} bytes, past the limit of \
             {} bytes (a zip bomb?)",
            limits.max_entry_bytes
        );
    }
    Ok(())
}

/// The folder holding `users.json` (or `org_users.json`): `""` at the root, else `"dir/"`.
fn find_root(names: &[(String, usize)]) -> anyhow::Result<String> {
    let mut roots: Vec<&str> = names
        .iter()
        .filter_map(|(name, _)| {
            let (dir, file) = name.rsplit_once('/').unwrap_or(("", name));
            (file == "users.json" || file == "org_users.json").then_some(dir)
        })
        .filter(|dir| !dir.contains('/'))
        .collect();
    roots.sort_unstable();
    roots.dedup();
    match roots.as_slice() {
        [] => anyhow::bail!(
            "the export has no users.json: this is not a Slack workspace export (Slack's export \
             page gives a zip with users.json, channels.json and a folder per channel)"
        ),
        [""] => Ok(String::new()),
        [dir] => Ok(format!("{dir}/")),
        _ => anyhow::bail!(
            "the zip holds several exports (users.json in {}); import one at a time",
            roots.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_leave_the_export_are_refused() {
        for bad in [
            "../x",
            "a/../../x",
            "a/..",
            "/etc/passwd",
            "\\x",
            "C:\\x",
            "c:/x",
            "a\0b",
            "..\\x",
        ] {
            assert!(unsafe_name(bad).is_some(), "{bad:?}");
        }
        for good in ["users.json", "general/2024-01-01.json", "a..b/c", "x/.../y"] {
            assert_eq!(unsafe_name(good), None, "{good:?}");
        }
    }

    /// A zip of `entries` (deflated, without zip64) in a new temporary file.
    fn zip_file(tag: &str, entries: &[(&str, &[u8])]) -> std::path::PathBuf {
        use std::io::Write as _;
        let path = std::env::temp_dir().join(format!(
            "hearth-slack-archive-{tag}-{}.zip",
            std::process::id()
        ));
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, bytes) in entries {
            zip.start_file(*name, options).unwrap();
            zip.write_all(bytes).unwrap();
        }
        zip.finish().unwrap();
        path
    }

    #[test]
    fn an_entry_that_inflates_past_what_its_header_says_is_bounded() {
        let zeros = vec![0u8; 1 << 20];
        let path = zip_file(
            "lying",
            &[("users.json", b"[]"), ("general/2024-01-01.json", &zeros)],
        );
        // The headers (local and central) say the day file inflates to 10 bytes.
        let mut bytes = std::fs::read(&path).unwrap();
        let size = (1u32 << 20).to_le_bytes();
        let mut patched = 0;
        for (signature, offset) in [(0x0403_4b50u32, 22), (0x0201_4b50, 24)] {
            let sig = signature.to_le_bytes();
            for at in 0..bytes.len() - 4 {
                if bytes[at..at + 4] == sig && bytes[at + offset..at + offset + 4] == size {
                    bytes[at + offset..at + offset + 4].copy_from_slice(&10u32.to_le_bytes());
                    patched += 1;
                }
            }
        }
        assert_eq!(patched, 2);
        std::fs::write(&path, &bytes).unwrap();
        let limits = Limits {
            max_entry_bytes: 4096,
            max_total_bytes: 1 << 30,
        };
        let mut archive = Archive::open(&path, limits).expect("the headers look small");
        let read = archive.read_json::<serde_json::Value>("general/2024-01-01.json");
        assert!(read.is_err(), "{read:?}");
        assert!(archive.inflated() <= 4096, "{}", archive.inflated());
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn declared_sizes_are_bounded_before_anything_is_read() {
        let big = vec![b' '; 5000];
        let path = zip_file(
            "declared",
            &[("users.json", b"[]"), ("a/2024-01-01.json", &big)],
        );
        let limits = |entry, total| Limits {
            max_entry_bytes: entry,
            max_total_bytes: total,
        };
        let one = Archive::open(&path, limits(4096, 1 << 20))
            .unwrap_err()
            .to_string();
        assert!(
            one.contains("\"a/2024-01-01.json\" inflates to 5000 bytes"),
            "{one}"
        );
        let all = Archive::open(&path, limits(1 << 20, 4096))
            .unwrap_err()
            .to_string();
        assert!(all.contains("more than the limit of 4096 bytes"), "{all}");
        assert!(Archive::open(&path, limits(8192, 8192)).is_ok());
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn day_files_are_dated_json() {
        assert!(is_day_file("2024-01-31.json"));
        assert!(!is_day_file("2024-1-31.json"));
        assert!(!is_day_file("2024-01-31.txt"));
        assert!(!is_day_file("channels.json"));
    }

    #[test]
    fn the_root_is_the_folder_of_users_json() {
        let n = |names: &[&str]| {
            names
                .iter()
                .enumerate()
                .map(|(i, s)| ((*s).to_owned(), i))
                .collect::<Vec<_>>()
        };
        assert_eq!(find_root(&n(&["users.json", "a/b.json"])).unwrap(), "");
        assert_eq!(
            find_root(&n(&["exp/users.json", "exp/c.json"])).unwrap(),
            "exp/"
        );
        assert_eq!(find_root(&n(&["org_users.json"])).unwrap(), "");
        let missing = find_root(&n(&["channels.json"])).unwrap_err().to_string();
        assert!(missing.contains("no users.json"), "{missing}");
        assert!(find_root(&n(&["a/users.json", "b/users.json"])).is_err());
    }
}
