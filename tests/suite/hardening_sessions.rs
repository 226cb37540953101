//! Restored cable sessions (`actioncable-v1-ext-json`, `/cable?sid=…`) after the account was
//! cut off while the socket was away: a restore is an identification. On one node and on a
//! cable node (`--role cable`, asking its app node), a restore after a sign-out, a
//! deactivation, a ban or a password change is refused as a fresh connect is (`unauthorized`),
//! a room the user no longer belongs to is not restored (its subscribe is rejected), no post of
//! the room arrives, and the revoked session's stored state is gone from every node. A change
//! that no revocation carried to the node (made in the database by another process) is found
//! by the restore itself.

use std::time::Duration;

use crate::common::{self, forms, subscribe_cmd, text, Client, TestServer, Ws, WsEvent};
use crate::redis::{closed_room_with, room_messages_of, unique_prefix, wait_link};

const T: Duration = Duration::from_secs(10);
const EXT: &str = "actioncable-v1-ext-json";
const SECRET: &str = "secret123456";
const DAVID: &str = "david@example.com";
const UNAUTHORIZED: &str = r#"{"type":"disconnect","reason":"unauthorized","reconnect":false}"#;

/// Where the clients' sockets go.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Topology {
    /// One node serving pages and `/cable` (`--role all`).
    One,
    /// An app node serving pages and a cable node serving `/cable`, sharing a Redis.
    AppAndCable,
}

/// The nodes of a [`Topology`]: index 0 serves pages, the last one `/cable`.
pub(crate) struct Nodes {
    topology: Topology,
    servers: Vec<TestServer>,
}

impl Nodes {
    pub(crate) async fn start(
        topology: Topology,
        tweak: impl Fn(&mut hearth::config::Config),
    ) -> Self {
        let servers = match topology {
            Topology::One => vec![TestServer::start_with(&tweak).await],
            Topology::AppAndCable => {
                let url = crate::redis::redis_url();
                let prefix = unique_prefix("sessions");
                let redis = |c: &mut hearth::config::Config| {
                    c.pubsub = hearth::config::PubSubKind::Redis;
                    c.redis_url = url.clone().into();
                    c.redis_channel_prefix = prefix.clone();
                };
                let app = TestServer::start_in(common::temp_dir("sessions-app"), |c| {
                    redis(c);
                    c.role = hearth::config::Role::App;
                    tweak(c);
                })
                .await;
                let app_url = format!("http://{}", app.addr);
                let cable_dir = common::temp_dir("sessions-cable");
                let cable = TestServer::start_in(cable_dir.clone(), |c| {
                    redis(c);
                    c.role = hearth::config::Role::Cable;
                    c.app_url = Some(app_url.clone());
                    c.database = cable_dir.join("never-opened.sqlite3");
                    tweak(c);
                })
                .await;
                vec![app, cable]
            }
        };
        for node in &servers {
            if matches!(topology, Topology::AppAndCable) {
                wait_link(node, true).await;
            }
        }
        Self { topology, servers }
    }

    /// The node serving pages (and the database).
    pub(crate) fn app(&self) -> &TestServer {
        &self.servers[0]
    }

    /// The node serving `/cable`.
    pub(crate) fn cable(&self) -> &TestServer {
        self.servers.last().expect("a node")
    }

    /// Sessions kept for a restore, on every node together.
    pub(crate) fn kept(&self) -> usize {
        self.servers
            .iter()
            .map(|s| s.state.sockets.sessions.len())
            .sum()
    }
}

/// Opens `/cable?sid=<sid>` (no `sid` when empty) on the cable node with `cookie`, offering
/// the extended protocol; returns the socket and its first frame.
pub(crate) async fn ext(nodes: &Nodes, cookie: &str, sid: &str) -> (Ws, String) {
    let path = if sid.is_empty() {
        "/cable".to_owned()
    } else {
        format!("/cable?sid={sid}")
    };
    let node = nodes.cable();
    let mut ws = Ws::connect_to(
        node.addr,
        &path,
        Some(cookie),
        Some(&node.origin()),
        Some(EXT),
    )
    .await;
    assert_eq!(ws.status, 101, "{}", ws.response_head);
    match ws.next_non_ping(T).await {
        Some(WsEvent::Text(first)) => (ws, first),
        other => panic!("{:?}: no first frame: {other:?}", nodes.topology),
    }
}

