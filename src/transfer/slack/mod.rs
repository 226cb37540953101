//! `hearth import slack --from EXPORT.zip`: Slack's workspace export into Hearth.
//!
//! The export (Slack's help article "How to read Slack data exports": `users.json`,
//! `channels.json`, `groups.json`, `dms.json`, `mpims.json` and a folder of `YYYY-MM-DD.json`
//! files per conversation) is read twice, never unpacked:
//!
//! 1. Every entry is checked ([`archive`]: no `../` or absolute names, no symbolic links,
//!    bounded sizes) and every JSON file parsed ([`shapes`]); who and what the import will
//!    write is planned and counted ([`people`], [`rooms`], [`threads`]). A malformed export is
//!    refused here, before the database is opened. `--dry-run` stops here and prints the
//!    counts.
//! 2. The database is looked at read-only ([`target`]) and refused if it holds a team, unless
//!    `--replace`; then opened and migrated as `hearth serve` opens it, and written in one
//!    transaction ([`mod@write`]): the account, users, rooms and memberships, then each
//!    conversation's messages ([`messages`], bodies from [`mrkdwn`]) with their boosts, then
//!    the search index. The counts per table are read back and compared before the commit.
//!
//! After the commit each active person's transfer link is printed ([`links`]): nobody has a
//! password yet. Ids are new (Slack's are not numbers).

pub mod archive;
pub mod emoji;
pub mod links;
pub mod messages;
pub mod mrkdwn;
pub mod people;
pub mod rooms;
pub mod shapes;
pub mod target;
pub mod threads;
pub mod write;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sqlx::SqliteConnection;

use super::{Counts, Options, Progress, Target};
use crate::db::{Role, Status};
use crate::rails::{KdfDigest, SignedGlobalIds, ATTACHABLE_PURPOSE};
use archive::{Archive, Limits};
use people::People;
use rooms::Room;
use shapes::{Conversation, Message, User};

/// What the Slack import needs besides its source and target.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `SECRET_KEY_BASE`, as `hearth serve` is given it; None: the one kept in `data_dir`
    /// (created there when missing, as `hearth serve` does).
    pub secret_key_base: Option<String>,
    /// The data directory (`--data-dir`).
    pub data_dir: PathBuf,
    /// The key generator's digest (`--key-generator-digest`).
    pub key_generator_digest: KdfDigest,
    /// The GlobalID app of mentions' signed ids (`--gid-app`).
    pub gid_app: String,
    /// The server's address for the printed links (`https://chat.example.com`); empty: paths.
    pub origin: String,
    /// The account's name; None: from the zip's name (`Acme Slack export …` → `Acme`).
    pub account_name: Option<String>,
    /// The bounds on what the zip inflates to.
    pub limits: Limits,
    /// How long the printed links sign in.
    pub link_validity: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            secret_key_base: None,
            data_dir: PathBuf::from("storage"),
            key_generator_digest: KdfDigest::Sha256,
            gid_app: "campfire".to_owned(),
            origin: String::new(),
            account_name: None,
            limits: Limits::default(),
            link_validity: crate::web::links::TRANSFER_LINK_EXPIRY,
        }
    }
}

/// What the import did (or, with `--dry-run`, would do).
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Rows per table.
    pub counts: Counts,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// Each active person's sign-in link, by name.
    pub links: Vec<links::Link>,
    /// When the links expire.
    pub links_expire: Option<SystemTime>,
    /// What else the administrator should know (skipped messages, decisions).
    pub notes: Vec<String>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.dry_run {
            writeln!(f, "Dry run: nothing was written. The import would write:")?;
        } else {
            writeln!(f, "Imported, rows per table (verified in the database):")?;
        }
        write!(f, "{}", self.counts)?;
        for note in &self.notes {
            writeln!(f, "Note: {note}")?;
        }
        if self.links.is_empty() {
            return Ok(());
        }
        let until = self
            .links_expire
            .map(|t| {
                let ms = crate::rails::time::unix_nanos(t) / 1_000_000;
                crate::render::iso8601(i64::try_from(ms).unwrap_or(i64::MAX))
            })
            .unwrap_or_default();
        writeln!(
            f,
            "Sign-in links (nobody has a password yet; valid until {until}, then an administrator \
             makes a new one on the person's profile page):"
        )?;
        for link in &self.links {
            let email = link.email.as_deref().unwrap_or("no address");
            writeln!(f, "  {} <{email}>  {}", link.name, link.url)?;
        }
        Ok(())
    }
}

