//! Queries on `messages` and `boosts` (Campfire's `Message` with its pagination scopes and
//! `Boost`). A message's body is stored as the HTML that Action Text would hold (see
//! [`crate::rich_text`]; migration 0012 shows it as Campfire's `action_text_rich_texts`), with
//! its plain text beside it for search.

use sqlx::SqlitePool;

/// Messages per page (Campfire's `Message::Pagination::PAGE_SIZE`).
pub const PAGE_SIZE: i64 = 40;

/// A message with what its partial shows: the creator's name and the boosts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// Primary key.
    pub id: i64,
    /// Room id.
    pub room_id: i64,
    /// Author's user id.
    pub creator_id: i64,
    /// Author's name.
    pub creator_name: String,
    /// Author's bio, empty when none (the name's title shows "name – bio").
    pub creator_bio: String,
    /// The client's id for the message (`dom_id(message)` is `message_<client_message_id>`).
    pub client_message_id: String,
    /// Body HTML.
    pub body: String,
    /// Creation time, ms.
    pub created_at: i64,
    /// Last update, ms.
    pub updated_at: i64,
    /// Boosts on this message, oldest first.
    pub boosts: Vec<Boost>,
    /// The message's file (`has_one_attached :attachment`), if any.
    pub attachment: Option<super::blobs::Attached>,
    /// The blob id of the author's avatar (the version of its URL), None for the initials.
    pub creator_avatar: Option<i64>,
    /// The message's thread, when it has replies (see [`super::threads`]).
    pub thread: Option<super::threads::Summary>,
}

impl Message {
    /// `dom_id(message)`: `message_<client_message_id>`, the id of the message's element and
    /// the target of its `replace` and `remove` turbo-stream actions.
    pub fn dom_id(&self) -> String {
        format!("message_{}", self.client_message_id)
    }
}

/// A random client message id (a UUID v4 in its text form, as `@rails/request.js`-era
/// Campfire clients make with `crypto.randomUUID()`), for posts that give none.
pub fn new_client_message_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A boost (a short reaction) on a message.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Boost {
    /// Primary key.
    pub id: i64,
    /// The boosted message.
    pub message_id: i64,
    /// Who boosted.
    pub booster_id: i64,
    /// Booster's name.
    pub booster_name: String,
    /// The reaction, at most 16 characters.
    pub content: String,
}

/// A message row as `select!` reads it (and a search of messages), before its boosts and
/// files are added.
#[derive(sqlx::FromRow)]
pub(super) struct Row {
    id: i64,
    room_id: i64,
    creator_id: i64,
    creator_name: String,
    creator_bio: String,
    client_message_id: String,
    body: String,
    created_at: i64,
    updated_at: i64,
}

impl From<Row> for Message {
    fn from(r: Row) -> Self {
        Self {
            id: r.id,
            room_id: r.room_id,
            creator_id: r.creator_id,
            creator_name: r.creator_name,
            creator_bio: r.creator_bio,
            client_message_id: r.client_message_id,
            body: r.body,
            created_at: r.created_at,
            updated_at: r.updated_at,
            boosts: Vec::new(),
            attachment: None,
            creator_avatar: None,
            thread: None,
        }
    }
}

/// `SELECT … FROM messages JOIN users` followed by the given clause, as one literal.
macro_rules! select {
    ($tail:literal) => {
        concat!(
            "SELECT m.id, m.room_id, m.creator_id, u.name AS creator_name, ",
            "COALESCE(u.bio, '') AS creator_bio, m.client_message_id, ",
            "m.body, m.created_at, m.updated_at FROM messages m JOIN users u ON u.id = m.creator_id ",
            $tail
        )
    };
}

async fn with_boosts(pool: &SqlitePool, rows: Vec<Row>) -> sqlx::Result<Vec<Message>> {
    let mut messages: Vec<Message> = rows.into_iter().map(Message::from).collect();
    if messages.is_empty() {
        return Ok(messages);
    }
    let (lo, hi) = messages.iter().fold((i64::MAX, i64::MIN), |(lo, hi), m| {
        (lo.min(m.id), hi.max(m.id))
    });
    let boosts: Vec<Boost> = sqlx::query_as(
        "SELECT b.id, b.message_id, b.booster_id, u.name AS booster_name, b.content FROM boosts b \
         JOIN users u ON u.id = b.booster_id JOIN messages m ON m.id = b.message_id \
         WHERE m.room_id = ? AND b.message_id BETWEEN ? AND ? ORDER BY b.id",
    )
    .bind(messages[0].room_id)
    .bind(lo)
    .bind(hi)
    .fetch_all(pool)
    .await?;
    for boost in boosts {
        if let Some(m) = messages.iter_mut().find(|m| m.id == boost.message_id) {
            m.boosts.push(boost);
        }
    }
    with_files(pool, &mut messages).await?;
    Ok(messages)
}