/// Opens an extended-protocol session with `cookie`, subscribes to each of `identifiers`,
/// drops the socket without a close frame (a lost network) and waits until the cable node
/// keeps the session; returns its `sid`.
pub(crate) async fn stored_session(nodes: &Nodes, cookie: &str, identifiers: &[&str]) -> String {
    let before = nodes.kept();
    let (mut ws, welcome) = ext(nodes, cookie, "").await;
    let welcome: serde_json::Value = serde_json::from_str(&welcome).expect("a JSON welcome");
    let sid = welcome["sid"].as_str().expect("a sid").to_owned();
    for id in identifiers {
        ws.send_text(&subscribe_cmd(id)).await;
        assert_eq!(ws.next_non_ping(T).await, text(&common::confirm(id)));
    }
    drop(ws);
    eventually(|| nodes.kept() == before + 1, "the dropped session is kept").await;
    sid
}

/// Polls `done` for up to 5 s; panics with `what` when it never holds.
async fn eventually(done: impl Fn() -> bool, what: &str) {
    for _ in 0..250 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("never reached: {what}");
}

/// Room `room`'s `RoomMessagesChannel` identifier as `c`'s room page names it.
pub(crate) async fn room_identifier(c: &mut Client, room: i64) -> String {
    let (_, html) = c.room(room).await;
    let signed = common::attr_after(
        &html,
        "channel=\"RoomMessagesChannel\" signed-stream-name=\"",
    )
    .expect("the room page names its stream")
    .replace("&#x3D;", "=");
    crate::redis::room_identifier(&signed)
}

/// Reads `ws` until it closes, asserting that no frame carries `needle`; returns the frames.
async fn frames_until_closed(ws: &mut Ws, needle: &str, context: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        match ws.next_non_ping(T).await {
            Some(WsEvent::Text(t)) => {
                assert!(!t.contains(needle), "{context}: a post arrived: {t}");
                seen.push(t);
            }
            Some(WsEvent::Close(_) | WsEvent::Eof) => return seen,
            None => panic!("{context}: the socket stayed open after {seen:?}"),
        }
    }
}

/// Asserts that no frame carrying `needle` arrives on `ws` within 800 ms.
async fn never_sees(ws: &mut Ws, needle: &str, context: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(800);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match ws.next_non_ping(left).await {
            None => return,
            Some(WsEvent::Text(t)) => {
                assert!(!t.contains(needle), "{context}: a post arrived: {t}")
            }
            Some(other) => panic!("{context}: the socket ended: {other:?}"),
        }
    }
}

/// How an account is cut off, through the app's own routes.
#[derive(Clone, Copy, Debug)]
enum Cut {
    /// The member signs out (that session only).
    SignOut,
    /// An administrator deactivates the member.
    Deactivation,
    /// An administrator bans the member.
    Ban,
    /// The member changes the password from another session, which ends this one.
    PasswordChange,
}

/// Signs `email` in on the app node; `cut` then cuts that session off (through `admin` for
/// the administrator's cuts, through another session of the member for a password change).
async fn cut_off(
    app: &TestServer,
    admin: &mut Client,
    victim: &mut Client,
    user_id: i64,
    cut: Cut,
) {
    let r = match cut {
        Cut::SignOut => {
            let token = forms::csrf(victim, "/rooms/opens/new").await;
            forms::send(victim, "DELETE", "/session", &[], &token).await
        }
        Cut::Deactivation => {
            let path = format!("/users/{user_id}");
            let token = forms::csrf(admin, "/account/users").await;
            forms::send(
                admin,
                "PATCH",
                &path,
                &[("user[status]", "deactivated")],
                &token,
            )
            .await
        }
        Cut::Ban => {
            let path = format!("/users/{user_id}/ban");
            let token = forms::csrf(admin, "/account/users").await;
            forms::send(admin, "POST", &path, &[], &token).await
        }
        Cut::PasswordChange => {
            let mut elsewhere = app.signed_in(DAVID, SECRET).await;
            let token = forms::csrf(&mut elsewhere, "/users/me/profile").await;
            let pairs = [
                ("user[name]", "David"),
                ("user[bio]", ""),
                ("user[password]", "another-secret-1"),
                ("user[password_challenge]", SECRET),
            ];
            forms::send(&mut elsewhere, "PATCH", "/users/me/profile", &pairs, &token).await
        }
    };
    assert!(
        r.status == 302 || r.status == 204,
        "{cut:?}: {} {}",
        r.status,
        r.body
    );
}

