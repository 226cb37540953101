//! Bookkeeping that stays out of a post's transaction (migration 0009): indexing new messages
//! for search, in batches, and pruning the catch-up log.
//!
//! Indexing a message in FTS5 writes a new index segment, its structure record, the stored
//! text and the document size. Done by trigger inside every post, it cost about a tenth of
//! the posts one core could commit (an N = 50 sweep cell: 1,474 msgs/s with the trigger,
//! 1,646 without; `docs/bench/journal.md`, "Performance round 2"). Here one batch of up to
//! [`INDEX_BATCH`] messages makes one segment, once a [`UPKEEP_INTERVAL`] and before every
//! search ([`index_messages`]), so a search still sees every message committed before it.

use std::time::Duration;

use sqlx::SqlitePool;

/// How often the background task indexes new messages and prunes the log.
pub const UPKEEP_INTERVAL: Duration = Duration::from_secs(1);

/// Most messages indexed under one hold of the write lock, so that a post waits behind at most
/// one batch (a few milliseconds), however far behind the index is.
pub const INDEX_BATCH: i64 = 500;

/// Most bytes of bodies indexed under one hold of the write lock (the batch stops at the
/// message that crosses it; a larger message is indexed alone). FTS5 indexes about 6 MB of
/// distinct words a second on this project's 2-core machine (a backlog of 500 messages of
/// 60 KB took 4.8–6.4 s a batch), so 256 KiB holds the lock for about 40 ms; 500 chat
/// messages of a few hundred bytes stay one batch.
pub const INDEX_BATCH_BYTES: i64 = 256 * 1024;

/// Changes the `message_changes` log keeps (migration 0007): a page whose cursor is older
/// reloads. Pruned once a [`UPKEEP_INTERVAL`], so the log may briefly hold a tick's posts more.
pub const CHANGES_KEPT: i64 = 100_000;

/// Indexes one batch of messages not yet in `message_search_index`: those above
/// `message_search_progress.indexed_through`, oldest first, at most [`INDEX_BATCH`] and about
/// [`INDEX_BATCH_BYTES`] of bodies (always at least one message); moves the
/// mark to the newest one indexed. One transaction under this process's write lock. Returns
/// how many were indexed (0: the index is complete).
///
/// # Errors
/// A database failure ([`super::busy`] when the database stays locked); nothing is indexed
/// then and the next call retries.
pub async fn index_batch(pool: &SqlitePool) -> sqlx::Result<u64> {
    let mut tx = super::Write::begin(pool, super::Access::Kept).await?;
    let through: i64 =
        sqlx::query_scalar("SELECT indexed_through FROM message_search_progress WHERE id = 1")
            .fetch_one(&mut *tx)
            .await?;
    // Each message's bytes before it in the batch: the messages that start within the budget.
    let (count, upto): (i64, Option<i64>) = sqlx::query_as(
        "SELECT COUNT(*), MAX(id) FROM \
         (SELECT id, SUM(length(CAST(body AS BLOB))) OVER (ORDER BY id) \
                     - length(CAST(body AS BLOB)) AS before \
            FROM messages WHERE id > ? ORDER BY id LIMIT ?) \
         WHERE before < ?",
    )
    .bind(through)
    .bind(INDEX_BATCH)
    .bind(INDEX_BATCH_BYTES)
    .fetch_one(&mut *tx)
    .await?;
    let Some(upto) = upto else {
        return Ok(0);
    };
    // Nothing above the mark should be in the index; a leftover would make the insert fail.
    sqlx::query("DELETE FROM message_search_index WHERE rowid > ? AND rowid <= ?")
        .bind(through)
        .bind(upto)
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "INSERT INTO message_search_index (rowid, body) \
         SELECT id, body FROM message_search_texts WHERE id > ? AND id <= ? ORDER BY id",
    )
    .bind(through)
    .bind(upto)
    .execute(&mut *tx)
    .await?;
    sqlx::query("UPDATE message_search_progress SET indexed_through = ? WHERE id = 1")
        .bind(upto)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(u64::try_from(count).unwrap_or(0))
}

