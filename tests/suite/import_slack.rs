//! `hearth import slack --from EXPORT.zip` (issue 44), run as the built binary on a zip of
//! `tests/fixtures/slack/`: an export in Slack's documented format (`users.json`,
//! `channels.json`, `groups.json`, `dms.json`, `mpims.json`, a folder of day files per
//! conversation) with two public channels, a private one, a direct message, a group direct
//! message, a bot's message, a bot user's, mentions, reactions, a thread, a file, an edit, a
//! join event and a deleted user.
//!
//! The imported database is then served by `hearth serve`, and what a person sees is checked
//! over HTTP after signing in through the link the import printed. Malformed exports and a
//! target that holds a team are refused with a message naming the problem, the target left
//! byte for byte as it was.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::common::child::{hearth_command, Hearth, SECRET_KEY_BASE};
use crate::common::forms::send;
use crate::common::{csrf_meta, temp_dir, Client};

/// A zip's entries: name, bytes.
type Entries = Vec<(String, Vec<u8>)>;

/// The fixture's files: name in the zip, bytes; in name order.
fn fixture() -> Entries {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let name = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.push((name, std::fs::read(&path).unwrap()));
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/slack");
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    out.sort();
    out
}

/// Writes `entries` as a deflated zip at `path`.
fn write_zip(path: &Path, entries: &[(String, Vec<u8>)]) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true);
    for (name, bytes) in entries {
        zip.start_file(name.as_str(), options).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
}

/// What one run of the command printed.
struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// Runs `hearth import slack --from zip` into `dir/hearth.sqlite3`, with the test servers'
/// secret.
async fn import(dir: &Path, zip: &Path, extra: &[&str]) -> Run {
    let out = hearth_command()
        .args(["import", "slack", "--quiet", "--from"])
        .arg(zip)
        .arg("--database")
        .arg(dir.join("hearth.sqlite3"))
        .arg("--data-dir")
        .arg(dir)
        .args(extra)
        .env("SECRET_KEY_BASE", SECRET_KEY_BASE)
        .env("RUST_BACKTRACE", "0")
        .output()
        .await
        .expect("hearth runs");
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The sign-in path the import printed for the person whose line starts with `who`.
fn link_of(stdout: &str, who: &str) -> String {
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with(who))
        .unwrap_or_else(|| panic!("no link for {who} in:\n{stdout}"));
    let at = line.find("/session/transfers/").expect(line);
    line[at..].trim().to_owned()
}

/// Signs a fresh client in through the transfer link `path`.
async fn sign_in(server: &Hearth, path: &str) -> Client {
    let mut c = server.client();
    let page = c.get(path).await;
    assert_eq!(page.status, 200, "{path}: {}", page.body);
    let r = send(&mut c, "PUT", path, &[], &csrf_meta(&page.body)).await;
    assert_eq!(r.status, 302, "{path}: {}", r.body);
    assert_eq!(r.header("location"), Some("/"));
    c
}

/// Where each of `needles` is in `haystack`, asserting each is there.
fn positions(haystack: &str, needles: &[&str]) -> Vec<usize> {
    needles
        .iter()
        .map(|n| {
            haystack
                .find(n)
                .unwrap_or_else(|| panic!("{n:?} is not in:\n{haystack}"))
        })
        .collect()
}

