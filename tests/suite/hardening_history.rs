//! Hostile input to the history commands (`hearth import campfire|slack`, `export`, `backup`,
//! `restore`), as an attacker who hands an administrator a crafted file, or a careless
//! administrator, would give it: each case is refused with a message naming the problem, and
//! nothing of it lands in Hearth's storage.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use crate::common::child::hearth_command;
use crate::common::temp_dir;
use crate::import_campfire::Campfire;

/// What the hostile cases need of the fixture besides building it.
trait Hostile {
    fn key(&self, blob: &str) -> String;
    fn sql(&self, sql: &str, params: impl rusqlite::Params);
}

impl Hostile for Campfire {
    fn key(&self, blob: &str) -> String {
        self.facts["blobs"][blob].as_str().unwrap().to_owned()
    }

    fn sql(&self, sql: &str, params: impl rusqlite::Params) {
        rusqlite::Connection::open(self.dir.join("db").join("production.sqlite3"))
            .unwrap()
            .execute(sql, params)
            .unwrap();
    }
}

/// `hearth import campfire --from <from>` into `<target>/hearth.sqlite3`, killed after
/// `limit` (a read that never ends must not hang the test run).
async fn import_campfire(from: &Path, target: &Path, limit: Duration) -> Option<Output> {
    let mut command = hearth_command();
    command
        .args(["import", "campfire", "--from"])
        .arg(from)
        .arg("--database")
        .arg(target.join("hearth.sqlite3"))
        .arg("--data-dir")
        .arg(target)
        .arg("--quiet")
        .env_remove("HEARTH_DATABASE")
        .env_remove("HEARTH_DATA_DIR")
        .env_remove("HEARTH_STORAGE_ROOT")
        .kill_on_drop(true);
    tokio::time::timeout(limit, command.output())
        .await
        .ok()
        .map(|o| o.expect("hearth runs"))
}

/// Every file under `dir` whose bytes contain `needle`.
fn files_holding(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            found.extend(files_holding(&entry.path(), needle));
        } else if kind.is_file() {
            let bytes = std::fs::read(entry.path()).unwrap();
            if bytes.windows(needle.len()).any(|w| w == needle) {
                found.push(entry.path());
            }
        }
    }
    found
}

/// A Campfire `files/` entry that is a symbolic link (to a file, or a folder on the way to
/// one) leading out of the directory: the blob row says no checksum (Rails allows none) and
/// the size of the file it reaches, so without a check the import copies the server's secret
/// (or any file the importing user can read) into storage, where the team downloads it.
/// A FIFO in its place would block the import forever.
#[tokio::test]
async fn campfire_files_that_lead_outside_are_refused() {
    let work = temp_dir("hardening-links");
    let campfire = Campfire::build(&work);
    let outside = work.join("hearth-data");
    std::fs::create_dir_all(&outside).unwrap();
    let secret = b"0123456789abcdef-the-server-secret-0123456789abcdef";
    std::fs::write(outside.join("secret_key_base"), secret).unwrap();
    let files = campfire.dir.join("files");

    // 1. The blob's own file is a link to a file outside.
    let key = campfire.key("report");
    let place = files.join(&key[0..2]).join(&key[2..4]).join(&key);
    std::fs::remove_file(&place).unwrap();
    std::os::unix::fs::symlink(outside.join("secret_key_base"), &place).unwrap();
    campfire.sql(
        "UPDATE active_storage_blobs SET checksum = NULL, byte_size = ?1 WHERE key = ?2",
        rusqlite::params![secret.len() as i64, key],
    );
    let target = work.join("target-file-link");
    let output = import_campfire(&campfire.dir, &target, Duration::from_secs(120))
        .await
        .expect("the import ends");
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "a linked file is refused");
    assert!(
        message.contains(&key),
        "the message names the blob: {message}"
    );
    assert!(
        files_holding(&target, secret).is_empty(),
        "the secret landed in storage"
    );

    // 2. A folder on the way is a link (`files/se/cr` → the data directory), the key the
    //    secret's file name.
    std::fs::remove_file(&place).unwrap();
    std::fs::write(&place, b"").unwrap();
    campfire.sql(
        "UPDATE active_storage_blobs SET key = 'secret_key_base', byte_size = ?1 WHERE key = ?2",
        rusqlite::params![secret.len() as i64, key],
    );
    std::fs::create_dir_all(files.join("se")).unwrap();
    std::os::unix::fs::symlink(&outside, files.join("se").join("cr")).unwrap();
    let target = work.join("target-dir-link");
    let output = import_campfire(&campfire.dir, &target, Duration::from_secs(120))
        .await
        .expect("the import ends");
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "a linked folder is refused");
    assert!(
        message.contains("secret_key_base"),
        "the message names the blob: {message}"
    );
    assert!(
        files_holding(&target, secret).is_empty(),
        "the secret landed in storage"
    );

    // 3. A FIFO where the file should be (size 0 as the blob says): refused, not read.
    std::fs::remove_file(files.join("se").join("cr")).unwrap();
    let fifo = files.join("se").join("cr");
    std::fs::create_dir_all(&fifo).unwrap();
    let fifo = fifo.join("secret_key_base");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    campfire.sql(
        "UPDATE active_storage_blobs SET byte_size = 0 WHERE key = 'secret_key_base'",
        [],
    );
    let target = work.join("target-fifo");
    let output = import_campfire(&campfire.dir, &target, Duration::from_secs(120))
        .await
        .expect("the import ends rather than waiting on a FIFO");
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "a FIFO is refused");
    assert!(
        message.contains("secret_key_base"),
        "the message names the blob: {message}"
    );
    std::fs::remove_dir_all(&work).ok();
}

