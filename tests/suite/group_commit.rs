//! Group commit of posts (`db::messages::create_then`): posts that arrive while a commit runs
//! share the next transaction, each is answered after its commit, their commit callbacks run
//! in the order of the ids, and a taken `client_message_id` fails only its own post.

use crate::common;

use std::sync::{Arc, Mutex};

use common::TestServer;
use hearth::db::messages::{self, NewMessage};

fn new<'a>(cid: &'a str, body: &'a str) -> NewMessage<'a> {
    NewMessage {
        room_id: 1,
        creator_id: 1,
        creator_name: "David",
        client_message_id: cid,
        body,
        attachment_blob_id: None,
        plain_text: Some(body),
        creator_avatar: None,
    }
}

/// Posts one message (client message id `cid`) to room 1, which fills the room's member cache.
async fn fill_member_cache(state: &hearth::state::AppState, cid: &str) {
    messages::create_then(
        &state.db.pool,
        &state.db.auth_cache,
        &state.db.commits,
        &new(cid, "<div>first</div>"),
        |_, _| (),
    )
    .await
    .expect("stored");
}

#[tokio::test]
async fn concurrent_posts_share_transactions_and_are_announced_in_id_order() {
    let server = TestServer::start().await;
    let state = server.state.clone();
    const POSTS: usize = 32;
    let cids: Vec<String> = (0..POSTS).map(|i| format!("group-{i}")).collect();
    let announced = Arc::new(Mutex::new(Vec::new()));
    // A first post fills the room's member cache: the group below meets no query that waits
    // (the insert itself runs on the committing task's thread, without a hand-off), so its
    // posts share a transaction only because the committing task lets the others queue first.
    fill_member_cache(&state, "group-warm").await;
    let before = state.db.commits.transactions();
    let posts = cids.iter().map(|cid| {
        let announced = announced.clone();
        let state = state.clone();
        async move {
            let (message, id) = messages::create_then(
                &state.db.pool,
                &state.db.auth_cache,
                &state.db.commits,
                &new(cid, "<div>hello</div>"),
                move |message, members| {
                    assert!(
                        !members.is_empty(),
                        "the room's members come with the commit"
                    );
                    announced.lock().unwrap().push(message.id);
                    message.id
                },
            )
            .await
            .expect("stored");
            assert_eq!(message.id, id);
            assert_eq!(&message.client_message_id, cid);
            // Answered only after its commit: another connection reads it.
            assert!(messages::in_room(&state.db.pool, 1, message.id)
                .await
                .unwrap());
            message.id
        }
    });
    let ids = futures_util::future::join_all(posts).await;
    let transactions = state.db.commits.transactions() - before;
    assert!(
        transactions <= (POSTS / 4) as u64,
        "{POSTS} concurrent posts took {transactions} transactions"
    );
    let announced = announced.lock().unwrap().clone();
    let mut sorted = announced.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(announced, sorted, "announced in the order of the ids");
    assert_eq!(announced.len(), POSTS);
    let mut all = ids.clone();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), POSTS, "every post has its own id");
    server.stop().await;
}

#[tokio::test]
async fn a_taken_client_message_id_fails_only_its_own_post_in_a_group() {
    let server = TestServer::start().await;
    let state = server.state.clone();
    messages::create(&state.db.pool, 1, 1, "David", "taken", "<div>first</div>")
        .await
        .unwrap();
    let cids = ["g-a", "g-b", "taken", "g-c", "g-d"];
    let posts = cids.iter().map(|cid| {
        let state = state.clone();
        async move {
            messages::create_then(
                &state.db.pool,
                &state.db.auth_cache,
                &state.db.commits,
                &new(cid, "<div>x</div>"),
                |_, _| (),
            )
            .await
        }
    });
    let results = futures_util::future::join_all(posts).await;
    for (cid, result) in cids.iter().zip(&results) {
        match (*cid, result) {
            ("taken", Err(e)) => assert!(
                e.as_database_error()
                    .is_some_and(|d| d.is_unique_violation()),
                "{e}"
            ),
            ("taken", Ok(_)) => panic!("a taken client message id was stored twice"),
            (_, Ok((m, ()))) => assert_eq!(m.client_message_id, *cid),
            (_, Err(e)) => panic!("{cid} failed with the group: {e}"),
        }
    }
    assert!(messages::count(&state.db.pool, 1).await.unwrap() >= 5);
    server.stop().await;
}

