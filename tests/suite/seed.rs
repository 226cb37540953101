//! Tests of the deterministic seed (`hearth::db::seed`) against real, migrated SQLite files.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use hearth::db::seed::{
    is_empty, seed, SeedOptions, SeedReport, BENDER_BOT_TOKEN, FIRST_GENERATED_USER_ID,
    GENERATED_PASSWORD, MAIN_ROOM_ID, MAIN_ROOM_MESSAGES, NAMED_PASSWORD,
};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::SqlitePool;

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "hearth-seed-test-{}-{n}-{label}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create temp dir");
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A migrated, empty database file in its own temp dir.
async fn fresh_db(label: &str) -> (TempDir, SqlitePool) {
    let dir = TempDir::new(label);
    let options = SqliteConnectOptions::new()
        .filename(dir.0.join("hearth.sqlite3"))
        .create_if_missing(true)
        .foreign_keys(true);
    let pool = SqlitePool::connect_with(options).await.expect("open db");
    sqlx::migrate!("./migrations")
        .run(&pool)
        .await
        .expect("migrate");
    (dir, pool)
}

fn options(users: usize) -> SeedOptions {
    SeedOptions {
        users,
        ..SeedOptions::default()
    }
}

async fn count(pool: &SqlitePool, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.expect(sql)
}

#[tokio::test]
async fn default_options_are_1000_users_at_cost_4() {
    let opts = SeedOptions::default();
    assert_eq!(opts.users, 1000);
    assert_eq!(opts.generated_bcrypt_cost, 4);
}

#[tokio::test]
async fn seeds_an_empty_database_with_50_users() {
    let (_dir, pool) = fresh_db("fifty").await;
    assert!(is_empty(&pool).await.unwrap());

    let report = seed(&pool, &options(50)).await.expect("seed");
    assert_eq!(
        report,
        SeedReport {
            users: 57,
            rooms: 6,
            messages: report.messages,
            main_room_id: 1,
            main_room_messages: 169,
        }
    );
    assert!(!is_empty(&pool).await.unwrap());
    assert_eq!(count(&pool, "SELECT COUNT(*) FROM users").await, 57);
    assert_eq!(count(&pool, "SELECT COUNT(*) FROM rooms").await, 6);
    assert_eq!(
        count(&pool, "SELECT COUNT(*) FROM messages").await,
        report.messages as i64
    );
    assert!(report.messages > MAIN_ROOM_MESSAGES);

    // Room 1 is "All Talk", open, and holds exactly 169 messages.
    let (name, kind): (String, String) =
        sqlx::query_as("SELECT name, kind FROM rooms WHERE id = ?")
            .bind(MAIN_ROOM_ID)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!((name.as_str(), kind.as_str()), ("All Talk", "open"));
    assert_eq!(
        count(&pool, "SELECT COUNT(*) FROM messages WHERE room_id = 1").await,
        169
    );

    // Every user, named and generated, bots included, is a member of room 1.
    assert_eq!(
        count(
            &pool,
            "SELECT COUNT(*) FROM users WHERE id NOT IN \
             (SELECT user_id FROM memberships WHERE room_id = 1)"
        )
        .await,
        0
    );
    assert_eq!(
        count(&pool, "SELECT COUNT(*) FROM memberships WHERE room_id = 1").await,
        57
    );
    assert_eq!(
        count(
            &pool,
            "SELECT COUNT(*) FROM memberships WHERE room_id = 1 AND involvement <> 'mentions'"
        )
        .await,
        0
    );
}