/// Push subscriptions whose endpoint Hearth's own form refuses (plain HTTP, this machine, a
/// private network or the cloud's metadata address): imported as they were, the server would
/// POST every notification of their owner to that internal address. They have no place in
/// Hearth; a public `https` one still comes over.
#[tokio::test]
async fn campfire_push_subscriptions_to_inward_addresses_are_left_behind() {
    let work = temp_dir("hardening-push");
    let campfire = Campfire::build(&work);
    let db =
        rusqlite::Connection::open(campfire.dir.join("db").join("production.sqlite3")).unwrap();
    let (user, p256dh, auth): (i64, String, String) = db
        .query_row(
            "SELECT user_id, p256dh_key, auth_key FROM push_subscriptions LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    let inward = [
        "http://169.254.169.254/latest/meta-data/iam",
        "https://169.254.169.254/latest/meta-data/iam",
        "https://127.0.0.1:6379/",
        "https://[::1]/x",
        "https://10.0.0.8/admin",
        "https://localhost/x",
        "javascript:alert(1)",
    ];
    for endpoint in inward {
        db.execute(
            "INSERT INTO push_subscriptions (user_id, endpoint, p256dh_key, auth_key, user_agent, \
             created_at, updated_at) VALUES (?1, ?2, ?3, ?4, 'x', '2025-11-03 09:30:00.000000', \
             '2025-11-03 09:30:00.000000')",
            rusqlite::params![user, endpoint, p256dh, auth],
        )
        .unwrap();
    }
    drop(db);
    let target = work.join("target");
    let output = import_campfire(&campfire.dir, &target, Duration::from_secs(300))
        .await
        .expect("the import ends");
    assert!(
        output.status.success(),
        "the import succeeds: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let endpoints: Vec<String> = rusqlite::Connection::open(target.join("hearth.sqlite3"))
        .unwrap()
        .prepare("SELECT endpoint FROM push_subscriptions ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(endpoints, ["https://push.example.net/send/abc123"]);
    std::fs::remove_dir_all(&work).ok();
}

/// `hearth export --to DIR`: the export holds every password digest, session and bot token of
/// the team, so it is readable by its owner only (as a backup file is), whatever the umask; and
/// a `--to` that is a symbolic link is refused before any work, not after it all (the finished
/// export is renamed onto the target), with nothing left behind.
#[tokio::test]
async fn an_export_is_private_and_a_linked_target_is_refused_first() {
    use std::os::unix::fs::PermissionsExt as _;
    let work = temp_dir("hardening-export");
    let campfire = Campfire::build(&work);
    let team = work.join("team");
    let output = import_campfire(&campfire.dir, &team, Duration::from_secs(300))
        .await
        .expect("the import ends");
    assert!(output.status.success());
    let export = |to: PathBuf| {
        let mut command = hearth_command();
        command
            .arg("export")
            .arg("--database")
            .arg(team.join("hearth.sqlite3"))
            .arg("--storage-root")
            .arg(&team)
            .arg("--to")
            .arg(to)
            .arg("--quiet")
            .env_remove("HEARTH_S3_ENDPOINT")
            .env_remove("HEARTH_S3_BUCKET")
            .kill_on_drop(true);
        async move { command.output().await.expect("hearth runs") }
    };

    let out = work.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let output = export(out.join("storage")).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mode = std::fs::metadata(out.join("storage"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(
        mode & 0o077,
        0,
        "the export is {mode:o}: others may read it"
    );

    let elsewhere = work.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let link = out.join("linked");
    std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
    let output = export(link.clone()).await;
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "a linked target is refused");
    assert!(
        message.contains("symbolic link"),
        "the message says why: {message}"
    );
    let mut left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["linked", "storage"],
        "nothing left beside the target"
    );
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    std::fs::remove_dir_all(&work).ok();
}