/// Imports the Slack export `from` into `target` (see the [module docs](self)).
///
/// # Errors
/// The export is refused (its entries, a missing `users.json`, invalid JSON: the message names
/// the file and the position); the target holds a team and `options.replace` is not set; the
/// secret cannot be read; a database failure. The target is left as it was in every case.
pub async fn import(
    from: &Path,
    target: &Target,
    options: Options,
    settings: &Settings,
) -> anyhow::Result<Report> {
    super::refuse_open_database(&target.database)?;
    let mut export = Export::read(from, settings)?;
    let survey = export.survey(options.progress)?;
    let mut report = Report {
        counts: survey.counts.clone(),
        dry_run: options.dry_run,
        notes: survey.notes.clone(),
        ..Report::default()
    };
    let found = target::look(&target.database).await?;
    if found == target::Found::Team && !options.replace {
        if options.dry_run {
            report
                .notes
                .push(target::refuse_team(&target.database).to_string());
            return Ok(report);
        }
        return Err(target::refuse_team(&target.database));
    }
    if options.dry_run {
        return Ok(report);
    }
    let secret = crate::state::find_secret_key_base(
        settings.secret_key_base.as_deref(),
        false,
        &settings.data_dir,
    )?;
    let created = target::Created::new(&target.database, found);
    let pool = crate::db::open(&target.database).await?;
    let written = export
        .write(&pool, &survey, &secret, settings, options.progress)
        .await;
    pool.close().await;
    let written = written?;
    created.keep();
    report.notes.extend(written.notes);
    let signer = links::Signer::new(
        &secret,
        settings.key_generator_digest,
        &settings.origin,
        settings.link_validity,
    );
    report.links_expire = Some(signer.expires_at());
    report.links = export.links(&written.user_ids, &signer);
    Ok(report)
}

/// The account's name from the zip's file name: what comes before ` Slack export`, else the
/// whole stem.
fn account_name(from: &Path) -> String {
    let stem = from
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = stem.split(" Slack export").next().unwrap_or(&stem).trim();
    if name.is_empty() {
        "Slack".to_owned()
    } else {
        name.to_owned()
    }
}

/// The export, opened and planned.
struct Export {
    archive: Archive,
    people: People,
    rooms: Vec<Room>,
    /// The folder each room's day files are in, if any.
    folders: Vec<Option<String>>,
    account: String,
}

/// What the first pass found: the counts per table and the notes.
#[derive(Debug, Clone)]
struct Survey {
    counts: Counts,
    notes: Vec<String>,
}

/// What the write produced: the users' ids, in [`People::list`]'s order.
struct Written {
    user_ids: Vec<i64>,
    notes: Vec<String>,
}

impl Export {
    /// Opens the zip and reads the users and the four conversation lists.
    fn read(from: &Path, settings: &Settings) -> anyhow::Result<Self> {
        let mut archive = Archive::open(from, settings.limits)?;
        let users_file = if archive.has("users.json") {
            "users.json"
        } else {
            "org_users.json"
        };
        let users: Vec<User> = archive.read_json(users_file)?;
        let mut lists = rooms::Lists::default();
        for (file, list) in [
            ("channels.json", &mut lists.channels),
            ("groups.json", &mut lists.groups),
            ("dms.json", &mut lists.dms),
            ("mpims.json", &mut lists.mpims),
        ] {
            *list = archive
                .read_optional_json::<Vec<Conversation>>(file)?
                .unwrap_or_default();
        }
        let mut people = People::from_users(&users);
        let rooms = rooms::plan(&lists, &mut people);
        let folders = rooms
            .iter()
            .map(|r| r.folders.iter().find(|f| archive.has_folder(f)).cloned())
            .collect();
        Ok(Self {
            archive,
            people,
            rooms,
            folders,
            account: settings
                .account_name
                .clone()
                .unwrap_or_else(|| account_name(from)),
        })
    }

