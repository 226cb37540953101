//! `hearth import campfire --from DIR`: a Campfire `storage/` directory
//! (`db/production.sqlite3` and the disk service's `files/`) into Hearth, ids kept, so every
//! permalink (`/rooms/:id/@:message_id`) and bookmark of the team still lands.
//!
//! The steps, each of which refuses bad input before anything is written:
//! 1. [`source`]: the database is opened read-only (never changed), checked whole (its header
//!    against its size, SQLite's `quick_check`), its schema version must be one this Hearth
//!    reads ([`source::KNOWN_SCHEMA_VERSIONS`]), every table and column read must be there and
//!    every value one Rails writes ([`tables::VALUE_CHECKS`], datetimes).
//! 2. [`target`]: a database that already holds a team is refused unless `--replace`.
//! 3. [`files`]: every blob's file must be there with its size. `--dry-run` then checks every
//!    checksum, prints the rows per table it would write, and stops.
//! 4. The files are staged beside their place in Hearth's storage, checksums checked, with the
//!    image variants Hearth draws and Campfire lacks ([`variants`]: avatars, the logo).
//! 5. Hearth's database is opened and migrated as `hearth serve` does ([`crate::db::open`]),
//!    and in ONE transaction every table is copied ([`tables::TABLES`], the column mapping is
//!    written there), the derived data filled ([`derived`]: plain texts, the search index, the
//!    id sequences), and the rows per table checked against the source's.
//! 6. After the commit the files are moved into place and each checked again.
//!
//! Interrupted (SIGINT, SIGTERM: [`interrupt`]) or refused at any step, the target is as it
//! was: a database file the import made is removed, staged files and directories it made too.
//! (An existing database of an older Hearth keeps the migrations `hearth serve` would have
//! applied to it.)

pub mod derived;
pub mod files;
pub mod interrupt;
pub mod source;
pub mod tables;
pub mod target;
pub mod variants;

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context as _};
use rusqlite::Connection;

use super::{Counts, Options, Progress, Target};
use files::{BlobFile, MadeDirs};
use interrupt::Interrupt;
use source::Storage;

/// What the checks found: the rows each table will get, what has no place, the files.
#[derive(Debug)]
pub struct Plan {
    /// Campfire's schema version.
    pub version: String,
    /// Rows per Hearth table the import writes.
    pub rows: Counts,
    /// Rows of Campfire's that have no place in Hearth: (table, how many, why).
    pub skipped: Vec<(&'static str, u64, &'static str)>,
    /// Every blob's file.
    pub files: Vec<BlobFile>,
    /// The target before the import.
    pub before: target::Before,
    /// The image variants Hearth draws that Campfire's database lacks.
    pub variants: Vec<variants::Wanted>,
}

impl Plan {
    /// Bytes of all files.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.byte_size).sum()
    }

    /// Rows of every table.
    pub fn total_rows(&self) -> u64 {
        self.rows.0.values().sum()
    }

    /// The counts printed: rows per table (with the variants to make), `files`, `bytes` and
    /// `variants_made`.
    pub fn counts(&self) -> Counts {
        let mut counts = self.rows.clone();
        for table in VARIANT_TABLES {
            counts.add(table, self.variants.len() as u64);
        }
        counts.add("files", self.files.len() as u64);
        counts.add("bytes", self.bytes());
        counts.add("variants_made", self.variants.len() as u64);
        counts
    }
}

/// The tables each variant made adds a row to (its blob, its record, the record's image).
const VARIANT_TABLES: [&str; 3] = [
    "active_storage_blobs",
    "active_storage_variant_records",
    "active_storage_attachments",
];

/// Imports the Campfire `storage/` directory `from` into `target`; returns the rows per table
/// written (verified against the source's), `files` and `bytes` (each file's checksum
/// verified) and `variants_made`. Prints what it found and did on standard output, what it
/// skipped and the progress on standard error.
/// With `options.dry_run`, checks everything, writes nothing and returns what it would write.
///
/// # Errors
/// Any check of the source or the target (the message names the problem: a truncated or
/// damaged database, a schema version this Hearth does not read, a value Rails does not write,
/// a missing file, a checksum mismatch, a target that holds a team without `--replace`), or a
/// failure while writing; the target is then as it was.
pub async fn import(from: &Path, target: &Target, options: Options) -> anyhow::Result<Counts> {
    let started = Instant::now();
    super::refuse_open_database(&target.database)?;
    let interrupt = Interrupt::listen();
    let storage = Storage::at(from)?;
    refuse_same_file(&storage, &target.database)?;
    let plan = blocking({
        let (storage, database) = (storage.clone(), target.database.clone());
        move || plan(&storage, &database, options)
    })
    .await?;
    interrupt.check()?;
    report_plan(&storage, &plan);
    if options.dry_run {
        let (files, total, interrupt) = (plan.files.clone(), plan.bytes(), interrupt.clone());
        blocking(move || {
            let mut progress = Progress::new("checking files", total, options.progress);
            files::check_sums(&files, &mut progress, &interrupt)?;
            progress.finish();
            Ok(())
        })
        .await?;
        println!(
            "Dry run: every check passed and nothing was written. It would make {} image \
             variants Hearth draws, and import:",
            plan.variants.len()
        );
        return Ok(plan.counts());
    }
    let (written, made) = write(&storage, target, &plan, options, &interrupt).await?;
    let mut placed = plan.files.clone();
    placed.extend(made.iter().map(|m| m.file.clone()));
    let removed = files::remove_replaced(&plan.before.blob_keys, &placed, &target.storage_root);
    if removed > 0 {
        eprintln!("removed {removed} files of the replaced team's blobs");
    }
    let root = target.storage_root.clone();
    blocking(move || files::verify_placed(&placed, &root)).await?;
    let secs = started.elapsed().as_secs_f64().max(1e-3);
    println!(
        "Imported and verified in {secs:.2} s ({:.0} rows/s, {:.0} messages/s): the rows per \
         table equal the source's (Active Storage's plus the {} variants made), and every \
         file's checksum its blob's.",
        written.0.values().sum::<u64>() as f64 / secs,
        written.get("messages") as f64 / secs,
        made.len()
    );
    let mut counts = written;
    counts.add("files", plan.files.len() as u64);
    counts.add("bytes", plan.bytes());
    counts.add("variants_made", made.len() as u64);
    Ok(counts)
}