/// Fills in the files of `messages` (their `attachment`, with the thumbnail once made), their
/// authors' avatars and their threads' summaries.
pub async fn with_files(pool: &SqlitePool, messages: &mut [Message]) -> sqlx::Result<()> {
    let mut creators: Vec<i64> = messages.iter().map(|m| m.creator_id).collect();
    creators.sort_unstable();
    creators.dedup();
    for (user_id, blob_id) in super::blobs::avatars_of(pool, &creators).await? {
        for m in messages.iter_mut().filter(|m| m.creator_id == user_id) {
            m.creator_avatar = Some(blob_id);
        }
    }
    let ids: Vec<i64> = messages.iter().map(|m| m.id).collect();
    for (id, attached) in
        super::blobs::for_messages(pool, &ids, super::blobs::thumb_digest()).await?
    {
        if let Some(m) = messages.iter_mut().find(|m| m.id == id) {
            m.attachment = Some(attached);
        }
    }
    for (parent, summary) in super::threads::summaries(pool, &ids).await? {
        if let Some(m) = messages.iter_mut().find(|m| m.id == parent) {
            m.thread = Some(summary);
        }
    }
    Ok(())
}

/// The latest [`PAGE_SIZE`] messages of a room, oldest first (Campfire's `last_page`).
pub async fn last_page(pool: &SqlitePool, room_id: i64) -> sqlx::Result<Vec<Message>> {
    let mut rows: Vec<Row> = sqlx::query_as(select!(
        "WHERE m.room_id = ? ORDER BY m.created_at DESC, m.id DESC LIMIT ?"
    ))
    .bind(room_id)
    .bind(PAGE_SIZE)
    .fetch_all(pool)
    .await?;
    rows.reverse();
    with_boosts(pool, rows).await
}

/// The page of messages before message `before_id` (exclusive), oldest first (`page_before`).
pub async fn page_before(
    pool: &SqlitePool,
    room_id: i64,
    before_id: i64,
) -> sqlx::Result<Vec<Message>> {
    let rows = rows_before(pool, room_id, before_id, PAGE_SIZE).await?;
    with_boosts(pool, rows).await
}

/// At most `limit` rows before message `before_id` (exclusive), oldest first.
async fn rows_before(
    pool: &SqlitePool,
    room_id: i64,
    before_id: i64,
    limit: i64,
) -> sqlx::Result<Vec<Row>> {
    let mut rows: Vec<Row> = sqlx::query_as(select!(
        "WHERE m.room_id = ?1 AND (m.created_at, m.id) < \
           (SELECT created_at, id FROM messages WHERE id = ?2 AND room_id = ?1) \
         ORDER BY m.created_at DESC, m.id DESC LIMIT ?3"
    ))
    .bind(room_id)
    .bind(before_id)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    rows.reverse();
    Ok(rows)
}

/// The page of messages after message `after_id` (exclusive), oldest first (`page_after`).
pub async fn page_after(
    pool: &SqlitePool,
    room_id: i64,
    after_id: i64,
) -> sqlx::Result<Vec<Message>> {
    let rows = rows_after(pool, room_id, after_id, PAGE_SIZE).await?;
    with_boosts(pool, rows).await
}

/// At most `limit` rows after message `after_id` (exclusive), oldest first.
async fn rows_after(
    pool: &SqlitePool,
    room_id: i64,
    after_id: i64,
    limit: i64,
) -> sqlx::Result<Vec<Row>> {
    let rows: Vec<Row> = sqlx::query_as(select!(
        "WHERE m.room_id = ?1 AND (m.created_at, m.id) > \
           (SELECT created_at, id FROM messages WHERE id = ?2 AND room_id = ?1) \
         ORDER BY m.created_at, m.id LIMIT ?3"
    ))
    .bind(room_id)
    .bind(after_id)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(rows)
}

/// Whether the room holds a message before message `id` (`before`) or after it (`!before`),
/// in the order of its pages.
pub async fn any_beyond(
    pool: &SqlitePool,
    room_id: i64,
    id: i64,
    before: bool,
) -> sqlx::Result<bool> {
    let rows = if before {
        rows_before(pool, room_id, id, 1).await?
    } else {
        rows_after(pool, room_id, id, 1).await?
    };
    Ok(!rows.is_empty())
}

/// The page around message `id` of a room (Campfire's `page_around`): up to half a
/// [`PAGE_SIZE`] before it, the message itself, and up to half a page after it, oldest first.
/// `None` when the room holds no such message.
pub async fn page_around(
    pool: &SqlitePool,
    room_id: i64,
    id: i64,
) -> sqlx::Result<Option<Vec<Message>>> {
    let Some(found) = sqlx::query_as::<_, Row>(select!("WHERE m.room_id = ? AND m.id = ?"))
        .bind(room_id)
        .bind(id)
        .fetch_optional(pool)
        .await?
    else {
        return Ok(None);
    };
    let half = PAGE_SIZE / 2;
    let mut rows = rows_before(pool, room_id, id, half).await?;
    rows.push(found);
    rows.extend(rows_after(pool, room_id, id, half).await?);
    Ok(Some(with_boosts(pool, rows).await?))
}