/// Indexes every message committed so far ([`index_batch`] until none is left); returns how
/// many. A search calls it first, so what it finds never lags behind the posts.
///
/// # Errors
/// As [`index_batch`]; the batches before the failure stay indexed.
pub async fn index_messages(pool: &SqlitePool) -> sqlx::Result<u64> {
    // One read, without the write lock, when nothing is pending (the usual case for a search).
    let complete: bool = sqlx::query_scalar(
        "SELECT (SELECT indexed_through FROM message_search_progress WHERE id = 1) \
                >= COALESCE((SELECT MAX(id) FROM messages), 0)",
    )
    .fetch_one(pool)
    .await?;
    if complete {
        return Ok(0);
    }
    let mut total = 0;
    loop {
        match index_batch(pool).await? {
            0 => return Ok(total),
            n => total += n,
        }
    }
}

/// Deletes the changes of the `message_changes` log older than the newest [`CHANGES_KEPT`];
/// returns how many.
///
/// # Errors
/// A database failure.
pub async fn prune_changes(pool: &SqlitePool) -> sqlx::Result<u64> {
    let one = super::One::begin(pool, super::Access::Kept).await?;
    let done = sqlx::query(
        "DELETE FROM message_changes WHERE id <= (SELECT MAX(id) FROM message_changes) - ?",
    )
    .bind(CHANGES_KEPT)
    .execute(&*one)
    .await?;
    one.done();
    Ok(done.rows_affected())
}