/// Runs `job` on the blocking pool.
async fn blocking<T: Send + 'static>(
    job: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> anyhow::Result<T> {
    tokio::task::spawn_blocking(job).await?
}

fn refuse_same_file(storage: &Storage, database: &Path) -> anyhow::Result<()> {
    if database
        .canonicalize()
        .is_ok_and(|target| target == storage.database)
    {
        bail!(
            "{}: the target database is Campfire's own; import into another file",
            database.display()
        );
    }
    Ok(())
}

/// Every check made before writing, and what the import will write.
fn plan(storage: &Storage, database: &Path, options: Options) -> anyhow::Result<Plan> {
    let conn = source::attached(storage)?;
    source::check_whole(storage, &conn)?;
    let version = source::check_version(storage, &conn)?;
    source::check_columns(&conn, tables::READ)?;
    check_values(&conn)?;
    source::note_refused_pushes(&conn)?;
    let (rows, skipped) = count_rows(&conn)?;
    let before = target::look(database)?;
    if before.team_rows > 0 && !options.replace {
        bail!(
            "{}: the database already holds a team ({} users); pass --replace to replace it",
            database.display(),
            before.users
        );
    }
    let files = files::list(&conn, storage)?;
    files::check_present(&files, &storage.files)?;
    let variants = variants::wanted(&conn, &files)?;
    Ok(Plan {
        version,
        rows,
        skipped,
        files,
        before,
        variants,
    })
}

/// Checks every value the copy reads (datetimes, enums, JSON, …); refuses with up to ten
/// problems named.
fn check_values(conn: &Connection) -> anyhow::Result<()> {
    let mut problems = Vec::new();
    let mut note = |table: &str, column: &str, condition: &str, what: &str| {
        let found = source::offenders(conn, table, column, condition, 3)?;
        for (id, value) in found {
            problems.push(format!("{table}.{column} of row {id} is {value}: {what}"));
        }
        anyhow::Ok(())
    };
    for table in tables::TABLES {
        for column in table.datetimes {
            let condition = tables::not_a_datetime(column);
            note(
                table.name,
                column,
                &condition,
                "not a datetime as Rails writes one",
            )?;
        }
    }
    for (table, column, condition, what) in tables::VALUE_CHECKS {
        note(table, column, condition, what)?;
    }
    if problems.is_empty() {
        return Ok(());
    }
    problems.truncate(10);
    bail!(
        "Campfire's database holds values this import does not read:\n  {}",
        problems.join("\n  ")
    )
}

/// Rows per table the import will write, and those with no place in Hearth.
#[allow(clippy::type_complexity)]
fn count_rows(
    conn: &Connection,
) -> anyhow::Result<(Counts, Vec<(&'static str, u64, &'static str)>)> {
    let mut rows = Counts::default();
    let mut skipped = Vec::new();
    let mut tally = |name: &'static str, all: &str, kept: &str, why: &'static str| {
        let (all, kept) = (source::count(conn, all)?, source::count(conn, kept)?);
        rows.add(name, kept);
        if all > kept {
            skipped.push((name, all - kept, why));
        }
        anyhow::Ok(())
    };
    for table in tables::TABLES {
        let all = format!("FROM {}.{}", source::SCHEMA, table.name);
        tally(table.name, &all, &table.kept_rows(), table.skipped_because)?;
    }
    let all = format!("FROM {}.action_text_rich_texts", source::SCHEMA);
    tally(
        "action_text_rich_texts",
        &all,
        tables::RICH_TEXTS_KEPT,
        tables::RICH_TEXTS_SKIPPED_BECAUSE,
    )?;
    Ok((rows, skipped))
}

fn report_plan(storage: &Storage, plan: &Plan) {
    println!(
        "Campfire (schema {}) at {}: {} rows, {} files ({} bytes)",
        plan.version,
        storage.database.display(),
        plan.total_rows(),
        plan.files.len(),
        plan.bytes()
    );
    for (table, n, why) in &plan.skipped {
        eprintln!("skipped {n} rows of {table}: {why} (no place in Hearth)");
    }
}