    /// The messages of room `i`'s conversation, day file by day file.
    fn conversation(&mut self, i: usize) -> anyhow::Result<Vec<Message>> {
        let Some(folder) = &self.folders[i] else {
            return Ok(Vec::new());
        };
        let mut all = Vec::new();
        for day in self.archive.day_files(folder) {
            let messages: Vec<Message> = self.archive.read_json(&day)?;
            all.extend(messages);
        }
        Ok(all)
    }

    /// The first pass: every conversation read and planned, rows counted.
    fn survey(&mut self, progress: bool) -> anyhow::Result<Survey> {
        let mut notes = std::mem::take(&mut self.people.notes);
        let mut progress = Progress::new("reading the export", self.rooms.len() as u64, progress);
        let (mut messages, mut boosts, mut events, mut empty) = (0u64, 0u64, 0u64, 0u64);
        for i in 0..self.rooms.len() {
            let all = self.conversation(i)?;
            let order = threads::order(&all);
            events += all.iter().filter(|m| !threads::is_kept(m)).count() as u64;
            for item in &order {
                let m = &all[item.index];
                if !messages::has_content(m) {
                    empty += 1;
                    continue;
                }
                self.people.author(m);
                boosts += messages::boosts(m, &mut self.people).len() as u64;
                messages += 1;
            }
            progress.inc(1);
        }
        progress.finish();
        let used: HashSet<&str> = self.folders.iter().flatten().map(String::as_str).collect();
        for folder in self.archive.folders() {
            if !used.contains(folder.as_str()) {
                notes.push(format!(
                    "the folder {folder}/ matches no conversation of the export's lists: skipped"
                ));
            }
        }
        if events > 0 || empty > 0 {
            notes.push(format!(
                "skipped {events} events Slack records as messages (joins, leaves, topic and \
                 name changes, pins, …) and {empty} messages with nothing to show"
            ));
        }
        let mut counts = Counts::default();
        counts.add("accounts", 1);
        counts.add("users", self.people.list.len() as u64);
        counts.add("rooms", self.rooms.len() as u64);
        counts.add(
            "memberships",
            self.rooms.iter().map(|r| r.members.len() as u64).sum(),
        );
        counts.add("messages", messages);
        counts.add("boosts", boosts);
        counts.add("message_search_index", messages);
        Ok(Survey { counts, notes })
    }

    /// The second pass: everything written in one transaction, counts verified, committed.
    async fn write(
        &mut self,
        pool: &sqlx::SqlitePool,
        survey: &Survey,
        secret: &str,
        settings: &Settings,
        progress: bool,
    ) -> anyhow::Result<Written> {
        let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
        let mut notes = Vec::new();
        let replaced_blobs = write::replace_team(&mut tx).await?;
        if replaced_blobs > 0 {
            notes.push(format!(
                "the replaced team's {replaced_blobs} stored files stay in the storage root, \
                 unreferenced"
            ));
        }
        let now = crate::db::now_ms();
        write::account(&mut tx, &self.account, now).await?;
        let user_ids = write::users(&mut tx, &self.people.list, now).await?;
        let (room_ids, _) = write::rooms(&mut tx, &self.rooms, &user_ids).await?;
        let names = Names::new(
            &self.people,
            &user_ids,
            &self.rooms,
            &room_ids,
            settings,
            secret,
        );
        let total = survey.counts.get("messages");
        let mut progress = Progress::new("importing messages", total, progress);
        for (i, &room_id) in room_ids.iter().enumerate() {
            self.write_conversation(&mut tx, i, room_id, &user_ids, &names, &mut progress)
                .await?;
        }
        progress.finish();
        write::derived(&mut tx).await?;
        verify(&mut tx, &survey.counts).await?;
        tx.commit().await?;
        Ok(Written { user_ids, notes })
    }

