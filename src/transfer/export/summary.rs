//! What the export prints at its end: each table's rows in Hearth and in the export side by
//! side, the files and bytes copied with how many checksums were verified, and notes on what
//! was not copied as it was.

use std::fmt::Write as _;

use super::database::Compared;
use super::files::{BlobFile, Copied};

/// The table of counts, one line per table, then `files` and `bytes`, then the notes.
pub fn render(compared: &[Compared], blobs: &[BlobFile], copied: &Copied) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "  {:<32}{:>12}{:>12}", "table", "Hearth", "export");
    for line in compared {
        let mark = if line.hearth == line.campfire {
            ""
        } else {
            "  DIFFERS"
        };
        let _ = writeln!(
            out,
            "  {:<32}{:>12}{:>12}{mark}",
            line.table, line.hearth, line.campfire
        );
    }
    let bytes: u64 = blobs.iter().map(|b| b.byte_size).sum();
    let _ = writeln!(
        out,
        "  {:<32}{:>12}{:>12}  ({} checksums verified against their blobs, {} sizes)",
        "files",
        blobs.len(),
        copied.files,
        copied.checksums,
        copied.files
    );
    let _ = writeln!(out, "  {:<32}{:>12}{:>12}", "bytes", bytes, copied.bytes);
    if !copied.unattached_without_file.is_empty() {
        let _ = writeln!(
            out,
            "  note: {} blob(s) that nothing is attached to have no file (an upload never \
             finished), their rows are kept: ids {:?}",
            copied.unattached_without_file.len(),
            copied.unattached_without_file
        );
    }
    if copied.from_s3 > 0 {
        let _ = writeln!(
            out,
            "  note: {} file(s) were read from the S3 bucket; in the export they are on the \
             disk service (`local`)",
            copied.from_s3
        );
    }
    out
}

/// The first table whose counts differ, as an error message.
pub fn mismatch(compared: &[Compared]) -> Option<String> {
    compared.iter().find(|c| c.hearth != c.campfire).map(|c| {
        format!(
            "{}: Hearth has {} rows, the export {}",
            c.table, c.hearth, c.campfire
        )
    })
}