/// Messages created at or after `since_ms` (`page_created_since`), and messages created
/// before it but updated at or after it (`page_updated_since`), each oldest first and each at
/// most `limit`: the catch-up of pages that still send a time. Inclusive, so a message
/// stamped in the same millisecond as the last one a page saw is not skipped (the page drops
/// the copy it already holds). Pages of this version send a [`catch_up`] cursor instead.
pub async fn changed_since(
    pool: &SqlitePool,
    room_id: i64,
    since_ms: i64,
    limit: i64,
) -> sqlx::Result<(Vec<Message>, Vec<Message>)> {
    let created: Vec<Row> = sqlx::query_as(select!(
        "WHERE m.room_id = ? AND m.created_at >= ? ORDER BY m.created_at, m.id LIMIT ?"
    ))
    .bind(room_id)
    .bind(since_ms)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    let updated: Vec<Row> = sqlx::query_as(select!(
        "WHERE m.room_id = ? AND m.created_at < ? AND m.updated_at >= ? \
         ORDER BY m.updated_at, m.id LIMIT ?"
    ))
    .bind(room_id)
    .bind(since_ms)
    .bind(since_ms)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok((
        with_boosts(pool, created).await?,
        with_boosts(pool, updated).await?,
    ))
}

/// The newest change of the `message_changes` log (migration 0007), 0 when there is none:
/// the catch-up cursor of a page rendered now. Read it *before* the messages the page shows,
/// so that nothing committed between the two reads is missed (what was already shown comes
/// again, and the page drops the copy).
pub async fn last_change(pool: &SqlitePool) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) FROM message_changes")
        .fetch_one(pool)
        .await
}

/// What a page that knew the room up to change `cursor` lacks (see [`catch_up`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CatchUp {
    /// Messages posted since, still there, oldest (smallest id) first: to `append`.
    pub appended: Vec<Message>,
    /// Messages posted before and edited or boosted since, still there: to `replace`.
    pub replaced: Vec<Message>,
    /// The client message ids of messages deleted since (`remove` of
    /// `message_<client_message_id>`), in the order of their deletion.
    pub removed: Vec<String>,
    /// The cursor to send next time: the newest change this answer covers.
    pub cursor: i64,
}

#[derive(sqlx::FromRow)]
struct Change {
    message_id: i64,
    client_message_id: String,
    action: String,
}

/// What changed in a room after change `cursor` of the `message_changes` log (migration
/// 0007): the catch-up after a reconnect (Campfire's `Rooms::RefreshesController`, with a
/// cursor that cannot skip: a change id, in commit order, instead of a time). Each message
/// appears once, in its state now: appended if posted after the cursor, replaced if posted
/// before and changed since, removed if deleted since.
///
/// `None` when the page must reload instead: more than `limit` changes in the room, or a
/// cursor the log no longer covers (older than its oldest kept change, or newer than its
/// newest, as after a restore).
///
/// # Errors
/// A database failure.
pub async fn catch_up(
    pool: &SqlitePool,
    room_id: i64,
    cursor: i64,
    limit: i64,
) -> sqlx::Result<Option<CatchUp>> {
    let (oldest, newest): (Option<i64>, Option<i64>) =
        sqlx::query_as("SELECT MIN(id), MAX(id) FROM message_changes")
            .fetch_one(pool)
            .await?;
    let newest = newest.unwrap_or(0);
    if cursor < 0 || cursor > newest || oldest.is_some_and(|oldest| cursor < oldest - 1) {
        return Ok(None);
    }
    // Every change up to `newest` has committed (one writer at a time, ids in commit order),
    // so this reads exactly the changes in (cursor, newest].
    let changes: Vec<Change> = sqlx::query_as(
        "SELECT message_id, client_message_id, action FROM message_changes \
         WHERE room_id = ? AND id > ? AND id <= ? ORDER BY id LIMIT ?",
    )
    .bind(room_id)
    .bind(cursor)
    .bind(newest)
    .bind(limit.saturating_add(1))
    .fetch_all(pool)
    .await?;
    if i64::try_from(changes.len()).unwrap_or(i64::MAX) > limit {
        return Ok(None);
    }
    let mut removed: Vec<String> = Vec::new();
    let mut appended_ids: Vec<i64> = Vec::new();
    let mut wanted: Vec<(i64, &str)> = Vec::new();
    for change in &changes {
        match change.action.as_str() {
            "remove" => {
                if !removed.contains(&change.client_message_id) {
                    removed.push(change.client_message_id.clone());
                }
            }
            action => {
                if action == "append" {
                    appended_ids.push(change.message_id);
                }
                if !wanted.iter().any(|(id, _)| *id == change.message_id) {
                    wanted.push((change.message_id, &change.client_message_id));
                }
            }
        }
    }
    let ids = serde_json::to_string(&wanted.iter().map(|(id, _)| *id).collect::<Vec<_>>())
        .map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    let rows: Vec<Row> = sqlx::query_as(select!(
        "WHERE m.room_id = ? AND m.id IN (SELECT value FROM json_each(?)) ORDER BY m.id"
    ))
    .bind(room_id)
    .bind(ids)
    .fetch_all(pool)
    .await?;
    let mut appended = Vec::new();
    let mut replaced = Vec::new();
    for message in with_boosts(pool, rows).await? {
        if appended_ids.contains(&message.id) {
            appended.push(message);
        } else if wanted
            .iter()
            .any(|(id, cid)| *id == message.id && *cid == message.client_message_id)
        {
            replaced.push(message);
        }
        // Otherwise SQLite gave the id of a message deleted since to a later post, whose own
        // append is past `newest`: the next catch-up brings it.
    }
    Ok(Some(CatchUp {
        appended,
        replaced,
        removed,
        cursor: newest,
    }))
}

