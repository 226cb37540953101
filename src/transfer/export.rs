//! `hearth export --to DIR`: Hearth's team as the `storage/` directory Campfire reads.

use std::path::Path;

use super::{Counts, Options, Target};

/// Exports `source` into the directory `to`.
///
/// # Errors
/// Not built yet.
pub async fn export(source: &Target, to: &Path, options: Options) -> anyhow::Result<Counts> {
    let _ = (source, to, options);
    anyhow::bail!("hearth export is not built yet")
}