/// Stages the files, migrates the target, copies everything in one transaction and moves the
/// files into place; on any failure removes what it made.
async fn write(
    storage: &Storage,
    target: &Target,
    plan: &Plan,
    options: Options,
    interrupt: &Interrupt,
) -> anyhow::Result<(Counts, Vec<variants::Made>)> {
    let (staged, made) = blocking({
        let (files, root, total) = (
            plan.files.clone(),
            target.storage_root.clone(),
            plan.bytes(),
        );
        let (wanted, interrupt) = (plan.variants.clone(), interrupt.clone());
        move || {
            let mut progress = Progress::new("copying files", total, options.progress);
            let mut staged = files::stage(&files, &root, &mut progress, &interrupt)?;
            progress.finish();
            let mut progress =
                Progress::new("making variants", wanted.len() as u64, options.progress);
            let made = variants::make(&wanted, &mut staged, &mut progress, &interrupt)?;
            progress.finish();
            Ok((staged, made))
        }
    })
    .await?;
    let parent = target.database.parent().unwrap_or(Path::new(""));
    let made_dirs = MadeDirs::around(parent);
    let copied = copy_rows(storage, target, plan, &made, options, interrupt).await;
    match copied {
        Ok(written) => {
            staged.commit().context("moving the files into place")?;
            made_dirs.keep();
            Ok((written, made))
        }
        Err(e) => {
            if !plan.before.exists {
                target::remove_made(&target.database);
            }
            drop(staged);
            drop(made_dirs);
            Err(e)
        }
    }
}

/// Migrates the target as `hearth serve` does, then copies every table in one transaction.
async fn copy_rows(
    storage: &Storage,
    target: &Target,
    plan: &Plan,
    made: &[variants::Made],
    options: Options,
    interrupt: &Interrupt,
) -> anyhow::Result<Counts> {
    let pool = crate::db::open(&target.database)
        .await
        .with_context(|| format!("opening {}", target.database.display()))?;
    pool.close().await;
    let (storage, database) = (storage.clone(), target.database.clone());
    // Every table's rows, then one plain text per message body.
    let (mut expected, total) = (plan.rows.clone(), plan.total_rows());
    for table in VARIANT_TABLES {
        expected.add(table, made.len() as u64);
    }
    let (made, interrupt) = (made.to_vec(), interrupt.clone());
    blocking(move || {
        let mut conn = target::open(&database)?;
        source::attach(&conn, &storage)?;
        source::note_refused_pushes(&conn)?;
        let mut progress = Progress::new("copying rows", total, options.progress);
        let written = transaction(
            &mut conn,
            &expected,
            &made,
            options,
            &mut progress,
            &interrupt,
        );
        progress.finish();
        conn.execute_batch(&format!("DETACH DATABASE {}", source::SCHEMA))?;
        written
    })
    .await
}

/// The import's one transaction: rows, derived data, sequences, and the check of the rows per
/// table against `expected` before the commit.
fn transaction(
    conn: &mut Connection,
    expected: &Counts,
    made: &[variants::Made],
    options: Options,
    progress: &mut Progress,
    interrupt: &Interrupt,
) -> anyhow::Result<Counts> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let triggers = derived::suspend_triggers(&tx)?;
    if options.replace {
        target::clear(&tx)?;
    }
    for table in tables::TABLES {
        interrupt.check()?;
        let n = table
            .copy(&tx)
            .with_context(|| format!("copying {}", table.name))?;
        progress.inc(n as u64);
    }
    // Past every id Campfire handed out before the made variants take theirs.
    derived::sequences(&tx).context("setting the id sequences")?;
    variants::insert(&tx, made).context("writing the variants made")?;
    derived::plain_texts(&tx, progress, interrupt).context("writing the plain texts")?;
    derived::search_index(&tx).context("filling the search index")?;
    derived::custom_styles(&tx)?;
    derived::sequences(&tx).context("setting the id sequences")?;
    derived::restore_triggers(&tx, &triggers)?;
    let written = written_rows(&tx)?;
    if &written != expected {
        bail!("the rows written differ from the source's: wrote\n{written}expected\n{expected}");
    }
    interrupt.check()?;
    tx.commit()?;
    Ok(written)
}

/// Rows per table now in Hearth's database (`action_text_rich_texts`: messages with a body).
fn written_rows(conn: &Connection) -> anyhow::Result<Counts> {
    let mut counts = Counts::default();
    for table in tables::TABLES {
        let n: i64 = conn.query_row(
            &format!("SELECT COUNT(*) FROM main.{}", table.name),
            [],
            |row| row.get(0),
        )?;
        counts.add(table.name, u64::try_from(n).unwrap_or(0));
    }
    let n: i64 = conn.query_row(
        "SELECT COUNT(*) FROM main.messages WHERE body <> ''",
        [],
        |row| row.get(0),
    )?;
    counts.add("action_text_rich_texts", u64::try_from(n).unwrap_or(0));
    Ok(counts)
}