/// Whether message `id` is in room `room_id`: how a paging cursor from a request is checked
/// before it is used (Campfire's `@room.messages.find(params[:before])`), so that a cursor
/// naming another room's message, or none, answers 404 and tells nothing about that message.
pub async fn in_room(pool: &SqlitePool, room_id: i64, id: i64) -> sqlx::Result<bool> {
    let found: Option<i64> =
        sqlx::query_scalar("SELECT 1 FROM messages WHERE room_id = ? AND id = ?")
            .bind(room_id)
            .bind(id)
            .fetch_optional(pool)
            .await?;
    Ok(found.is_some())
}

/// Finds one message of a room.
pub async fn find(pool: &SqlitePool, room_id: i64, id: i64) -> sqlx::Result<Option<Message>> {
    let row: Option<Row> = sqlx::query_as(select!("WHERE m.room_id = ? AND m.id = ?"))
        .bind(room_id)
        .bind(id)
        .fetch_optional(pool)
        .await?;
    Ok(with_boosts(pool, row.into_iter().collect()).await?.pop())
}

/// Finds a message by id, whatever its room.
pub async fn find_any(pool: &SqlitePool, id: i64) -> sqlx::Result<Option<Message>> {
    let row: Option<Row> = sqlx::query_as(select!("WHERE m.id = ?"))
        .bind(id)
        .fetch_optional(pool)
        .await?;
    Ok(with_boosts(pool, row.into_iter().collect()).await?.pop())
}

/// Stores a new message with its side effects (Campfire's `room.messages.create!` +
/// `Room#receive`): one `INSERT`, whose `messages_receive` trigger (migration 0003) touches the
/// room's `updated_at` and sets `unread_at` on every visible, disconnected membership other
/// than the creator's that has no unread mark yet. The statement is atomic: nothing is stored
/// when any part fails. Returns the stored message. The
/// insert's triggers do not reach the full-text index (indexing left them in migration 0009),
/// so unlike an edit or a delete it needs no schema check first (see `db::begin_write`) and
/// stays one statement in autocommit.
///
/// Equivalent to [`create_then`] with nothing to run at the commit.
pub async fn create(
    pool: &SqlitePool,
    room_id: i64,
    creator_id: i64,
    creator_name: &str,
    client_message_id: &str,
    body: &str,
) -> sqlx::Result<Message> {
    let uncached =
        std::sync::Arc::new(super::auth_cache::AuthCache::new(std::time::Duration::ZERO));
    let new = NewMessage {
        room_id,
        creator_id,
        creator_name,
        client_message_id,
        body,
        attachment_blob_id: None,
        plain_text: None,
        creator_avatar: None,
    };
    let (message, ()) =
        create_then(pool, &uncached, &GroupCommit::default(), &new, |_, _| ()).await?;
    Ok(message)
}

/// A message to store ([`create_then`]).
#[derive(Clone, Copy, Debug)]
pub struct NewMessage<'a> {
    /// The room.
    pub room_id: i64,
    /// The author's user id.
    pub creator_id: i64,
    /// The author's name (for the partial).
    pub creator_name: &'a str,
    /// The client's id for the message (unique).
    pub client_message_id: &'a str,
    /// Body HTML.
    pub body: &'a str,
    /// A blob to attach as the message's `attachment`, in the same transaction.
    pub attachment_blob_id: Option<i64>,
    /// The body's plain text, for search ([`crate::rich_text::Body::plain_text`]); `None`
    /// indexes the body's markup with its tags dropped, as before migration 0012.
    pub plain_text: Option<&'a str>,
    /// The blob id of the author's avatar, for the partial (None: the initials).
    pub creator_avatar: Option<i64>,
}

