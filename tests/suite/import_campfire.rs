//! `hearth import campfire --from DIR` with the real binary, on a Campfire `storage/`
//! directory built by Ruby's own ActiveRecord from Campfire's schema
//! (`tests/ruby/campfire_storage.rb`; Debian's `ruby-activerecord`, `ruby-activestorage`,
//! `ruby-sqlite3`, `ruby-bcrypt`): everything lands (rows per table, ids, passwords, unread
//! marks, permalinks, mentions, boosts, thumbnails and files, as `hearth serve` then shows
//! them over HTTP), and malformed input is refused with a message naming the problem while
//! the target stays byte for byte as it was.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use md5::Digest as _;

use crate::common::child::{hearth_command, Hearth, SECRET_KEY_BASE};
use crate::common::{attr_after, temp_dir};
use crate::files::{header, raw};

/// A Campfire `storage/` directory and what the script that built it printed (shared with
/// `hardening_history`).
pub(crate) struct Campfire {
    pub(crate) dir: PathBuf,
    pub(crate) facts: serde_json::Value,
}

impl Campfire {
    /// Builds the fixture in `<parent>/campfire`.
    pub(crate) fn build(parent: &Path) -> Self {
        let dir = parent.join("campfire");
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/ruby/campfire_storage.rb"
        );
        let output = std::process::Command::new("ruby")
            .arg(script)
            .arg(&dir)
            .arg(SECRET_KEY_BASE)
            .output()
            .expect(
                "ruby runs (apt-get install -y ruby ruby-activerecord ruby-activestorage ruby-sqlite3 ruby-bcrypt)",
            );
        assert!(
            output.status.success(),
            "campfire_storage.rb: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let facts = serde_json::from_slice(&output.stdout).expect("the script prints JSON");
        Self { dir, facts }
    }

    /// A copy of this directory at `to` (to spoil without touching the original).
    fn copy_to(&self, to: &Path) -> Self {
        copy_dir(&self.dir, to);
        Self {
            dir: to.to_path_buf(),
            facts: self.facts.clone(),
        }
    }

    fn database(&self) -> PathBuf {
        self.dir.join("db").join("production.sqlite3")
    }

    /// The file of the blob the script calls `name`.
    fn blob_file(&self, name: &str) -> PathBuf {
        let key = self.facts["blobs"][name].as_str().unwrap();
        self.dir
            .join("files")
            .join(&key[0..2])
            .join(&key[2..4])
            .join(key)
    }

    fn id(&self, kind: &str, name: &str) -> i64 {
        self.facts[kind][name].as_i64().unwrap()
    }