#[tokio::test]
async fn a_slack_export_imports_and_its_people_sign_in_to_their_rooms() {
    let dir = temp_dir("slack");
    let zip = dir.join("Acme Slack export Jan 1 2024 - Jan 31 2024.zip");
    write_zip(&zip, &fixture());
    let target = dir.join("target");
    std::fs::create_dir_all(&target).unwrap();

    let dry = import(&target, &zip, &["--dry-run"]).await;
    assert!(dry.ok, "{}", dry.stderr);
    assert!(dry.stdout.contains("Dry run"), "{}", dry.stdout);
    assert_counts(&dry.stdout);
    assert!(
        !target.join("hearth.sqlite3").exists(),
        "a dry run writes nothing"
    );

    let run = import(&target, &zip, &[]).await;
    assert!(run.ok, "{}\n{}", run.stdout, run.stderr);
    assert_counts(&run.stdout);
    assert!(run.stdout.contains("skipped 1 events"), "{}", run.stdout);
    let (cat_link, ann_link) = links(&run.stdout);

    let server = Hearth::start(&target, &[]).await;
    let mut cat = sign_in(&server, &cat_link).await;
    assert_sidebar(&mut cat).await;
    let general = cat.get("/rooms/1").await;
    assert_eq!(general.status, 200);
    assert_thread(&general.body);
    assert_formatting(&general.body);
    assert_boosts_files_and_authors(&general.body);
    let secret = cat.get("/rooms/3").await;
    assert!(
        secret
            .body
            .contains("The surprise party is on <em>Friday</em>"),
        "{}",
        secret.body
    );
    // The search index is filled.
    let found = cat.get("/searches?q=surprise").await;
    assert_eq!(found.status, 200);
    assert!(found.body.contains("The surprise party"), "{}", found.body);

    // Ann administers and sees her DM with Bob.
    let mut ann = sign_in(&server, &ann_link).await;
    let dm = ann.get("/rooms/4").await;
    assert_eq!(dm.status, 200);
    assert!(dm.body.contains("hey Ann, quick question"), "{}", dm.body);
    assert_eq!(
        ann.get("/account/edit").await.status,
        200,
        "Ann administers"
    );

    // Ann, who never had a password, sets her first one on her profile (no challenge to
    // answer) and signs in with it.
    let profile = ann.get("/users/me/profile").await;
    let set = send(
        &mut ann,
        "PATCH",
        "/users/me/profile",
        &[
            ("user[name]", "Ann Lee"),
            ("user[password]", "first-password-1"),
        ],
        &csrf_meta(&profile.body),
    )
    .await;
    assert_eq!(set.status, 302, "{}", set.body);
    let mut fresh = server.client();
    let login = fresh.login("ann@acme.example", "first-password-1").await;
    assert_eq!(login.status, 302, "{}", login.body);

    // An import into the running server's database is refused before it reads anything, and
    // the server keeps its team.
    let again = import(&target, &zip, &["--replace"]).await;
    assert!(!again.ok, "{}", again.stdout);
    assert!(
        again.stderr.contains("open in another process"),
        "{}",
        again.stderr
    );
    assert_eq!(ann.get("/rooms/4").await.status, 200);

    assert_rows(&target.join("hearth.sqlite3")).await;
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The counts per table the import printed.
fn assert_counts(stdout: &str) {
    for (table, n) in [
        ("accounts", 1),
        ("users", 7),
        ("rooms", 5),
        ("messages", 16),
        ("boosts", 4),
        ("memberships", 18),
        ("message_search_index", 16),
    ] {
        let line = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(table))
            .unwrap_or_else(|| panic!("no count of {table}:\n{stdout}"));
        let n = n.to_string();
        assert_eq!(line.split_whitespace().nth(1), Some(n.as_str()), "{line}");
    }
}

/// Cat's and Ann's links; the deleted user and the bots have none.
fn links(stdout: &str) -> (String, String) {
    for nobody in ["Dan Gone", "Helper", "CI <", "Slackbot"] {
        assert!(
            !stdout.lines().any(|l| l.trim_start().starts_with(nobody)),
            "{nobody} has a link:\n{stdout}"
        );
    }
    (
        link_of(stdout, "Cat Ng <cat@acme.example>"),
        link_of(stdout, "Ann Lee <ann@acme.example>"),
    )
}

/// Cat's rooms: #general, #secret-plans and the group DM; #random is hidden (she was not in
/// it), the DM of Ann and Bob is not hers. Imported history is read.
async fn assert_sidebar(cat: &mut Client) {
    let sidebar = cat.get("/users/me/sidebar").await;
    assert_eq!(sidebar.status, 200);
    let body = &sidebar.body;
    for (room, shown) in [(1, true), (2, false), (3, true), (4, false), (5, true)] {
        let listed = body.contains(&format!("data-room-id=\"{room}\""));
        assert_eq!(listed, shown, "room {room}: {body}");
    }
    assert!(body.contains(">general<"), "{body}");
    assert!(body.contains(">secret-plans<"), "{body}");
    assert!(!body.contains("room-link--unread"), "{body}");
    assert_ne!(cat.get("/rooms/4").await.status, 200, "not Cat's DM");
}

/// The thread: its replies right after their parent, oldest first, before the next message
/// outside it though the last reply came later; each quotes and links its parent.
fn assert_thread(page: &str) {
    let at = positions(
        page,
        &[
            "Who can review the deploy?</div>",
            "I can, ",
            "Reviewed and merged, thanks all",
            "Next topic: lunch &amp; learn on Friday",
        ],
    );
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");
    assert!(page.contains("href=\"/rooms/1/@3\""), "{page}");
    assert!(page.contains("replied 2024-01-15 10:30 UTC"), "{page}");
}