/// [`create`], running `committed` on the stored message and the room's member ids (ascending;
/// Campfire sends `{roomId}` to each one's `user_<id>_unreads`) right after its commit and
/// before the process's write lock is released; returns what `committed` returned beside the
/// message.
///
/// **Group commit**: the posts that arrive while a commit runs wait in `commits` and go into
/// the next transaction together: one multi-row `INSERT … RETURNING` (one statement, run on
/// the committing task's own thread, [`super::inline::Inline`], and one WAL commit for all of
/// them, at most
/// [`GROUP_COMMIT_MAX`]). Each post is still answered only after its own commit. The groups
/// are committed by a task of their own, spawned by the first post to find none running and
/// ending when the queue is empty: a post whose request is dropped (its client gave up) stays
/// queued and is stored all the same, and never holds up or takes down the posts queued with
/// it or after it. A group whose statement fails (a taken `client_message_id`) is
/// inserted again one post at a time, so only the offending post fails. A post with an
/// attachment commits alone (its blob is attached in the same transaction).
///
/// The member ids are read just before the insert, under the same write lock (memberships
/// change only under it too, and advance the cache's count at their commit), so they are the
/// members at the commit — through `cache` ([`super::auth_cache::AuthCache::member_ids`]),
/// which sees this process's changes at once and another process's within its time to live.
///
/// Messages are numbered and committed under that lock, and `committed` runs for a group's
/// posts in the order of their ids, so whatever `committed` does (the room's `append`
/// broadcast) happens in the order of the messages' ids: two concurrent posts can never be
/// announced in the reverse order of their commits. `committed` must be quick and must not
/// wait (it holds up every other write); a broadcast qualifies, as it only queues frames. It is
/// not run when the insert fails. Having the members at hand, it can queue a message and its
/// unread notices in one pass, so that each member's connection writes both at once.
///
/// # Errors
/// Reading the members failed, or the insert did ([`super::busy`] past the write wait);
/// nothing is stored then.
pub async fn create_then<T: Send + 'static>(
    pool: &SqlitePool,
    cache: &std::sync::Arc<super::auth_cache::AuthCache>,
    commits: &GroupCommit,
    new: &NewMessage<'_>,
    committed: impl FnOnce(&Message, &[i64]) -> T + Send + 'static,
) -> sqlx::Result<(Message, T)> {
    if let Some(blob_id) = new.attachment_blob_id {
        return create_with_attachment(pool, cache, new, blob_id, committed).await;
    }
    let (done_tx, done) = tokio::sync::oneshot::channel();
    let pending = Pending {
        new: Owned::of(new),
        finish: Box::new(move |result, member_ids| {
            let _ = done_tx.send(result.map(|message| {
                let out = committed(&message, member_ids);
                (message, out)
            }));
        }),
        queued: std::time::Instant::now(),
    };
    let leads = {
        let mut queue = commits.shared.queue.lock();
        queue.pending.push(pending);
        !std::mem::replace(&mut queue.leading, true)
    };
    if leads {
        tokio::spawn(commit_groups(pool.clone(), cache.clone(), commits.clone()));
    }
    done.await.unwrap_or_else(|_| Err(gone()))
}

/// The committing task of [`create_then`]: commits the queued posts group by group until the
/// queue is empty, then ends (the next post to arrive spawns another).
async fn commit_groups(
    pool: SqlitePool,
    cache: std::sync::Arc<super::auth_cache::AuthCache>,
    commits: GroupCommit,
) {
    // Should this task end early (a panic in a post's `committed`, the runtime shutting down),
    // the next post to arrive spawns another, which commits what is still queued.
    struct Ends<'a> {
        commits: &'a GroupCommit,
        done: bool,
    }
    impl Drop for Ends<'_> {
        fn drop(&mut self) {
            if !self.done {
                self.commits.shared.queue.lock().leading = false;
            }
        }
    }
    let mut ends = Ends {
        commits: &commits,
        done: false,
    };
    loop {
        // The insert runs on this thread and does not yield: first let the tasks that are
        // ready (posts already read) queue theirs, so that they join this group.
        tokio::task::yield_now().await;
        // Every post waits at most WRITE_WAIT from when it was queued, however many groups
        // are ahead of it: the group's deadline is its oldest post's (the front of the queue).
        let deadline = commits
            .shared
            .queue
            .lock()
            .pending
            .first()
            .map_or_else(std::time::Instant::now, |p| p.queued)
            + super::WRITE_WAIT;
        let write =
            super::write_lock_until(deadline.min(std::time::Instant::now() + super::LOCK_WAIT))
                .await;
        let group: Vec<Pending> = {
            let mut queue = commits.shared.queue.lock();
            let n = queue.pending.len().min(GROUP_COMMIT_MAX);
            queue.pending.drain(..n).collect()
        };
        match write {
            Ok(write) => {
                commit_group(&pool, &cache, &commits, group, deadline).await;
                drop(write);
            }
            Err(_) => {
                for p in group {
                    (p.finish)(Err(busy_since(p.queued)), &[]);
                }
            }
        }
        let mut queue = commits.shared.queue.lock();
        if queue.pending.is_empty() {
            // Under the queue's lock: a post queued from now on finds no one leading.
            queue.leading = false;
            ends.done = true;
            return;
        }
    }
}

/// Most posts one group commit takes ([`create_then`]); more wait for the next.
pub const GROUP_COMMIT_MAX: usize = 64;

// Every group size's insert stays prepared on the inline connection.
const _: () = assert!(GROUP_COMMIT_MAX < super::inline::CACHED_STATEMENTS);

