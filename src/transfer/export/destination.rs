//! The export's target directory: refused unless it is missing or empty, written as a hidden
//! sibling (`.<name>.export-<pid>`, readable by its owner only) and renamed into place only once everything in it is
//! written and verified. Dropped before [`Staged::finish`] (an error, Ctrl-C), the sibling is
//! removed: the target is never half-written.

use std::path::{Path, PathBuf};

/// Fails unless `to` is missing or an empty directory (not a symbolic link to one: the
/// finished export is renamed onto `to`, which a link would refuse only after all the work).
///
/// # Errors
/// `to` is a symbolic link, a file, or a directory with something in it, or cannot be read.
pub fn check(to: &Path) -> anyhow::Result<()> {
    if std::fs::symlink_metadata(to).is_ok_and(|m| m.file_type().is_symlink()) {
        anyhow::bail!(
            "{} is a symbolic link: name the directory it leads to (missing or empty) instead",
            to.display()
        );
    }
    match std::fs::metadata(to) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(anyhow::anyhow!("{}: {e}", to.display())),
        Ok(meta) if !meta.is_dir() => anyhow::bail!(
            "{} exists and is not a directory: an export goes to a missing or empty directory",
            to.display()
        ),
        Ok(_) => {
            anyhow::ensure!(
                std::fs::read_dir(to)?.next().is_none(),
                "{} is not empty: an export goes to a missing or empty directory, \
                 so that nothing there is overwritten",
                to.display()
            );
            Ok(())
        }
    }
}

/// The hidden sibling the export is written into.
#[derive(Debug)]
pub struct Staged {
    dir: PathBuf,
    to: PathBuf,
    done: bool,
}

impl Staged {
    /// Creates the sibling of `to` (and `to`'s parent when missing).
    ///
    /// # Errors
    /// `to` names no directory (`/`, `..`), or the sibling cannot be created.
    pub fn new(to: &Path) -> anyhow::Result<Self> {
        let name = to
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| anyhow::anyhow!("{}: name the directory to create", to.display()))?;
        let parent = match to.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent)?;
        let dir = parent.join(format!(".{name}.export-{}", std::process::id()));
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        // Readable by its owner only, as a backup is: the export holds every password digest,
        // session and bot token, push key and file of the team.
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(&dir)
            .map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
        Ok(Self {
            dir,
            to: to.to_path_buf(),
            done: false,
        })
    }

    /// The directory being written.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Moves the written directory to the target (which must still be missing or empty).
    ///
    /// # Errors
    /// The target was filled meanwhile, or the rename fails; the sibling is then removed.
    pub fn finish(mut self) -> anyhow::Result<()> {
        check(&self.to)?;
        std::fs::rename(&self.dir, &self.to).map_err(|e| {
            anyhow::anyhow!(
                "moving {} to {}: {e}",
                self.dir.display(),
                self.to.display()
            )
        })?;
        self.done = true;
        if let Some(parent) = self.to.parent().filter(|p| !p.as_os_str().is_empty()) {
            if let Ok(dir) = std::fs::File::open(parent) {
                let _ = dir.sync_all();
            }
        }
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "hearth-export-dest-{tag}-{}-{:x}",
            std::process::id(),
            rand::random::<u64>()
        ));
        std::fs::create_dir_all(&dir).expect("scratch");
        dir
    }

    #[test]
    fn only_a_missing_or_empty_directory_is_a_target() {
        let base = scratch("check");
        assert!(check(&base.join("missing")).is_ok());
        assert!(check(&base).is_ok(), "empty");
        std::fs::write(base.join("file"), b"x").expect("write");
        assert!(check(&base).unwrap_err().to_string().contains("not empty"));
        assert!(check(&base.join("file"))
            .unwrap_err()
            .to_string()
            .contains("not a directory"));
        std::fs::remove_dir_all(&base).expect("clean");
    }

    #[test]
    fn a_dropped_stage_leaves_nothing_and_a_finished_one_is_the_target() {
        let base = scratch("stage");
        let to = base.join("storage");
        let staged = Staged::new(&to).expect("stage");
        std::fs::write(staged.path().join("half"), b"x").expect("write");
        drop(staged);
        assert_eq!(std::fs::read_dir(&base).expect("list").count(), 0);
        std::fs::create_dir(&to).expect("an empty target");
        let staged = Staged::new(&to).expect("stage");
        std::fs::write(staged.path().join("whole"), b"x").expect("write");
        staged.finish().expect("finish");
        assert!(to.join("whole").exists());
        assert_eq!(std::fs::read_dir(&base).expect("list").count(), 1);
        std::fs::remove_dir_all(&base).expect("clean");
    }
}