/// mrkdwn: mention chips of the imported people, bold, a channel link, a link with its
/// label, an emoji, code, escapes; the join event is skipped.
fn assert_formatting(page: &str) {
    for chip in [
        "<span class=\"mention\" data-user-id=\"2\">@Bob Stone</span>",
        "<span class=\"mention\" data-user-id=\"3\">@Cat Ng</span>",
    ] {
        assert!(page.contains(chip), "{chip}: {page}");
    }
    for html in [
        "Welcome <strong>everyone</strong> to",
        "href=\"/rooms/2\"",
        "href=\"https://acme.example/handbook?a=1&amp;b=2\"",
        ">the handbook</a> 🎉",
        "<pre>cat config.toml</pre>",
        "check the &lt;config&gt; file",
    ] {
        assert!(page.contains(html), "{html}: {page}");
    }
    assert!(!page.contains("has joined the channel"), "{page}");
}

/// Reactions are boosts by the people who reacted; the file links to its original URL; bots'
/// messages are the bots' (a bot user's, a webhook's by its name); the deleted user's stay.
fn assert_boosts_files_and_authors(page: &str) {
    let boosts: Vec<&str> = page
        .split("<span class=\"boost__content\">")
        .skip(1)
        .map(|s| s.split('<').next().unwrap())
        .collect();
    assert_eq!(boosts, ["🎉", "🎉", "👍", ":partyparrot:"], "{page}");
    assert!(
        page.contains("class=\"boost\" title=\"Bob Stone\""),
        "{page}"
    );
    assert!(
        page.contains("href=\"https://files.slack.com/files-pri/T01ACME-F01PLAN/plan.pdf\""),
        "{page}"
    );
    assert!(page.contains(">Q1 plan</a>"), "{page}");
    for (author, text) in [
        ("CI", "Build <strong>passed</strong> on <code>main</code>"),
        ("Helper", "Reminder: standup in 5 minutes"),
        ("Dan Gone", "Old news from before I left"),
    ] {
        let by = format!("class=\"message__author\" title=\"{author}");
        let at = positions(page, &[&by, text]);
        assert!(at[0] < at[1], "{author}");
    }
}

/// The edit's time is kept; the deleted user is deactivated with their address; bots are
/// bots; the account is named after the zip.
async fn assert_rows(database: &Path) {
    let db = sqlx::SqlitePool::connect(&format!("sqlite:{}?mode=ro", database.display()))
        .await
        .unwrap();
    let edited: (i64, i64) = sqlx::query_as(
        "SELECT created_at, updated_at FROM messages WHERE body LIKE '%Standup moved%'",
    )
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!(edited, (1_705_321_800_001, 1_705_322_700_000));
    let dan: (String, Option<String>) =
        sqlx::query_as("SELECT status, email_address FROM users WHERE name = 'Dan Gone'")
            .fetch_one(&db)
            .await
            .unwrap();
    assert_eq!(dan.0, "deactivated");
    assert_eq!(dan.1.as_deref(), Some("dan@acme.example"));
    let bots: Vec<String> =
        sqlx::query_scalar("SELECT name FROM users WHERE role = 'bot' ORDER BY name")
            .fetch_all(&db)
            .await
            .unwrap();
    assert_eq!(bots, ["CI", "Helper", "Slackbot"]);
    let name: String = sqlx::query_scalar("SELECT name FROM accounts")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(name, "Acme");
    db.close().await;
}

/// Every file of `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

