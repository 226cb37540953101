//! Queries on `searches` (Campfire's `Search`: a user's recent queries) and the full-text
//! search over message bodies (Campfire's `Message::Searchable`, the FTS5 table
//! `message_search_index` of migration 0006).

use sqlx::SqlitePool;

use super::messages::Message;

/// A recent search.
#[derive(Clone, Debug, sqlx::FromRow, PartialEq, Eq)]
pub struct Search {
    /// Primary key.
    pub id: i64,
    /// The query as it was searched.
    pub query: String,
}

/// Records `query` as `user_id`'s most recent search (Campfire's `Search.record`: found or
/// created, then touched) and keeps only the newest `keep` searches, in one transaction.
pub async fn record(pool: &SqlitePool, user_id: i64, query: &str, keep: i64) -> sqlx::Result<()> {
    record_at(pool, user_id, query, keep, super::now_ms()).await
}

/// [`record`] at `now` (milliseconds since the epoch). The touched search's `updated_at` is
/// `now`, or one past the user's newest search when that is not earlier: searches recorded
/// within one millisecond keep the order they were made in (Rails' microsecond timestamps
/// make such ties rare there; here they came in a test's tight loop, and the oldest of a tie
/// was the one kept on top).
async fn record_at(
    pool: &SqlitePool,
    user_id: i64,
    query: &str,
    keep: i64,
    now: i64,
) -> sqlx::Result<()> {
    let mut tx = super::Write::begin(pool, super::Access::Kept).await?;
    let newest: Option<i64> =
        sqlx::query_scalar("SELECT MAX(updated_at) FROM searches WHERE user_id = ?")
            .bind(user_id)
            .fetch_one(&mut *tx)
            .await?;
    let touched = newest.map_or(now, |newest| now.max(newest.saturating_add(1)));
    sqlx::query(
        "INSERT INTO searches (user_id, query, created_at, updated_at) VALUES (?, ?, ?, ?) \
         ON CONFLICT (user_id, query) DO UPDATE SET updated_at = excluded.updated_at",
    )
    .bind(user_id)
    .bind(query)
    .bind(now)
    .bind(touched)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "DELETE FROM searches WHERE user_id = ? AND id NOT IN \
         (SELECT id FROM searches WHERE user_id = ? ORDER BY updated_at DESC, id DESC LIMIT ?)",
    )
    .bind(user_id)
    .bind(user_id)
    .bind(keep)
    .execute(&mut *tx)
    .await?;
    tx.commit().await.map(drop)
}

/// A user's recent searches, newest first (Campfire's `searches.ordered`).
pub async fn recent(pool: &SqlitePool, user_id: i64) -> sqlx::Result<Vec<Search>> {
    sqlx::query_as(
        "SELECT id, query FROM searches WHERE user_id = ? ORDER BY updated_at DESC, id DESC",
    )
    .bind(user_id)
    .fetch_all(pool)
    .await
}

/// Forgets every recent search of a user.
pub async fn clear(pool: &SqlitePool, user_id: i64) -> sqlx::Result<()> {
    let one = super::One::begin(pool, super::Access::Kept).await?;
    sqlx::query("DELETE FROM searches WHERE user_id = ?")
        .bind(user_id)
        .execute(&*one)
        .await?;
    one.done();
    Ok(())
}

/// Most distinct words one search matches on; the rest are ignored (each word is one more
/// FTS5 term lookup, so a query of 100 repeated words cost 50× a one-word query).
pub const MAX_WORDS: usize = 10;

/// The FTS5 query for the words of `text`: each word quoted (so no word is read as an FTS5
/// operator), all required, each once, at most [`MAX_WORDS`]. None when `text` has no word.
pub fn match_expression(text: &str) -> Option<String> {
    let mut words: Vec<&str> = Vec::new();
    for w in text
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
    {
        if words.len() == MAX_WORDS {
            break;
        }
        if !words.iter().any(|seen| seen.eq_ignore_ascii_case(w)) {
            words.push(w);
        }
    }
    let quoted: Vec<String> = words.iter().map(|w| format!("\"{w}\"")).collect();
    (!quoted.is_empty()).then(|| quoted.join(" "))
}