/// Runs [`index_messages`] and [`prune_changes`] every [`UPKEEP_INTERVAL`] on its own task,
/// until the pool closes. Failures are logged and retried on the next tick.
pub fn spawn(pool: SqlitePool) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(UPKEEP_INTERVAL);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            if pool.is_closed() {
                return;
            }
            if let Err(e) = index_messages(&pool).await {
                tracing::warn!(error = %e, "search indexing failed");
            }
            if let Err(e) = prune_changes(&pool).await {
                tracing::warn!(error = %e, "pruning the change log failed");
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn room_and_user(pool: &SqlitePool) -> (i64, i64) {
        let now = super::super::now_ms();
        let user: i64 = sqlx::query_scalar(
            "INSERT INTO users (name, role, status, created_at, updated_at) \
             VALUES ('Ann', 'member', 'active', ?, ?) RETURNING id",
        )
        .bind(now)
        .bind(now)
        .fetch_one(pool)
        .await
        .expect("user");
        let room: i64 = sqlx::query_scalar(
            "INSERT INTO rooms (name, kind, creator_id, created_at, updated_at) \
             VALUES ('r', 'open', ?, ?, ?) RETURNING id",
        )
        .bind(user)
        .bind(now)
        .bind(now)
        .fetch_one(pool)
        .await
        .expect("room");
        (room, user)
    }

    async fn post(pool: &SqlitePool, room: i64, user: i64, body: &str) -> i64 {
        let cid = super::super::messages::new_client_message_id();
        super::super::messages::create(pool, room, user, "Ann", &cid, body)
            .await
            .expect("post")
            .id
    }

    async fn indexed(pool: &SqlitePool, word: &str) -> Vec<i64> {
        sqlx::query_scalar(
            "SELECT rowid FROM message_search_index WHERE message_search_index MATCH ? \
             ORDER BY rowid",
        )
        .bind(format!("\"{word}\""))
        .fetch_all(pool)
        .await
        .expect("match")
    }

    #[tokio::test]
    async fn posts_are_indexed_in_batches_and_edits_and_deletes_follow() {
        let (pool, dir, _serial) = super::super::test_pool().await;
        let (room, user) = room_and_user(&pool).await;
        let first = post(&pool, room, user, "<div>alpha &amp; beta</div>").await;
        // Not in the post's transaction any more.
        assert_eq!(indexed(&pool, "alpha").await, Vec::<i64>::new());
        assert_eq!(index_messages(&pool).await.expect("index"), 1);
        assert_eq!(indexed(&pool, "alpha").await, vec![first]);
        assert_eq!(indexed(&pool, "div").await, Vec::<i64>::new());
        assert_eq!(index_messages(&pool).await.expect("index"), 0);

        // An edit of an indexed message reaches the index at once.
        super::super::messages::update_body(&pool, room, first, "<div>gamma</div>", "gamma")
            .await
            .expect("edit");
        assert_eq!(indexed(&pool, "alpha").await, Vec::<i64>::new());
        assert_eq!(indexed(&pool, "gamma").await, vec![first]);

        // An edit of a message not yet indexed is indexed as it is when its batch comes.
        let second = post(&pool, room, user, "<div>delta</div>").await;
        super::super::messages::update_body(&pool, room, second, "<div>epsilon</div>", "epsilon")
            .await
            .expect("edit");
        assert_eq!(index_messages(&pool).await.expect("index"), 1);
        assert_eq!(indexed(&pool, "delta").await, Vec::<i64>::new());
        assert_eq!(indexed(&pool, "epsilon").await, vec![second]);

        // Deleting the newest indexed message does not give its id to the next post (ids are
        // never reused: `AUTOINCREMENT`); the next post is indexed in its batch.
        super::super::messages::delete(&pool, room, second)
            .await
            .expect("delete");
        assert_eq!(indexed(&pool, "epsilon").await, Vec::<i64>::new());
        let third = post(&pool, room, user, "<div>zeta</div>").await;
        assert!(
            third > second,
            "the id of a deleted message is never reused"
        );
        assert_eq!(index_messages(&pool).await.expect("index"), 1);
        assert_eq!(indexed(&pool, "zeta").await, vec![third]);
        pool.close().await;
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn a_long_backlog_is_indexed_batch_by_batch() {
        let (pool, dir, _serial) = super::super::test_pool().await;
        let (room, user) = room_and_user(&pool).await;
        let n = INDEX_BATCH + 7;
        for i in 0..n {
            post(
                &pool,
                room,
                user,
                &format!("<div>word{} common</div>", i % 3),
            )
            .await;
        }
        assert_eq!(
            index_batch(&pool).await.expect("batch"),
            u64::try_from(INDEX_BATCH).unwrap_or(0)
        );
        assert_eq!(index_messages(&pool).await.expect("rest"), 7);
        assert_eq!(
            indexed(&pool, "common").await.len(),
            usize::try_from(n).unwrap_or(0)
        );
        pool.close().await;
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn a_backlog_of_long_messages_is_indexed_a_few_at_a_time() {
        // Regression: 500 messages of 60 KB each made one batch that held the write lock for
        // five seconds, and the posts behind it failed as busy.
        let (pool, dir, _serial) = super::super::test_pool().await;
        let (room, user) = room_and_user(&pool).await;
        let long = |i: usize| format!("<div>{}</div>", format!("long{i} ").repeat(12_000));
        let body_bytes = i64::try_from(long(0).len()).unwrap_or(i64::MAX);
        for i in 0..10 {
            post(&pool, room, user, &long(i)).await;
        }
        let short = post(&pool, room, user, "<div>short</div>").await;
        // Each batch stops at the message that crosses the budget.
        let per_batch = u64::try_from(INDEX_BATCH_BYTES / body_bytes + 1).unwrap_or(0);
        assert!(per_batch < 10, "{per_batch}");
        assert_eq!(index_batch(&pool).await.expect("batch"), per_batch);
        assert_eq!(index_messages(&pool).await.expect("rest"), 11 - per_batch);
        assert_eq!(indexed(&pool, "long9").await.len(), 1);
        assert_eq!(indexed(&pool, "short").await, vec![short]);
        pool.close().await;
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn the_change_log_keeps_the_newest_changes() {
        let (pool, dir, _serial) = super::super::test_pool().await;
        let (room, user) = room_and_user(&pool).await;
        let first = post(&pool, room, user, "one").await;
        post(&pool, room, user, "two").await;
        assert_eq!(prune_changes(&pool).await.expect("prune"), 0);
        // Pretend the log is full: move the newest change's id past the window.
        sqlx::query("UPDATE message_changes SET id = id + ? WHERE message_id <> ?")
            .bind(CHANGES_KEPT)
            .bind(first)
            .execute(&pool)
            .await
            .expect("shift");
        assert_eq!(prune_changes(&pool).await.expect("prune"), 1);
        pool.close().await;
        let _ = std::fs::remove_dir_all(dir);
    }
}