/// The posts waiting for the next group commit of [`create_then`] (one per database), and
/// how many transactions and posts it has committed. A handle: clones share the queue.
#[derive(Clone, Debug, Default)]
pub struct GroupCommit {
    shared: std::sync::Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    queue: parking_lot::Mutex<Queue>,
    /// The connection the groups are inserted on.
    inline: super::inline::Inline,
    transactions: std::sync::atomic::AtomicU64,
    posts: std::sync::atomic::AtomicU64,
}

impl GroupCommit {
    /// Transactions committed so far (one per group).
    pub fn transactions(&self) -> u64 {
        self.shared
            .transactions
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Posts committed so far (through groups).
    pub fn posts(&self) -> u64 {
        self.shared.posts.load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[derive(Default)]
struct Queue {
    pending: Vec<Pending>,
    /// Whether the committing task ([`commit_groups`]) is running.
    leading: bool,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("pending", &self.pending.len())
            .field("leading", &self.leading)
            .finish()
    }
}

/// What the committing task runs for a post: its answer (the stored message, or the error)
/// with the room's member ids.
type Finish = Box<dyn FnOnce(sqlx::Result<Message>, &[i64]) + Send>;

struct Pending {
    new: Owned,
    finish: Finish,
    /// When it was queued: it waits at most [`super::WRITE_WAIT`] from then.
    queued: std::time::Instant,
}

/// A [`NewMessage`] without an attachment, owned.
struct Owned {
    room_id: i64,
    creator_id: i64,
    creator_name: String,
    client_message_id: String,
    body: String,
    plain_text: Option<String>,
    creator_avatar: Option<i64>,
}

impl Owned {
    fn of(new: &NewMessage<'_>) -> Self {
        Self {
            room_id: new.room_id,
            creator_id: new.creator_id,
            creator_name: new.creator_name.to_owned(),
            client_message_id: new.client_message_id.to_owned(),
            body: new.body.to_owned(),
            plain_text: new.plain_text.map(str::to_owned),
            creator_avatar: new.creator_avatar,
        }
    }

    fn into_message(self, id: i64, now: i64, creator_bio: String) -> Message {
        Message {
            id,
            room_id: self.room_id,
            creator_id: self.creator_id,
            creator_name: self.creator_name,
            creator_bio,
            client_message_id: self.client_message_id,
            body: self.body,
            created_at: now,
            updated_at: now,
            boosts: Vec::new(),
            attachment: None,
            creator_avatar: self.creator_avatar,
            thread: None,
        }
    }
}

/// The inserted message's author's bio (empty when none), as a `RETURNING` column: read in the
/// insert's own statement, so a post costs no second query for the name's title.
macro_rules! creator_bio {
    () => {
        "(SELECT COALESCE(bio, '') FROM users WHERE users.id = messages.creator_id)"
    };
}
/// `creator_bio!` as a string, for statements built at run time.
const CREATOR_BIO: &str = creator_bio!();

fn gone() -> sqlx::Error {
    sqlx::Error::WorkerCrashed
}

/// A copy of `e` for each post of a group that fails together.
fn copy_error(e: &sqlx::Error) -> sqlx::Error {
    if super::is_busy(e) {
        super::busy(super::LOCK_WAIT)
    } else {
        sqlx::Error::Protocol(e.to_string())
    }
}

/// [`super::busy`] for a post queued at `queued`, with its own wait.
fn busy_since(queued: std::time::Instant) -> sqlx::Error {
    super::busy(queued.elapsed())
}

/// The insert of `news`, stamped `now`, on the post path's own connection
/// ([`super::inline::Inline`], on the calling thread): `INSERT … VALUES (…), (…) … RETURNING
/// id, client_message_id` and the author's bio ([`CREATOR_BIO`], read in the same statement),
/// one row each, with their values bound; one statement (atomic in autocommit). One statement
/// text per group size, each prepared once per connection.
fn insert(
    conn: &rusqlite::Connection,
    news: &[Owned],
    now: i64,
) -> rusqlite::Result<Vec<(i64, String, String)>> {
    let mut sql = String::from(
        "INSERT INTO messages (room_id, creator_id, client_message_id, body, plain_text, created_at, updated_at) VALUES ",
    );
    for i in 0..news.len() {
        if i > 0 {
            sql.push_str(", ");
        }
        sql.push_str("(?, ?, ?, ?, ?, ?, ?)");
    }
    sql.push_str(" RETURNING id, client_message_id, ");
    sql.push_str(CREATOR_BIO);
    let mut statement = conn.prepare_cached(&sql)?;
    let mut values: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(news.len() * 7);
    for new in news {
        values.extend_from_slice(&[
            &new.room_id,
            &new.creator_id,
            &new.client_message_id,
            &new.body,
            &new.plain_text,
            &now,
            &now,
        ]);
    }
    let rows = statement.query_map(values.as_slice(), |row| {
        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
    })?;
    rows.collect()
}

/// Commits `group` (under the write lock) and answers each post, in the order of the ids;
/// gives up at `deadline` (the posts still waiting for SQLite fail with [`super::busy`]).
async fn commit_group(
    pool: &SqlitePool,
    cache: &super::auth_cache::AuthCache,
    commits: &GroupCommit,
    group: Vec<Pending>,
    deadline: std::time::Instant,
) {
    if group.is_empty() {
        return;
    }
    // Only the posts' data is borrowed across the awaits below (their answers are not `Sync`).
    let (news, answers): (Vec<Owned>, Vec<(Finish, std::time::Instant)>) = group
        .into_iter()
        .map(|p| (p.new, (p.finish, p.queued)))
        .unzip();
    if std::time::Instant::now() >= deadline {
        for (finish, queued) in answers {
            finish(Err(busy_since(queued)), &[]);
        }
        return;
    }
    // The members of each room the group posts to, read under the write lock.
    let mut members: Vec<(i64, std::sync::Arc<[i64]>)> = Vec::new();
    for new in &news {
        if members.iter().any(|(room, _)| *room == new.room_id) {
            continue;
        }
        match cache.member_ids(pool, new.room_id).await {
            Ok(ids) => members.push((new.room_id, ids)),
            Err(e) => {
                for (finish, _) in answers {
                    finish(Err(copy_error(&e)), &[]);
                }
                return;
            }
        }
    }
    let members_of = |room: i64| -> &[i64] {
        members
            .iter()
            .find(|(r, _)| *r == room)
            .map_or(&[][..], |(_, ids)| &ids[..])
    };
    let committed = |posts: u64| {
        commits
            .shared
            .transactions
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        commits
            .shared
            .posts
            .fetch_add(posts, std::sync::atomic::Ordering::Relaxed);
    };
    // Stamped under the write lock, so posts commit in the order of their timestamps.
    let now = super::now_ms();
    let result = commits
        .shared
        .inline
        .run(pool, deadline, |c| insert(c, &news, now))
        .await;
    let group = news.into_iter().zip(answers);
    match result {
        Ok(rows) => {
            committed(rows.len() as u64);
            let mut stored: Vec<(i64, String, Owned, Finish)> = group
                .filter_map(|(new, (finish, _))| {
                    let row = rows
                        .iter()
                        .find(|(_, cid, _)| *cid == new.client_message_id)
                        .map(|(id, _, bio)| (*id, bio.clone()));
                    match row {
                        Some((id, bio)) => Some((id, bio, new, finish)),
                        None => {
                            finish(Err(sqlx::Error::RowNotFound), &[]);
                            None
                        }
                    }
                })
                .collect();
            stored.sort_by_key(|(id, _, _, _)| *id);
            for (id, bio, new, finish) in stored {
                let room = new.room_id;
                finish(Ok(new.into_message(id, now, bio)), members_of(room));
            }
        }
        Err(e) if super::is_busy(&e) => {
            // Locked from outside until the deadline: each post fails with its own wait.
            for (_, (finish, queued)) in group {
                finish(Err(busy_since(queued)), &[]);
            }
        }
        Err(e) if group.len() == 1 => {
            if let Some((_, (finish, _))) = group.into_iter().next() {
                finish(Err(e), &[]);
            }
        }
        Err(_) => {
            // One post of the group failed the statement (a taken client message id, a room
            // deleted meanwhile): each alone, answered at its own commit, so that only that
            // one fails.
            for (new, (finish, queued)) in group {
                let now = super::now_ms();
                let inserted = commits
                    .shared
                    .inline
                    .run(pool, deadline, |c| {
                        insert(c, std::slice::from_ref(&new), now)
                    })
                    .await
                    .and_then(|rows| {
                        rows.into_iter()
                            .next()
                            .map(|(id, _, bio)| (id, bio))
                            .ok_or(sqlx::Error::RowNotFound)
                    });
                match inserted {
                    Ok((id, bio)) => {
                        committed(1);
                        let room = new.room_id;
                        finish(Ok(new.into_message(id, now, bio)), members_of(room));
                    }
                    Err(e) if super::is_busy(&e) => finish(Err(busy_since(queued)), &[]),
                    Err(e) => finish(Err(e), &[]),
                }
            }
        }
    }
}

/// [`create_then`] for a post with a file: the message and its attachment in one transaction.
async fn create_with_attachment<T>(
    pool: &SqlitePool,
    cache: &super::auth_cache::AuthCache,
    new: &NewMessage<'_>,
    blob_id: i64,
    committed: impl FnOnce(&Message, &[i64]) -> T,
) -> sqlx::Result<(Message, T)> {
    // The message and its attachment commit together or not at all.
    let mut tx = super::Write::begin(pool, super::Access::Kept).await?;
    let member_ids = cache.member_ids(pool, new.room_id).await?;
    let now = super::now_ms();
    let (id, bio): (i64, String) = sqlx::query_as(concat!(
        "INSERT INTO messages (room_id, creator_id, client_message_id, body, plain_text, created_at, updated_at) ",
        "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id, ",
        creator_bio!()
    ))
    .bind(new.room_id)
    .bind(new.creator_id)
    .bind(new.client_message_id)
    .bind(new.body)
    .bind(new.plain_text)
    .bind(now)
    .bind(now)
    .fetch_one(&mut *tx)
    .await?;
    super::blobs::attach(
        &mut *tx,
        "attachment",
        super::blobs::record::MESSAGE,
        id,
        blob_id,
    )
    .await?;
    let held = tx.commit().await?;
    let blob = super::blobs::find(pool, blob_id).await?;
    let mut message = Owned::of(new).into_message(id, now, bio);
    message.attachment = blob.map(|blob| super::blobs::Attached { blob, thumb: None });
    let out = committed(&message, &member_ids);
    drop(held);
    Ok((message, out))
}

/// Replaces a message's body (HTML) and its plain text; returns the updated message, or None
/// when it does not exist.
pub async fn update_body(
    pool: &SqlitePool,
    room_id: i64,
    id: i64,
    body: &str,
    plain_text: &str,
) -> sqlx::Result<Option<Message>> {
    // Its triggers write to the full-text index: see `begin_write`.
    let mut tx = super::Write::begin(pool, super::Access::Kept).await?;
    let changed = sqlx::query(
        "UPDATE messages SET body = ?, plain_text = ?, updated_at = ? WHERE room_id = ? AND id = ?",
    )
    .bind(body)
    .bind(plain_text)
    .bind(super::now_ms())
    .bind(room_id)
    .bind(id)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    let _held = tx.commit().await?;
    if changed == 0 {
        return Ok(None);
    }
    find(pool, room_id, id).await
}

/// Deletes a message (and its boosts); returns it as it was, or None when it does not exist.
pub async fn delete(pool: &SqlitePool, room_id: i64, id: i64) -> sqlx::Result<Option<Message>> {
    // Its triggers write to the full-text index: see `begin_write`.
    let mut tx = super::Write::begin(pool, super::Access::Kept).await?;
    let Some(message) = find(pool, room_id, id).await? else {
        return Ok(None);
    };
    sqlx::query("DELETE FROM messages WHERE room_id = ? AND id = ?")
        .bind(room_id)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(Some(message))
}

/// Adds a boost to a message; returns it with the booster's name.
pub async fn boost(
    pool: &SqlitePool,
    message_id: i64,
    booster_id: i64,
    booster_name: &str,
    content: &str,
) -> sqlx::Result<Boost> {
    let one = super::One::begin(pool, super::Access::Kept).await?;
    let now = super::now_ms();
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO boosts (message_id, booster_id, content, created_at, updated_at) VALUES (?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(message_id)
    .bind(booster_id)
    .bind(content)
    .bind(now)
    .bind(now)
    .fetch_one(&*one)
    .await?;
    one.done();
    Ok(Boost {
        id,
        message_id,
        booster_id,
        booster_name: booster_name.to_owned(),
        content: content.to_owned(),
    })
}

/// A person a message mentions ([`mentionees`]).
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Mentionee {
    /// User id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Member, administrator or bot (a bot's webhook is called when it is mentioned).
    pub role: super::Role,
}

/// The people `message` mentions who are active members of its room now, in order of first
/// mention (Campfire's `Message#mentionees`: `room.users.where(id: mentioned_users)`): who a
/// mention notification or a bot's webhook goes to. One query, and none when the body mentions
/// no one. A mention of someone outside the room is cut when the body is stored; one who left
/// since is left out here.
///
/// # Errors
/// A database failure.
pub async fn mentionees(pool: &SqlitePool, message: &Message) -> sqlx::Result<Vec<Mentionee>> {
    let ids = crate::rich_text::mentioned_user_ids(&message.body);
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut found = mentionable(pool, message.room_id, &ids).await?;
    found.sort_by_key(|m| ids.iter().position(|id| *id == m.id));
    Ok(found)
}

/// Which of the users `ids` are active members of room `room_id` (of its parent's room, for a
/// thread) (in no particular order): who a new body may mention. One query.
///
/// # Errors
/// A database failure.
pub async fn mentionable(
    pool: &SqlitePool,
    room_id: i64,
    ids: &[i64],
) -> sqlx::Result<Vec<Mentionee>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let json = serde_json::to_string(ids).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    sqlx::query_as(
        "SELECT u.id, u.name, u.role FROM users u \
         JOIN memberships m ON m.user_id = u.id \
           AND m.room_id = COALESCE((SELECT parent_room_id FROM rooms WHERE id = ?1), ?1) \
         WHERE u.status = 'active' AND u.id IN (SELECT value FROM json_each(?2))",
    )
    .bind(room_id)
    .bind(json)
    .fetch_all(pool)
    .await
}

/// Counts a room's messages.
pub async fn count(pool: &SqlitePool, room_id: i64) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM messages WHERE room_id = ?")
        .bind(room_id)
        .fetch_one(pool)
        .await
}