/// The newest `limit` messages matching `text` in rooms `user_id` is a member of (Campfire's
/// `search_reachable`), newest first, without boosts. Empty when `text` has no word.
///
/// Indexes the messages not yet indexed first ([`super::upkeep::index_messages`]), so every
/// message committed before the search can be found; when the database is locked from outside
/// past the write wait, searches the index as it is instead. A search that meets another
/// process's schema change (`super::is_schema_changed`) is run again, up to
/// [`SCHEMA_ATTEMPTS`] times in all.
///
/// # Errors
/// A database failure, `SQLITE_SCHEMA` included once the attempts are spent.
pub async fn messages(
    pool: &SqlitePool,
    user_id: i64,
    text: &str,
    limit: i64,
) -> sqlx::Result<Vec<Message>> {
    let Some(expression) = match_expression(text) else {
        return Ok(Vec::new());
    };
    let mut attempt = 1;
    loop {
        match search(pool, user_id, &expression, limit).await {
            Err(e) if super::is_schema_changed(&e) && attempt < SCHEMA_ATTEMPTS => attempt += 1,
            done => return done,
        }
    }
}

/// How many times [`messages`] runs a search that meets a schema change.
pub const SCHEMA_ATTEMPTS: u32 = 3;

/// One attempt of [`messages`] for the full-text `expression`.
async fn search(
    pool: &SqlitePool,
    user_id: i64,
    expression: &str,
    limit: i64,
) -> sqlx::Result<Vec<Message>> {
    match super::upkeep::index_messages(pool).await {
        Err(e) if super::is_busy(&e) => {
            tracing::debug!("search indexing postponed: database locked");
        }
        other => {
            other?;
        }
    }
    // The full-text table is read on the schema this transaction read (see `begin_read`).
    let mut read = super::begin_read(pool).await?;
    let rows: Vec<super::messages::Row> = sqlx::query_as(
        "SELECT m.id, m.room_id, m.creator_id, u.name AS creator_name, \
         COALESCE(u.bio, '') AS creator_bio, m.client_message_id, m.body, m.created_at, \
         m.updated_at FROM message_search_index s \
         JOIN messages m ON m.id = s.rowid \
         JOIN rooms r ON r.id = m.room_id \
         JOIN memberships ms ON ms.room_id = COALESCE(r.parent_room_id, r.id) AND ms.user_id = ? \
         JOIN users u ON u.id = m.creator_id \
         WHERE message_search_index MATCH ? \
         ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
    )
    .bind(user_id)
    .bind(expression)
    .bind(limit)
    .fetch_all(&mut *read)
    .await?;
    read.commit().await?;
    let mut found: Vec<Message> = rows.into_iter().map(Message::from).collect();
    super::messages::with_files(pool, &mut found).await?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_and_operators_dropped() {
        assert_eq!(
            match_expression("hello world").as_deref(),
            Some("\"hello\" \"world\"")
        );
        assert_eq!(
            match_expression("a\" OR b* NEAR(").as_deref(),
            Some("\"a\" \"OR\" \"b\" \"NEAR\"")
        );
        assert_eq!(match_expression(" -*\"() "), None);
    }

    /// Regression: searches made within one millisecond were ordered by id among themselves,
    /// so searching an old query again left it below the newer ones (CI saw `word11` on top
    /// after `word5` was searched again).
    #[tokio::test]
    async fn searches_in_one_millisecond_keep_their_order() {
        let (pool, dir, _serial) = crate::db::test_pool().await;
        sqlx::query(
            "INSERT INTO users (id, name, email_address, password_digest, created_at, updated_at) \
             VALUES (1, 'Ann', 'ann@example.com', '', 0, 0)",
        )
        .execute(&pool)
        .await
        .expect("user");
        for query in ["a", "b", "c", "a", "d"] {
            record_at(&pool, 1, query, 3, 1_000).await.expect("record");
        }
        let recent: Vec<String> = recent(&pool, 1)
            .await
            .expect("recent")
            .into_iter()
            .map(|s| s.query)
            .collect();
        assert_eq!(recent, ["d", "a", "c"]);
        pool.close().await;
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn repeated_and_surplus_words_are_dropped() {
        let many = "a ".repeat(100);
        assert_eq!(match_expression(&many).as_deref(), Some("\"a\""));
        let distinct: String = (0..30).map(|i| format!("w{i} ")).collect();
        let expr = match_expression(&distinct).unwrap_or_default();
        assert_eq!(expr.matches('"').count(), 2 * MAX_WORDS);
    }
}