#[tokio::test]
async fn a_post_to_a_room_deleted_meanwhile_fails_alone_and_its_group_is_stored() {
    let server = TestServer::start().await;
    let state = server.state.clone();
    // So that the posts below share one group (see above).
    fill_member_cache(&state, "gone-warm").await;
    let cids: Vec<String> = (0..16).map(|i| format!("gone-{i}")).collect();
    let posts = cids.iter().enumerate().map(|(i, cid)| {
        let state = state.clone();
        async move {
            // The eighth post is to a room that no longer exists (deleted after its member
            // check): its foreign key fails.
            let room_id = if i == 7 { 999_999 } else { 1 };
            let post = NewMessage {
                room_id,
                ..new(cid, "<div>hello</div>")
            };
            messages::create_then(
                &state.db.pool,
                &state.db.auth_cache,
                &state.db.commits,
                &post,
                |_, _| (),
            )
            .await
        }
    });
    let results = futures_util::future::join_all(posts).await;
    for (i, result) in results.iter().enumerate() {
        if i == 7 {
            let e = result
                .as_ref()
                .expect_err("a post to a deleted room is refused");
            assert!(
                e.as_database_error()
                    .is_some_and(|d| d.is_foreign_key_violation()),
                "{e}"
            );
        } else {
            let (message, ()) = result.as_ref().expect("the rest of the group is stored");
            assert!(messages::in_room(&state.db.pool, 1, message.id)
                .await
                .unwrap());
        }
    }
    server.stop().await;
}

/// Counts room 1's messages whose client message id starts with `prefix`.
async fn stored_with_prefix(state: &hearth::state::AppState, prefix: &str) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM messages WHERE client_message_id LIKE ? || '%'")
        .bind(prefix)
        .fetch_one(&state.db.pool)
        .await
        .unwrap()
}

/// What `post` answered, waiting at most 10 s; panics, naming it `what`, when it was never
/// answered.
async fn answered(
    post: tokio::task::JoinHandle<Result<i64, String>>,
    what: &str,
) -> Result<i64, String> {
    tokio::time::timeout(std::time::Duration::from_secs(10), post)
        .await
        .unwrap_or_else(|_| panic!("{what} was never answered"))
        .unwrap()
}

/// Spawns a post of `cid` to room 1; the task answers what `create_then` answered.
fn spawn_post(
    state: &hearth::state::SharedState,
    cid: String,
) -> tokio::task::JoinHandle<Result<i64, String>> {
    let state = state.clone();
    tokio::spawn(async move {
        messages::create_then(
            &state.db.pool,
            &state.db.auth_cache,
            &state.db.commits,
            &new(&cid, "<div>queued</div>"),
            |_, _| (),
        )
        .await
        .map(|(message, ())| message.id)
        .map_err(|e| e.to_string())
    })
}

#[tokio::test]
async fn posts_whose_requests_were_dropped_never_stop_the_posts_after_them() {
    // Regression: 70 posts queued behind a held write lock, whose requests were then dropped
    // (their clients gave up), left the queue without a committing task; the next post
    // committed 64 of them as a group, handed the lead to itself and waited for ever, and so
    // did every post after it.
    let server = TestServer::start().await;
    let state = server.state.clone();
    fill_member_cache(&state, "warm-dropped").await;
    let held = hearth::db::Write::begin(&state.db.pool, hearth::db::Access::Kept)
        .await
        .unwrap();
    let dropped: Vec<_> = (0..70)
        .map(|i| spawn_post(&state, format!("dropped-{i}")))
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    for post in &dropped {
        post.abort();
    }
    for post in dropped {
        let _ = post.await;
    }
    drop(held);
    for cid in ["after-1", "after-2"] {
        let answer = answered(spawn_post(&state, cid.into()), cid).await;
        assert!(answer.is_ok(), "{cid}: {answer:?}");
    }
    // The dropped posts were stored all the same: their clients gave up, not the server.
    assert_eq!(stored_with_prefix(&state, "dropped-").await, 70);
    assert_eq!(stored_with_prefix(&state, "after-").await, 2);
}

#[tokio::test]
async fn a_post_whose_request_is_dropped_mid_commit_takes_none_of_its_group_down() {
    // Regression: the first post's task committed its group itself, so when its request was
    // dropped while SQLite was locked from outside, the other 29 posts of the group failed
    // with "attempted to communicate with a crashed background worker" and none was stored.
    use sqlx::ConnectOptions;
    let server = TestServer::start().await;
    let state = server.state.clone();
    fill_member_cache(&state, "warm-mid").await;
    let mut outside = state.db.pool.connect_options().connect().await.unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut outside)
        .await
        .unwrap();
    let posts: Vec<_> = (0..30)
        .map(|i| spawn_post(&state, format!("mid-{i}")))
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    posts[0].abort();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    sqlx::query("ROLLBACK").execute(&mut outside).await.unwrap();
    for (i, post) in posts.into_iter().enumerate().skip(1) {
        let answer = answered(post, &format!("post {i}")).await;
        assert!(answer.is_ok(), "post {i}: {answer:?}");
    }
    assert_eq!(stored_with_prefix(&state, "mid-").await, 30);
}
