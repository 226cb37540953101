//! `hearth import campfire --from DIR`: a Campfire `storage/` directory
//! (`db/production.sqlite3` and the disk service's `files/`) into Hearth, ids kept.

use std::path::Path;

use super::{Counts, Options, Target};

/// Imports the Campfire `storage/` directory `from` into `target`.
///
/// # Errors
/// Not built yet.
pub async fn import(from: &Path, target: &Target, options: Options) -> anyhow::Result<Counts> {
    let _ = (from, target, options);
    anyhow::bail!("hearth import campfire is not built yet")
}