/// For each [`Cut`]: a session kept after its socket dropped, the account cut off, then
/// every node has forgotten the session, and a restore with the old cookie and `sid` is
/// refused as a fresh connect is, twice, and no post of the room reaches it.
async fn cut_off_sessions_are_not_restored(topology: Topology) {
    let nodes = Nodes::start(topology, |_| {}).await;
    let app = nodes.app();
    let mut admin = app.signed_in(DAVID, SECRET).await;
    // Posts into the room: a session of Jason's that none of the cuts ends.
    let mut poster = app.signed_in("jason@example.com", SECRET).await;
    let (poster_csrf, _) = poster.room(1).await;
    for (cut, email, user_id) in [
        (Cut::SignOut, "jason@example.com", 2),
        (Cut::Deactivation, "jz@example.com", 3),
        (Cut::Ban, "kevin@example.com", 4),
        (Cut::PasswordChange, DAVID, 1),
    ] {
        let context = format!("{topology:?}, {cut:?}");
        let mut victim = app.signed_in(email, SECRET).await;
        let cookie = victim.cookie_header();
        let id = room_identifier(&mut victim, 1).await;
        let kept = nodes.kept();
        let sid = stored_session(&nodes, &cookie, &[&id]).await;
        cut_off(app, &mut admin, &mut victim, user_id, cut).await;
        // Every node forgets the session; the cable node held no socket of it meanwhile.
        eventually(
            || nodes.kept() == kept,
            &format!("{context}: the revoked session's state is deleted on every node"),
        )
        .await;
        for attempt in ["restore", "second restore"] {
            let (mut ws, first) = ext(&nodes, &cookie, &sid).await;
            assert_eq!(
                first, UNAUTHORIZED,
                "{context}: the {attempt} was not refused as a fresh connect is"
            );
            let cid = format!("after-{cut:?}-{attempt}").replace(' ', "-");
            let r = poster.post_message(1, &cid, &cid, &poster_csrf).await;
            assert_eq!(r.status, 200, "{}", r.body);
            frames_until_closed(&mut ws, &cid, &context).await;
        }
        // A fresh connect with the old cookie is refused the same way.
        let (_, first) = ext(&nodes, &cookie, "").await;
        assert_eq!(first, UNAUTHORIZED, "{context}: a fresh connect");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_cut_off_while_its_socket_was_away_is_not_restored_on_a_cable_node() {
    cut_off_sessions_are_not_restored(Topology::AppAndCable).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_cut_off_while_its_socket_was_away_is_not_restored_on_one_node() {
    cut_off_sessions_are_not_restored(Topology::One).await;
}

/// Ends a session and deactivates a user directly in the database (as a console or another
/// process would: no node hears of it), within the auth cache's time to live: the restore
/// asks who the session is and is refused.
async fn a_restore_identifies_again(topology: Topology) {
    let nodes = Nodes::start(topology, |_| {}).await;
    let app = nodes.app();
    for (email, sql) in [
        (
            "jason@example.com",
            "DELETE FROM sessions WHERE user_id = 2",
        ),
        (
            "jz@example.com",
            "UPDATE users SET status = 'deactivated' WHERE id = 3",
        ),
    ] {
        let context = format!("{topology:?}, {sql}");
        let mut victim = app.signed_in(email, SECRET).await;
        let cookie = victim.cookie_header();
        let id = room_identifier(&mut victim, 1).await;
        let kept = nodes.kept();
        let sid = stored_session(&nodes, &cookie, &[&id]).await;
        sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(&app.state.db.pool)
            .await
            .expect("the change");
        let (mut ws, first) = ext(&nodes, &cookie, &sid).await;
        assert_eq!(
            first, UNAUTHORIZED,
            "{context}: the restore was not refused"
        );
        frames_until_closed(&mut ws, "message", &context).await;
        assert_eq!(
            nodes.kept(),
            kept,
            "{context}: the stored session is deleted"
        );
        // Nothing is left to restore (a fresh connect may still be let in from the auth
        // cache within `--auth-cache-seconds`, as any connect is after such a change).
        let (_, first) = ext(&nodes, &cookie, &sid).await;
        assert!(
            first == UNAUTHORIZED || !first.contains("restored"),
            "{context}: a second restore: {first}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_on_a_cable_node_asks_the_app_node_who_the_session_is() {
    a_restore_identifies_again(Topology::AppAndCable).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_on_one_node_looks_the_session_up_again() {
    a_restore_identifies_again(Topology::One).await;
}

/// Kevin's restore after losing a closed room: through the app (the room's members edited)
/// and directly in the database (no revocation reaches any node). The room is not among the
/// restored identifiers, its subscribe is rejected as a fresh one is, and no post of it
/// arrives; the open room he still belongs to is restored.
async fn a_removed_membership_is_not_restored(topology: Topology) {
    // Membership lookups not cached, so that a change made in the database is seen at once,
    // as by a fresh subscribe.
    let nodes = Nodes::start(topology, |c| c.auth_cache_seconds = 0).await;
    let app = nodes.app();
    let mut david = app.signed_in(DAVID, SECRET).await;
    let mut kevin = app.signed_in("kevin@example.com", SECRET).await;
    let cookie = kevin.cookie_header();
    let open = room_identifier(&mut kevin, 1).await;
    for through_app in [true, false] {
        let context = format!("{topology:?}, removed through the app: {through_app}");
        let room = closed_room_with(app, &mut david, 4).await;
        let (closed, _) = room_messages_of(app, room).await;
        let kept = nodes.kept();
        let sid = stored_session(&nodes, &cookie, &[&open, &closed]).await;
        if through_app {
            let r = forms::submit(
                &mut david,
                "PATCH",
                &format!("/rooms/closeds/{room}"),
                &[("room[name]", "Secret")],
            )
            .await;
            assert_eq!(r.status, 302, "{}", r.body);
        } else {
            sqlx::query("DELETE FROM memberships WHERE room_id = ? AND user_id = 4")
                .bind(room)
                .execute(&app.state.db.pool)
                .await
                .expect("the membership deleted");
        }
        let (mut ws, welcome) = ext(&nodes, &cookie, &sid).await;
        let welcome: serde_json::Value = serde_json::from_str(&welcome).expect("JSON");
        let restored: Vec<&str> = welcome["restored_ids"]
            .as_array()
            .map(|ids| ids.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        assert!(
            !restored.contains(&closed.as_str()),
            "{context}: the room was restored: {welcome}"
        );
        if !through_app {
            assert_eq!(
                restored,
                [open.as_str()],
                "{context}: the open room is restored: {welcome}"
            );
        }
        // The client subscribes again to what was not restored: rejected, as a fresh
        // subscribe is.
        ws.send_text(&subscribe_cmd(&closed)).await;
        let answer = loop {
            match ws.next_non_ping(T).await {
                Some(WsEvent::Text(t)) if t.contains("\"identifier\"") => break t,
                Some(WsEvent::Text(_)) => {}
                other => panic!("{context}: no answer to the subscribe: {other:?}"),
            }
        };
        assert_eq!(answer, common::reject(&closed), "{context}");
        let (csrf, _) = david.room(room).await;
        let cid = format!("after-removal-{through_app}");
        let r = david.post_message(room, &cid, &cid, &csrf).await;
        assert_eq!(r.status, 200, "{}", r.body);
        never_sees(&mut ws, &cid, &context).await;
        assert_eq!(
            nodes.kept(),
            kept,
            "{context}: the restore used the session up"
        );
        // This socket is kept in turn when it drops.
        drop(ws);
        eventually(|| nodes.kept() == kept + 1, "the restored session is kept").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_on_a_cable_node_rechecks_every_room() {
    a_removed_membership_is_not_restored(Topology::AppAndCable).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_on_one_node_rechecks_every_room() {
    a_removed_membership_is_not_restored(Topology::One).await;
}
