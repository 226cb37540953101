//! `hearth import slack --from EXPORT.zip`: Slack's workspace export into Hearth.

pub mod archive;
pub mod emoji;
pub mod mrkdwn;
pub mod people;
pub mod rooms;
pub mod shapes;
pub mod threads;

use std::path::Path;

use super::{Counts, Options, Target};

/// Imports the Slack export `from` into `target`.
///
/// # Errors
/// Not built yet.
pub async fn import(from: &Path, target: &Target, options: Options) -> anyhow::Result<Counts> {
    let _ = (from, target, options);
    anyhow::bail!("hearth import slack is not built yet")
}