    /// Rows per table Hearth gets: those the script counted in Campfire's database, less
    /// those it made with no place in Hearth.
    fn counts(&self) -> BTreeMap<String, u64> {
        self.facts["counts"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                let skipped = self.facts["skipped"][k].as_u64().unwrap_or(0);
                (k.clone(), v.as_u64().unwrap() - skipped)
            })
            .collect()
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every directory and file under `dir`, each file with the MD5 of its bytes: what "byte for
/// byte untouched" compares.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            if path.is_dir() {
                out.insert(rel, "dir".into());
                walk(root, &path, out);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.insert(rel, hex::encode(md5::Md5::digest(&bytes)));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Runs `hearth import campfire --from <from>` into `<target>/hearth.sqlite3` (storage root
/// `target`), with `extra` flags.
async fn import(from: &Path, target: &Path, extra: &[&str]) -> Output {
    hearth_command()
        .args(["import", "campfire", "--from"])
        .arg(from)
        .arg("--database")
        .arg(target.join("hearth.sqlite3"))
        .arg("--data-dir")
        .arg(target)
        .arg("--quiet")
        .args(extra)
        .env_remove("HEARTH_DATABASE")
        .env_remove("HEARTH_DATA_DIR")
        .env_remove("HEARTH_STORAGE_ROOT")
        .output()
        .await
        .expect("hearth runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The `  table  n` lines the command prints.
fn printed_counts(output: &str) -> BTreeMap<String, u64> {
    output
        .lines()
        .filter(|l| l.starts_with("  "))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            Some((words.next()?.to_owned(), words.next()?.parse().ok()?))
        })
        .collect()
}

/// Rows per table in Hearth's database (`action_text_rich_texts`: the messages with a body).
fn hearth_counts(database: &Path, tables: &[&String]) -> BTreeMap<String, u64> {
    let conn = rusqlite::Connection::open(database).unwrap();
    tables
        .iter()
        .map(|table| {
            let sql = if table.as_str() == "action_text_rich_texts" {
                "SELECT COUNT(*) FROM messages WHERE body <> ''".to_owned()
            } else {
                format!("SELECT COUNT(*) FROM {table}")
            };
            let n: i64 = conn.query_row(&sql, [], |row| row.get(0)).unwrap();
            ((*table).clone(), n as u64)
        })
        .collect()
}

/// `counts` with `made` variants added to Active Storage's three tables.
fn with_variants(counts: &BTreeMap<String, u64>, made: u64) -> BTreeMap<String, u64> {
    let mut counts = counts.clone();
    for table in [
        "active_storage_blobs",
        "active_storage_attachments",
        "active_storage_variant_records",
    ] {
        *counts.get_mut(table).unwrap() += made;
    }
    counts
}

/// A signed-in client's GET of `path` with the bytes kept, following one redirect.
async fn fetch(server: &Hearth, cookie: &str, path: &str) -> (u16, Vec<u8>) {
    let addr = server.addr.to_string();
    let (status, headers, body) = raw(&addr, "GET", path, &[("Cookie", cookie)], b"").await;
    if status != 302 {
        return (status, body);
    }
    let location = header(&headers, "location").unwrap().to_owned();
    let (status, _, body) = raw(&addr, "GET", &location, &[("Cookie", cookie)], b"").await;
    (status, body)
}

/// The `<div id="message_…">` of message `id` in a room page, up to the next message.
fn message_html(page: &str, id: i64) -> &str {
    let marker = format!("data-message-id=\"{id}\"");
    let at = page
        .find(&marker)
        .unwrap_or_else(|| panic!("message {id} in the page"));
    let start = page[..at].rfind("<div id=\"message_").unwrap();
    let end = page[at..]
        .find("<div id=\"message_")
        .map_or(page.len(), |e| at + e);
    &page[start..end]
}

#[tokio::test]
async fn a_campfire_team_comes_over_whole() {
    let work = temp_dir("import-campfire");
    let campfire = Campfire::build(&work);
    let target = work.join("hearth");
    let source_before = snapshot(&campfire.dir);

    let output = import(&campfire.dir, &target, &[]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        snapshot(&campfire.dir),
        source_before,
        "the source is never changed"
    );

    // Rows per table: printed, and in Hearth's database, equal to Campfire's; Active
    // Storage's tables also hold the variants Hearth draws that Campfire's are not (Ada's
    // avatar square, the logo's 512 and 192 px squares).
    let printed = printed_counts(&stdout(&output));
    assert_eq!(
        printed.get("variants_made"),
        Some(&3),
        "{}",
        stdout(&output)
    );
    let expected = with_variants(&campfire.counts(), 3);
    for (table, n) in &expected {
        assert_eq!(
            printed.get(table),
            Some(n),
            "{table} printed: {}",
            stdout(&output)
        );
    }
    let tables: Vec<&String> = expected.keys().collect();
    assert_eq!(
        hearth_counts(&target.join("hearth.sqlite3"), &tables),
        expected
    );
    assert_eq!(printed.get("files"), Some(&5));
    // What has no place is said, with why.
    for line in [
        "skipped 1 rows of searches: its user is gone, or a newer row has the same query",
        "skipped 1 rows of action_text_rich_texts: not a message's body",
    ] {
        assert!(
            stderr(&output).contains(line),
            "{line}: {}",
            stderr(&output)
        );
    }

    let server = Hearth::start(&target, &[]).await;
    // Everyone signs in with the password they had in Campfire; a deactivated user does not.
    let passwords = &campfire.facts["passwords"];
    let mut ada = server.client();
    let r = ada
        .login(
            "ada@example.com",
            passwords["ada@example.com"].as_str().unwrap(),
        )
        .await;
    assert_eq!(
        r.status, 302,
        "Ada signs in with her Campfire password: {}",
        r.body
    );
    let mut wrong = server.client();
    assert_ne!(
        wrong
            .login("ada@example.com", "campfire-ada-0")
            .await
            .status,
        302
    );
    let mut dot = server.client();
    let dot_password = passwords["dot@example.com"].as_str().unwrap();
    let dot_email = "dot-deactivated-2f1c7a52-4b7e-4f1e-9d55-0b8f3f9b7d11@example.com";
    assert_ne!(dot.login(dot_email, dot_password).await.status, 302);

    rooms_and_unread_marks(&server, &campfire, &mut ada).await;
    a_repeated_client_id_is_made_unique(&campfire, &mut ada).await;
    permalink_mention_and_boosts(&campfire, &mut ada).await;
    files_are_served(&server, &campfire, &mut ada).await;
    new_posts_get_fresh_ids(&campfire, &mut ada).await;
    std::fs::remove_dir_all(&work).ok();
}

async fn rooms_and_unread_marks(
    server: &Hearth,
    campfire: &Campfire,
    ada: &mut crate::common::Client,
) {
    let sidebar = ada.get("/users/me/sidebar").await;
    assert_eq!(sidebar.status, 200);
    let (all_talk, plans, direct, water) = (
        campfire.id("rooms", "all_talk"),
        campfire.id("rooms", "plans"),
        campfire.id("rooms", "direct"),
        campfire.id("rooms", "water"),
    );
    for id in [
        format!("list_rooms_open_{all_talk}\" class=\"room-link\""),
        format!("list_rooms_closed_{plans}\" class=\"room-link\""),
        format!("list_rooms_open_{water}\" class=\"room-link room-link--unread\""),
        format!("list_rooms_direct_{direct}\" class=\"room-link room-link--direct\""),
    ] {
        assert!(
            sidebar.body.contains(&id),
            "Ada's sidebar has {id}: {}",
            sidebar.body
        );
    }
    // Cleo's unread mark of the direct room came over too.
    let mut cleo = server.client();
    let password = campfire.facts["passwords"]["cleo@example.com"]
        .as_str()
        .unwrap();
    assert_eq!(cleo.login("cleo@example.com", password).await.status, 302);
    let sidebar = cleo.get("/users/me/sidebar").await;
    let unread_direct = format!(
        "list_rooms_direct_{direct}\" class=\"room-link room-link--direct room-link--unread"
    );
    assert!(sidebar.body.contains(&unread_direct), "{}", sidebar.body);
    assert!(
        !sidebar.body.contains(&format!("list_rooms_closed_{plans}")),
        "Cleo is not in the closed room"
    );
}

/// Campfire's second message with a client id already used keeps its id and gets its own
/// element id (`message_<client id>-<id>`); the first keeps its client id.
async fn a_repeated_client_id_is_made_unique(campfire: &Campfire, ada: &mut crate::common::Client) {
    let (first, again) = (
        campfire.id("messages", "water"),
        campfire.id("messages", "again"),
    );
    let page = ada
        .get(&format!("/rooms/{}", campfire.id("rooms", "water")))
        .await;
    let cid = attr_after(message_html(&page.body, first), "<div id=\"message_").unwrap();
    assert_eq!(
        attr_after(message_html(&page.body, again), "<div id=\"message_").unwrap(),
        format!("{cid}-{again}")
    );
}

async fn permalink_mention_and_boosts(campfire: &Campfire, ada: &mut crate::common::Client) {
    let (room, shout, reply) = (
        campfire.id("rooms", "all_talk"),
        campfire.id("messages", "shout"),
        campfire.id("messages", "reply"),
    );
    let page = ada.get(&format!("/rooms/{room}/@{shout}")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page
        .body
        .contains(&format!("data-highlight-message-id=\"{shout}\"")));
    let ben = campfire.id("users", "ben");
    let shouted = message_html(&page.body, shout);
    assert!(
        shouted.contains(&format!(
            "<span class=\"mention\" data-user-id=\"{ben}\">@Ben Okafor</span>"
        )),
        "the mention renders as a chip: {shouted}"
    );
    assert!(shouted.contains("can you bring the kettle?"));
    assert!(
        shouted.contains("class=\"boost__content\">👍</span>"),
        "{shouted}"
    );
    assert!(
        shouted.contains("class=\"boost__content\">🔥🔥</span>"),
        "{shouted}"
    );
    assert!(message_html(&page.body, reply).contains("class=\"boost__content\">nice kettle</span>"));
}

async fn files_are_served(server: &Hearth, campfire: &Campfire, ada: &mut crate::common::Client) {
    let cookie = ada.cookie_header();
    let page = ada
        .get(&format!("/rooms/{}", campfire.id("rooms", "all_talk")))
        .await;
    let photo = message_html(&page.body, campfire.id("messages", "photo"));
    let thumb_src = attr_after(photo, "<img src=\"").expect("the photo shows as a thumbnail");
    assert!(
        thumb_src.starts_with("/rails/active_storage/representations/redirect/"),
        "{thumb_src}"
    );
    let (status, bytes) = fetch(server, &cookie, &thumb_src.replace("&amp;", "&")).await;
    assert_eq!(status, 200);
    assert_eq!(
        bytes,
        std::fs::read(campfire.blob_file("thumb")).unwrap(),
        "Campfire's variant is served"
    );

    let page = ada
        .get(&format!("/rooms/{}", campfire.id("rooms", "plans")))
        .await;
    let report = message_html(&page.body, campfire.id("messages", "report"));
    assert!(report.contains("figures.pdf"), "{report}");
    let at = report
        .find("class=\"btn btn--plain message__file-download\"")
        .expect("a download link");
    let link = report[..at].rfind("<a href=\"").unwrap();
    let download = attr_after(&report[link..], "<a href=\"").expect("a download link");
    let (status, bytes) = fetch(server, &cookie, &download.replace("&amp;", "&")).await;
    assert_eq!(status, 200);
    assert_eq!(
        bytes,
        std::fs::read(campfire.blob_file("report")).unwrap(),
        "the PDF's bytes"
    );

    // Ada's avatar and the account's logo are drawn from Campfire's images (PNG squares made
    // on the way), not the initials or the stock icon.
    let addr = server.addr.to_string();
    let ada_id = campfire.id("users", "ada");
    for (path, side) in [
        (format!("/users/{ada_id}/avatar"), 96),
        ("/account/logo".to_owned(), 512),
        ("/account/logo?size=small".to_owned(), 192),
    ] {
        let (status, headers, bytes) = raw(&addr, "GET", &path, &[("Cookie", &cookie)], b"").await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(
            header(&headers, "content-type"),
            Some("image/png"),
            "{path}"
        );
        let image = image::load_from_memory(&bytes).expect("a PNG");
        assert_eq!((image.width(), image.height()), (side, side), "{path}");
    }
}

async fn new_posts_get_fresh_ids(campfire: &Campfire, ada: &mut crate::common::Client) {
    let room = campfire.id("rooms", "all_talk");
    let (csrf, _) = ada.room(room).await;
    let cid = uuid::Uuid::new_v4().to_string();
    let r = ada
        .post_message(room, "<div>First post on Hearth</div>", &cid, &csrf)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id: i64 = attr_after(&r.body, "data-message-id=\"")
        .unwrap()
        .parse()
        .unwrap();
    // Campfire handed out message ids up to `last` (deleted since): the next one is past it.
    let last = campfire.id("messages", "last");
    assert_eq!(id, last + 1, "a new post takes no id Campfire ever gave");
}

/// What a refused import must leave: the exit status, the words of its message, and the
/// target and the source as they were.
async fn assert_refused(campfire: &Campfire, target: &Path, extra: &[&str], words: &[&str]) {
    let (target_before, source_before) = (snapshot(target), snapshot(&campfire.dir));
    let output = import(&campfire.dir, target, extra).await;
    let message = stderr(&output);
    assert!(!output.status.success(), "refused: {}", stdout(&output));
    for word in words {
        assert!(
            message.contains(word),
            "the message names {word:?}: {message}"
        );
    }
    assert_eq!(
        snapshot(target),
        target_before,
        "the target is untouched ({words:?})"
    );
    assert_eq!(
        snapshot(&campfire.dir),
        source_before,
        "the source is untouched"
    );
}

#[tokio::test]
async fn malformed_input_is_refused_and_the_target_kept() {
    let work = temp_dir("import-campfire-bad");
    let campfire = Campfire::build(&work);
    // A target that already holds a team (an earlier import): every refusal below must leave
    // it as it is, even with --replace.
    let team = work.join("team");
    assert!(import(&campfire.dir, &team, &[]).await.status.success());
    let empty = work.join("empty");
    std::fs::create_dir_all(&empty).unwrap();

    assert_refused(
        &campfire,
        &team,
        &[],
        &["already holds a team", "--replace"],
    )
    .await;

    let truncated = campfire.copy_to(&work.join("truncated"));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(truncated.database())
        .unwrap();
    let len = file.metadata().unwrap().len();
    file.set_len(len / 2).unwrap();
    drop(file);
    assert_refused(&truncated, &team, &["--replace"], &["truncated"]).await;
    assert_refused(&truncated, &empty, &[], &["truncated"]).await;

    let missing = campfire.copy_to(&work.join("missing"));
    std::fs::remove_file(missing.blob_file("report")).unwrap();
    assert_refused(&missing, &team, &["--replace"], &["figures.pdf", "missing"]).await;

    let spoiled = campfire.copy_to(&work.join("spoiled"));
    let mut bytes = std::fs::read(spoiled.blob_file("report")).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 0x20;
    std::fs::write(spoiled.blob_file("report"), bytes).unwrap();
    assert_refused(
        &spoiled,
        &team,
        &["--replace"],
        &["figures.pdf", "checksum"],
    )
    .await;
    assert_refused(&spoiled, &empty, &[], &["checksum"]).await;

    let newer = campfire.copy_to(&work.join("newer"));
    rusqlite::Connection::open(newer.database())
        .unwrap()
        .execute(
            "INSERT INTO schema_migrations (version) VALUES ('20260401090000')",
            [],
        )
        .unwrap();
    assert_refused(&newer, &team, &["--replace"], &["20260401090000", "newer"]).await;

    let odd = campfire.copy_to(&work.join("odd"));
    rusqlite::Connection::open(odd.database())
        .unwrap()
        .execute(
            "UPDATE messages SET created_at = 'last Tuesday' WHERE id = 3",
            [],
        )
        .unwrap();
    assert_refused(
        &odd,
        &team,
        &["--replace"],
        &["messages.created_at", "row 3"],
    )
    .await;
    std::fs::remove_dir_all(&work).ok();
}

#[tokio::test]
async fn dry_run_writes_nothing_and_replace_replaces() {
    let work = temp_dir("import-campfire-dry");
    let campfire = Campfire::build(&work);
    let target = work.join("hearth");
    std::fs::create_dir_all(&target).unwrap();

    let output = import(&campfire.dir, &target, &["--dry-run"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("Dry run"), "{}", stdout(&output));
    let printed = printed_counts(&stdout(&output));
    for (table, n) in with_variants(&campfire.counts(), 3) {
        assert_eq!(printed.get(&table), Some(&n), "{table} would be imported");
    }
    assert!(
        snapshot(&target).is_empty(),
        "nothing written: {:?}",
        snapshot(&target)
    );

    assert!(import(&campfire.dir, &target, &[]).await.status.success());
    let before = snapshot(&target);
    let output = import(&campfire.dir, &target, &["--dry-run", "--replace"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        snapshot(&target),
        before,
        "a dry run over a team changes nothing"
    );

    // --replace: the team is replaced by Campfire's (here the same one, again whole).
    let conn = rusqlite::Connection::open(target.join("hearth.sqlite3")).unwrap();
    conn.execute("UPDATE users SET name = 'Changed' WHERE id = 1", [])
        .unwrap();
    drop(conn);
    let output = import(&campfire.dir, &target, &["--replace"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let expected = with_variants(&campfire.counts(), 3);
    let tables: Vec<&String> = expected.keys().collect();
    assert_eq!(
        hearth_counts(&target.join("hearth.sqlite3"), &tables),
        expected
    );
    let name: String = rusqlite::Connection::open(target.join("hearth.sqlite3"))
        .unwrap()
        .query_row("SELECT name FROM users WHERE id = 1", [], |row| row.get(0))
        .unwrap();
    assert_eq!(name, "Ada Lovelace");
    std::fs::remove_dir_all(&work).ok();
}

/// Grows a copy of the fixture to `n` more messages with bodies (SQL, as a busy Campfire
/// would have them), so an import runs long enough to be interrupted.
fn grown(campfire: &Campfire, to: &Path, n: u32) -> Campfire {
    let big = campfire.copy_to(to);
    let conn = rusqlite::Connection::open(big.database()).unwrap();
    conn.execute_batch(&format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {n})
         INSERT INTO messages (id, room_id, creator_id, client_message_id, created_at, updated_at)
         SELECT 1000 + i, 1, 1 + i % 3, lower(hex(randomblob(16))),
                strftime('%Y-%m-%d %H:%M:%f', '2025-01-01', '+' || i || ' seconds'),
                strftime('%Y-%m-%d %H:%M:%f', '2025-01-01', '+' || i || ' seconds') FROM n;
         INSERT INTO action_text_rich_texts (name, body, record_type, record_id, created_at, updated_at)
         SELECT 'body', '<div>Message ' || id || ' about <strong>the launch</strong></div>',
                'Message', id, created_at, updated_at FROM messages WHERE id > 1000;"
    ))
    .unwrap();
    big
}

/// Starts an import of `from` into `target` and sends it SIGINT once it reports copying
/// rows (inside its transaction); returns its exit status and standard error.
async fn interrupted(
    from: &Path,
    target: &Path,
    extra: &[&str],
) -> (std::process::ExitStatus, String) {
    use tokio::io::AsyncReadExt as _;
    let mut child = hearth_command()
        .args(["import", "campfire", "--from"])
        .arg(from)
        .arg("--database")
        .arg(target.join("hearth.sqlite3"))
        .arg("--data-dir")
        .arg(target)
        .args(extra)
        .env_remove("HEARTH_DATABASE")
        .env_remove("HEARTH_DATA_DIR")
        .env_remove("HEARTH_STORAGE_ROOT")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("copying rows") {
        let n = tokio::time::timeout(std::time::Duration::from_secs(120), stderr.read(&mut buf))
            .await
            .expect("the import reports copying rows in time")
            .unwrap();
        assert!(
            n > 0,
            "the import ended first: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    let pid = child.id().unwrap().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let mut rest = Vec::new();
    stderr.read_to_end(&mut rest).await.unwrap();
    seen.extend_from_slice(&rest);
    let status = tokio::time::timeout(std::time::Duration::from_secs(120), child.wait())
        .await
        .expect("the import stops in time")
        .unwrap();
    (status, String::from_utf8_lossy(&seen).into_owned())
}

#[tokio::test]
async fn an_interrupted_import_leaves_the_target_as_it_was() {
    let work = temp_dir("import-campfire-int");
    let campfire = Campfire::build(&work);
    let big = grown(&campfire, &work.join("big"), 60_000);

    // Over a team (--replace): its database and files stay byte for byte.
    let team = work.join("team");
    assert!(import(&campfire.dir, &team, &[]).await.status.success());
    let before = snapshot(&team);
    let (status, stderr) = interrupted(&big.dir, &team, &["--replace"]).await;
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert_eq!(snapshot(&team), before, "the team is as it was");

    // Into nothing: nothing is left (the database file the import made is removed).
    let empty = work.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (status, stderr) = interrupted(&big.dir, &empty, &[]).await;
    assert!(!status.success(), "{stderr}");
    assert!(
        snapshot(&empty).is_empty(),
        "left behind: {:?}",
        snapshot(&empty)
    );
    std::fs::remove_dir_all(&work).ok();
}