#[tokio::test]
async fn generated_users_share_one_2a_cost_4_digest_of_password() {
    let (_dir, pool) = fresh_db("generated").await;
    seed(&pool, &options(50)).await.unwrap();

    let rows: Vec<(i64, String, String, String, String, String)> = sqlx::query_as(
        "SELECT id, name, email_address, password_digest, role, status FROM users \
         WHERE email_address LIKE 'user%@example.com' ORDER BY id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 50);
    let digest = rows[0].3.clone();
    assert!(digest.starts_with("$2a$04$"), "{digest}");
    assert_eq!(digest.len(), 60);
    assert!(bcrypt::verify(GENERATED_PASSWORD, &digest).unwrap());
    assert!(!bcrypt::verify(NAMED_PASSWORD, &digest).unwrap());
    // Fixed salt: the same digest on every run, in every process.
    assert_eq!(
        digest,
        "$2a$04$PKfOFAuCh73OkJOmE98rueYRPWaSXaFPQwrBtcDI6fvB9ydpepr3W"
    );
    for (i, (id, name, email, row_digest, role, status)) in rows.iter().enumerate() {
        let n = i + 1;
        assert_eq!(*id, FIRST_GENERATED_USER_ID + i as i64);
        assert_eq!(name, &hearth::db::seed::generated_user_name(n));
        assert_eq!(email, &format!("user{n}@example.com"));
        assert_eq!(row_digest, &digest);
        assert_eq!((role.as_str(), status.as_str()), ("member", "active"));
    }
}

#[tokio::test]
async fn named_users_bot_and_inactive_users() {
    let (_dir, pool) = fresh_db("named").await;
    seed(&pool, &options(3)).await.unwrap();

    let mut digests = std::collections::BTreeSet::new();
    for email in [
        "david@example.com",
        "jason@example.com",
        "jz@example.com",
        "kevin@example.com",
    ] {
        let digest: String =
            sqlx::query_scalar("SELECT password_digest FROM users WHERE email_address = ?")
                .bind(email)
                .fetch_one(&pool)
                .await
                .unwrap();
        assert!(digest.starts_with("$2a$12$"), "{email}: {digest}");
        assert!(bcrypt::verify(NAMED_PASSWORD, &digest).unwrap(), "{email}");
        assert!(!bcrypt::verify(GENERATED_PASSWORD, &digest).unwrap());
        digests.insert(digest);
    }
    // Each person has their own (fixed) salt; David's digest never changes between runs.
    assert_eq!(digests.len(), 4);
    assert!(
        digests.contains("$2a$12$SozZXgW75vgb8WRc9mMfguT0d248H.vEIcpp9LWlmfutTZXAnMM3C"),
        "{digests:?}"
    );
    let (id, role): (i64, String) =
        sqlx::query_as("SELECT id, role FROM users WHERE email_address = 'david@example.com'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!((id, role.as_str()), (1, "administrator"));

    let (email, digest, role, token): (Option<String>, Option<String>, String, Option<String>) =
        sqlx::query_as(
            "SELECT email_address, password_digest, role, bot_token FROM users \
             WHERE name = 'Bender'",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(email, None);
    assert_eq!(digest, None);
    assert_eq!(role, "bot");
    assert_eq!(token.as_deref(), Some(BENDER_BOT_TOKEN));
    assert_eq!(BENDER_BOT_TOKEN.len(), 12);
    assert!(BENDER_BOT_TOKEN.bytes().all(|b| b.is_ascii_alphanumeric()));

    assert_eq!(
        count(
            &pool,
            "SELECT COUNT(*) FROM users WHERE status = 'deactivated' \
             AND email_address LIKE 'ralph-deactivated-%@example.com'"
        )
        .await,
        1
    );
    assert_eq!(
        count(&pool, "SELECT COUNT(*) FROM users WHERE status = 'banned'").await,
        1
    );
    assert_eq!(
        count(&pool, "SELECT COUNT(*) FROM accounts WHERE name = 'Hearth'").await,
        1
    );
}

#[tokio::test]
async fn rooms_members_and_involvement() {
    let (_dir, pool) = fresh_db("rooms").await;
    seed(&pool, &options(20)).await.unwrap();

    let rooms: Vec<(i64, Option<String>, String, Option<i64>)> =
        sqlx::query_as("SELECT id, name, kind, creator_id FROM rooms ORDER BY id")
            .fetch_all(&pool)
            .await
            .unwrap();
    let expected: Vec<(i64, Option<String>, String, Option<i64>)> = vec![
        (1, Some("All Talk".into()), "open".into(), Some(1)),
        (2, Some("Pets".into()), "open".into(), Some(1)),
        (3, Some("HQ".into()), "open".into(), Some(1)),
        (4, Some("Designers".into()), "closed".into(), Some(1)),
        (5, None, "direct".into(), Some(1)),
        (6, None, "direct".into(), Some(1)),
    ];
    assert_eq!(rooms, expected);

    let members = |room: i64| {
        let pool = pool.clone();
        async move {
            sqlx::query_as::<_, (String, String)>(
                "SELECT u.name, m.involvement FROM memberships m JOIN users u ON u.id = m.user_id \
                 WHERE m.room_id = ? ORDER BY u.id",
            )
            .bind(room)
            .fetch_all(&pool)
            .await
            .unwrap()
        }
    };
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(
        members(4).await,
        vec![
            pair("David", "mentions"),
            pair("Jason", "mentions"),
            pair("JZ", "mentions"),
            pair("Kevin", "mentions"),
        ]
    );
    assert_eq!(
        members(5).await,
        vec![pair("David", "everything"), pair("Jason", "everything")]
    );
    assert_eq!(
        members(6).await,
        vec![pair("David", "everything"), pair("JZ", "everything")]
    );
    // Other open rooms: everyone but the deactivated Ralph (6 named + 20 generated).
    for room in [2, 3] {
        let names: Vec<String> = members(room).await.into_iter().map(|(n, _)| n).collect();
        assert_eq!(names.len(), 26, "room {room}");
        assert!(!names.iter().any(|n| n == "Ralph"));
        assert!(names.iter().any(|n| n == "Mallory"));
        assert!(names.iter().any(|n| n == "Bender"));
    }

    // Every message's author is a member of its room.
    assert_eq!(
        count(
            &pool,
            "SELECT COUNT(*) FROM messages m WHERE NOT EXISTS (SELECT 1 FROM memberships s \
             WHERE s.room_id = m.room_id AND s.user_id = m.creator_id)"
        )
        .await,
        0
    );
    // Each other room has a few messages.
    for room in 2..=6 {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM messages WHERE room_id = ?")
            .bind(room)
            .fetch_one(&pool)
            .await
            .unwrap();
        assert!((3..=10).contains(&n), "room {room} has {n} messages");
    }
    // A room's updated_at is its newest message's time.
    assert_eq!(
        count(
            &pool,
            "SELECT COUNT(*) FROM rooms r WHERE r.updated_at <> \
             (SELECT max(created_at) FROM messages m WHERE m.room_id = r.id)"
        )
        .await,
        0
    );
    // A few memberships are unread, never by the unread user's own message.
    let unread = count(
        &pool,
        "SELECT COUNT(*) FROM memberships WHERE unread_at IS NOT NULL",
    )
    .await;
    assert!((1..=5).contains(&unread), "{unread}");
    assert_eq!(
        count(
            &pool,
            "SELECT COUNT(*) FROM memberships s WHERE unread_at IS NOT NULL AND NOT EXISTS \
             (SELECT 1 FROM messages m WHERE m.room_id = s.room_id AND \
              m.created_at = s.unread_at AND m.creator_id <> s.user_id)"
        )
        .await,
        0
    );
}

#[tokio::test]
async fn main_room_messages_look_like_a_conversation() {
    let (_dir, pool) = fresh_db("bodies").await;
    seed(&pool, &options(50)).await.unwrap();

    let rows: Vec<(i64, i64, String, String, i64, i64)> = sqlx::query_as(
        "SELECT id, creator_id, client_message_id, body, created_at, updated_at FROM messages \
         WHERE room_id = 1 ORDER BY id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 169);

    let mut authors = std::collections::BTreeSet::new();
    let mut ids = std::collections::BTreeSet::new();
    // Messages are 2–7 minutes apart within a day; a new day starts at 10:00 UTC.
    let base = 1_793_523_600_000; // 2026-11-01T09:00:00Z
    let (hour, day) = (3_600_000, 86_400_000);
    let mut days = 1;
    for pair in rows.windows(2) {
        let gap = pair[1].4 - pair[0].4;
        if (pair[1].4 - base) % day == hour {
            assert!(gap > 0, "time goes backwards");
            days += 1;
        } else {
            assert!((120_000..=420_000).contains(&gap), "gap {gap} ms");
        }
        assert_ne!(pair[0].1, pair[1].1, "same author twice in a row");
    }
    assert!((2..=5).contains(&days), "{days} days");
    for (_, creator, client_id, body, created_at, updated_at) in &rows {
        authors.insert(*creator);
        ids.insert(client_id.clone());
        assert_eq!(created_at, updated_at);
        assert!(body.starts_with("<div>"), "{body}");
        assert!(
            !body.contains("{mention}") && !body.contains("{n}"),
            "{body}"
        );
        assert_eq!(client_id.len(), 36);
        assert_eq!(client_id.as_bytes()[14], b'4', "{client_id}");
    }
    assert_eq!(ids.len(), 169, "client_message_ids are unique");
    // Named people and the first generated users take turns.
    assert!(authors.contains(&1) && authors.contains(&FIRST_GENERATED_USER_ID));
    assert!(authors.len() >= 6, "{authors:?}");
    // 2026-11-01T10:00:00Z, an hour after the account.
    assert_eq!(rows[0].4, base + hour);
    // The generator's stream is fixed: the first client_message_id never changes.
    assert_eq!(rows[0].2, "cef69c59-6d5f-4c06-9819-74c4b7465652");

    let bodies: Vec<&str> = rows.iter().map(|r| r.3.as_str()).collect();
    let distinct: std::collections::BTreeSet<&str> = bodies.iter().copied().collect();
    assert!(distinct.len() >= 40, "{} distinct bodies", distinct.len());
    assert!(bodies.iter().any(|b| b.contains("<a href=\"https://")));
    assert!(bodies.iter().any(|b| b.contains("<pre>")));
    assert!(bodies.iter().any(|b| b.contains("<code>")));
    assert!(bodies.iter().any(|b| b.contains("<br>")));
    assert!(bodies.iter().any(|b| b.contains('\n')));
    assert!(bodies.iter().any(|b| b.contains("@Jason")));
    assert!(bodies.iter().any(|b| b.contains('🎉')));

    // 5..=10 boosts, on main-room messages, never by the message's author.
    let boosts = count(&pool, "SELECT COUNT(*) FROM boosts").await;
    assert!((5..=10).contains(&boosts), "{boosts}");
    assert_eq!(
        count(
            &pool,
            "SELECT COUNT(*) FROM boosts b JOIN messages m ON m.id = b.message_id \
             WHERE m.room_id <> 1 OR m.creator_id = b.booster_id \
             OR b.created_at <= m.created_at"
        )
        .await,
        0
    );
}

#[tokio::test]
async fn seeding_twice_errors_and_changes_nothing() {
    let (_dir, pool) = fresh_db("twice").await;
    seed(&pool, &options(50)).await.unwrap();
    let messages = count(&pool, "SELECT COUNT(*) FROM messages").await;

    let error = seed(&pool, &options(50)).await.unwrap_err();
    assert!(
        error.to_string().contains("already has 57 users"),
        "{error}"
    );
    assert_eq!(count(&pool, "SELECT COUNT(*) FROM users").await, 57);
    assert_eq!(
        count(&pool, "SELECT COUNT(*) FROM messages").await,
        messages
    );
    assert_eq!(count(&pool, "SELECT COUNT(*) FROM accounts").await, 1);
}

#[tokio::test]
async fn invalid_cost_errors_and_writes_nothing() {
    let (_dir, pool) = fresh_db("cost").await;
    let opts = SeedOptions {
        users: 5,
        generated_bcrypt_cost: 3,
    };
    assert!(seed(&pool, &opts).await.is_err());
    assert!(is_empty(&pool).await.unwrap());
}

#[tokio::test]
async fn zero_generated_users() {
    let (_dir, pool) = fresh_db("zero").await;
    let report = seed(&pool, &options(0)).await.unwrap();
    assert_eq!(report.users, 7);
    assert_eq!(report.main_room_messages, 169);
    assert_eq!(
        count(&pool, "SELECT COUNT(*) FROM messages WHERE room_id = 1").await,
        169
    );
    assert_eq!(
        count(&pool, "SELECT COUNT(*) FROM memberships WHERE room_id = 1").await,
        7
    );
}

type Dump = (
    Vec<(i64, String, String, i64, i64)>,
    Vec<(
        i64,
        String,
        Option<String>,
        Option<String>,
        String,
        String,
        Option<String>,
        Option<String>,
        i64,
        i64,
    )>,
    Vec<(i64, Option<String>, String, Option<i64>, i64, i64)>,
    Vec<(
        i64,
        i64,
        i64,
        String,
        Option<i64>,
        i64,
        Option<i64>,
        i64,
        i64,
    )>,
    Vec<(i64, i64, i64, String, String, i64, i64)>,
    Vec<(i64, i64, i64, String, i64, i64)>,
);

async fn dump(pool: &SqlitePool) -> Dump {
    (
        sqlx::query_as("SELECT * FROM accounts ORDER BY id")
            .fetch_all(pool)
            .await
            .unwrap(),
        sqlx::query_as("SELECT * FROM users ORDER BY id")
            .fetch_all(pool)
            .await
            .unwrap(),
        sqlx::query_as("SELECT * FROM rooms ORDER BY id")
            .fetch_all(pool)
            .await
            .unwrap(),
        sqlx::query_as("SELECT * FROM memberships ORDER BY id")
            .fetch_all(pool)
            .await
            .unwrap(),
        sqlx::query_as("SELECT * FROM messages ORDER BY id")
            .fetch_all(pool)
            .await
            .unwrap(),
        sqlx::query_as("SELECT * FROM boosts ORDER BY id")
            .fetch_all(pool)
            .await
            .unwrap(),
    )
}

#[tokio::test]
async fn two_fresh_seeds_are_identical() {
    let (_a_dir, a) = fresh_db("same-a").await;
    let (_b_dir, b) = fresh_db("same-b").await;
    seed(&a, &options(50)).await.unwrap();
    seed(&b, &options(50)).await.unwrap();
    let (dump_a, dump_b) = (dump(&a).await, dump(&b).await);
    assert_eq!(dump_a.4.len(), 169 + 20);
    assert_eq!(dump_a.4, dump_b.4, "messages differ");
    assert_eq!(dump_a, dump_b, "some table differs");

    // A different user count changes the users but not the main room's size.
    let (_c_dir, c) = fresh_db("same-c").await;
    seed(&c, &options(10)).await.unwrap();
    let dump_c = dump(&c).await;
    assert_ne!(dump_a.1, dump_c.1);
    assert_eq!(dump_c.4.iter().filter(|m| m.1 == 1).count(), 169);
}

#[tokio::test]
async fn seeds_10000_users() {
    let (_dir, pool) = fresh_db("ten-thousand").await;
    let started = Instant::now();
    let report = seed(&pool, &options(10_000)).await.unwrap();
    let elapsed = started.elapsed();
    println!(
        "seeded {} users, {} memberships in {elapsed:?}",
        report.users,
        count(&pool, "SELECT COUNT(*) FROM memberships").await
    );
    assert_eq!(report.users, 10_007);
    assert_eq!(count(&pool, "SELECT COUNT(*) FROM users").await, 10_007);
    assert_eq!(
        count(&pool, "SELECT COUNT(*) FROM memberships WHERE room_id = 1").await,
        10_007
    );
    assert_eq!(
        count(
            &pool,
            "SELECT COUNT(*) FROM users WHERE email_address = 'user10000@example.com'"
        )
        .await,
        1
    );
}
