//! `hearth backup --to FILE` and `hearth restore --from FILE`: a consistent snapshot of the
//! database and the files, taken while the server runs.

use std::path::Path;

use super::{Counts, Options, Target};

/// Writes a backup of `source` to `to`.
///
/// # Errors
/// Not built yet.
pub async fn backup(source: &Target, to: &Path, options: Options) -> anyhow::Result<Counts> {
    let _ = (source, to, options);
    anyhow::bail!("hearth backup is not built yet")
}

/// Restores the backup `from` into `target`.
///
/// # Errors
/// Not built yet.
pub async fn restore(from: &Path, target: &Target, options: Options) -> anyhow::Result<Counts> {
    let _ = (from, target, options);
    anyhow::bail!("hearth restore is not built yet")
}