    /// Writes room `i`'s messages, threads beside their parents.
    async fn write_conversation(
        &mut self,
        conn: &mut SqliteConnection,
        i: usize,
        room_id: i64,
        user_ids: &[i64],
        names: &Names,
        progress: &mut Progress,
    ) -> anyhow::Result<()> {
        let all = self.conversation(i)?;
        let slack_id = self.rooms[i].slack_id.clone();
        let mut parents: HashMap<usize, messages::Parent> = HashMap::new();
        let mut cids = HashSet::new();
        for item in threads::order(&all) {
            let m = &all[item.index];
            if !messages::has_content(m) {
                continue;
            }
            let parent = item.parent.and_then(|p| parents.get(&p));
            let row = messages::row(m, &item, room_id, parent, &mut self.people, names);
            let mut cid = format!("slack-{slack_id}-{}", m.ts.replace('.', "-"));
            let mut n = 1;
            while !cids.insert(cid.clone()) {
                n += 1;
                cid = format!("slack-{slack_id}-{}-{n}", m.ts.replace('.', "-"));
            }
            let id = write::message(conn, room_id, &cid, &row, user_ids).await?;
            if item.parent.is_none() {
                let author = &self.people.list[row.author].name;
                parents.insert(item.index, messages::Parent::new(id, author, &row.body));
            }
            progress.inc(1);
        }
        Ok(())
    }

    /// The sign-in links of the active people, by name.
    fn links(&self, user_ids: &[i64], signer: &links::Signer) -> Vec<links::Link> {
        let mut out: Vec<links::Link> = self
            .people
            .list
            .iter()
            .zip(user_ids)
            .filter(|(p, _)| p.status == Status::Active && p.role != Role::Bot)
            .map(|(p, &id)| links::Link {
                name: p.name.clone(),
                email: p.email.clone(),
                url: signer.link(id),
            })
            .collect();
        out.sort_by_key(|a| a.name.to_lowercase());
        out
    }
}

/// Compares the rows each table holds with `expected`: the import wrote what it planned.
async fn verify(conn: &mut SqliteConnection, expected: &Counts) -> anyhow::Result<()> {
    for (table, found) in write::count(conn).await? {
        let wanted = expected.get(table);
        anyhow::ensure!(
            found == wanted,
            "verification failed: {table} holds {found} rows, the import planned {wanted}; \
             nothing was written"
        );
    }
    Ok(())
}

/// What message texts name, as the written rows are: people (with their mentions' signed ids)
/// and rooms.
struct Names {
    people: HashMap<String, (i64, String)>,
    rooms: HashMap<String, (i64, String)>,
    sgids: SignedGlobalIds,
}

impl Names {
    fn new(
        people: &People,
        user_ids: &[i64],
        rooms: &[Room],
        room_ids: &[i64],
        settings: &Settings,
        secret: &str,
    ) -> Self {
        Self {
            people: people
                .list
                .iter()
                .zip(user_ids)
                .map(|(p, &id)| (p.key.clone(), (id, p.name.clone())))
                .collect(),
            rooms: rooms
                .iter()
                .zip(room_ids)
                .filter_map(|(r, &id)| Some((r.slack_id.clone(), (id, r.name.clone()?))))
                .collect(),
            sgids: SignedGlobalIds::from_secret_key_base(
                secret.as_bytes(),
                settings.key_generator_digest,
                &settings.gid_app,
            ),
        }
    }
}

impl mrkdwn::Resolve for Names {
    fn person(&self, slack_id: &str) -> Option<(String, crate::rich_text::Person)> {
        let (id, name) = self.people.get(slack_id)?;
        Some((
            self.sgids.sign("User", *id, ATTACHABLE_PURPOSE),
            crate::rich_text::Person {
                id: *id,
                name: name.clone(),
            },
        ))
    }

    fn room(&self, slack_id: &str) -> Option<(i64, String)> {
        self.rooms.get(slack_id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_account_is_named_after_the_export() {
        assert_eq!(
            account_name(Path::new(
                "/x/Acme Corp Slack export Jan 1 2024 - Feb 1 2024.zip"
            )),
            "Acme Corp"
        );
        assert_eq!(account_name(Path::new("team.zip")), "team");
        assert_eq!(account_name(Path::new(" Slack export.zip")), "Slack");
    }
}