/// Runs the import of `zip` into `target` (with the flags `extra`) and asserts it is refused with a message holding
/// every one of `says`, `target` byte for byte as it was.
async fn refused(target: &Path, zip: &Path, says: &[&str], extra: &[&str]) {
    let before = snapshot(target);
    let run = import(target, zip, extra).await;
    let case = zip.display();
    assert!(!run.ok, "{case}: not refused:\n{}", run.stdout);
    for said in says {
        assert!(
            run.stderr.contains(said),
            "{case}: {said:?} not in:\n{}",
            run.stderr
        );
    }
    let after = snapshot(target);
    assert!(
        after == before,
        "{case}: the target changed: {:?} -> {:?}",
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
}

/// The fixture with `name` replaced by `bytes` (or removed, for None), or added.
fn with(name: &str, bytes: Option<&[u8]>) -> Vec<(String, Vec<u8>)> {
    let mut entries: Vec<(String, Vec<u8>)> =
        fixture().into_iter().filter(|(n, _)| n != name).collect();
    if let Some(bytes) = bytes {
        entries.push((name.to_owned(), bytes.to_vec()));
    }
    entries
}

/// Two targets under `dir`: none yet (it must stay missing), and an empty migrated database.
async fn targets(dir: &Path) -> (PathBuf, PathBuf) {
    let missing = dir.join("missing");
    std::fs::create_dir_all(&missing).unwrap();
    let empty = dir.join("empty");
    let pool = hearth::db::open(&empty.join("hearth.sqlite3"))
        .await
        .unwrap();
    pool.close().await;
    (missing, empty)
}

#[tokio::test]
async fn malformed_exports_are_refused_leaving_the_target_untouched() {
    let dir = temp_dir("slack-bad");
    let (missing, empty) = targets(&dir).await;
    // A bomb: a few hundred kilobytes that inflate past the 256 MiB limit of one entry.
    let bomb = vec![b' '; (256 << 20) + 1];
    let bad_json = br#"[{"type":"message","user":"U01ANN","text":"hi","ts":"1705395700.000100",}]"#;
    let cases: Vec<(&str, Entries, Vec<&str>)> = vec![
        (
            "parent",
            with("../x", Some(b"boom")),
            vec!["\"../x\"", "leaves the export"],
        ),
        (
            "deep-parent",
            with("general/../../x.json", Some(b"[]")),
            vec!["general/../../x.json", "leaves the export"],
        ),
        (
            "absolute",
            with("/etc/x", Some(b"boom")),
            vec!["\"/etc/x\"", "absolute path"],
        ),
        (
            "bomb",
            with("general/2024-01-17.json", Some(&bomb)),
            vec!["general/2024-01-17.json", "past the limit", "zip bomb"],
        ),
        (
            "json",
            with("general/2024-01-16.json", Some(bad_json)),
            vec!["general/2024-01-16.json: invalid JSON", "line 1 column"],
        ),
        (
            "shape",
            with("channels.json", Some(br#"{"id":"C1"}"#)),
            vec!["channels.json: unexpected JSON", "line 1 column"],
        ),
        ("users", with("users.json", None), vec!["no users.json"]),
    ];
    for (case, entries, says) in &cases {
        let zip = dir.join(format!("{case}.zip"));
        write_zip(&zip, entries);
        if *case == "bomb" {
            let size = std::fs::metadata(&zip).unwrap().len();
            assert!(size < 1 << 20, "the bomb's zip is small: {size} bytes");
        }
        refused(&missing, &zip, says, &[]).await;
        assert!(!missing.join("hearth.sqlite3").exists(), "{case}");
        refused(&empty, &zip, says, &[]).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_symbolic_link_and_an_export_past_its_total_limit_are_refused() {
    let dir = temp_dir("slack-link");
    let (missing, empty) = targets(&dir).await;
    let link_zip = dir.join("link.zip");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&link_zip).unwrap());
    let options = zip::write::SimpleFileOptions::default();
    for (name, bytes) in fixture() {
        zip.start_file(name, options).unwrap();
        zip.write_all(&bytes).unwrap();
    }
    zip.add_symlink("general/2024-01-18.json", "/etc/passwd", options)
        .unwrap();
    zip.finish().unwrap();
    let says = ["\"general/2024-01-18.json\"", "is a symbolic link"];
    refused(&missing, &link_zip, &says, &[]).await;
    refused(&empty, &link_zip, &says, &[]).await;

    // The whole export's bound (`--max-export-bytes`): the fixture inflates to some 10 KB.
    let good = dir.join("good.zip");
    write_zip(&good, &fixture());
    let says = ["inflate to more than the limit of 4096 bytes"];
    refused(&empty, &good, &says, &["--max-export-bytes", "4096"]).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_team_is_refused_without_replace_and_replaced_with_it() {
    let dir = temp_dir("slack-team");
    let good = dir.join("good.zip");
    write_zip(&good, &fixture());
    let team = dir.join("team");
    std::fs::create_dir_all(&team).unwrap();
    assert!(import(&team, &good, &[]).await.ok);
    refused(&team, &good, &["already holds a team", "--replace"], &[]).await;
    let dry = import(&team, &good, &["--dry-run"]).await;
    assert!(
        dry.ok && dry.stdout.contains("already holds a team"),
        "{}",
        dry.stdout
    );
    let replaced = import(&team, &good, &["--replace"]).await;
    assert!(replaced.ok, "{}", replaced.stderr);
    let db = sqlx::SqlitePool::connect(&format!(
        "sqlite:{}?mode=ro",
        team.join("hearth.sqlite3").display()
    ))
    .await
    .unwrap();
    let counts: (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT COUNT(*) FROM users), (SELECT COUNT(*) FROM messages), \
         (SELECT COUNT(*) FROM accounts), (SELECT COUNT(*) FROM message_search_index)",
    )
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!(
        counts,
        (7, 16, 1, 16),
        "the team was replaced, not added to"
    );
    db.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
