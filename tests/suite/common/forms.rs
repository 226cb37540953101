//! Forms as a browser sends them, the database's answer to one query, and the room stream a
//! signed-in client watches: the steps most HTTP tests repeat.

use std::time::Duration;

use super::{
    attr_after, confirm, connect_with, csrf_meta, form, subscribe_cmd, text, Client, Response,
    TestServer, Ws, WsEvent,
};

const T: Duration = Duration::from_secs(10);

/// The CSRF token of the page at `path` (the page must answer 200).
pub async fn csrf(c: &mut Client, path: &str) -> String {
    let page = c.get(path).await;
    assert_eq!(page.status, 200, "{path}: {}", page.body);
    csrf_meta(&page.body)
}

/// Posts `pairs` and `token` to `path` as `method` (by `_method` when it is not `POST`).
pub async fn send(
    c: &mut Client,
    method: &str,
    path: &str,
    pairs: &[(&str, &str)],
    token: &str,
) -> Response {
    let mut all: Vec<(&str, &str)> = pairs.to_vec();
    all.push(("authenticity_token", token));
    if method != "POST" {
        all.push(("_method", method));
    }
    c.post_form(path, &form(&all), &[]).await
}

/// Saves closed room `closed` from its edit form with no member ticked (named "Plans"): only
/// the editor `c` stays in it, everyone else is removed (302 asserted).
pub async fn keep_only_its_editor(c: &mut Client, closed: i64) {
    let token = csrf(c, &format!("/rooms/closeds/{closed}/edit")).await;
    let path = format!("/rooms/closeds/{closed}");
    let r = send(c, "PATCH", &path, &[("room[name]", "Plans")], &token).await;
    assert_eq!(r.status, 302, "{}", r.body);
}

/// [`send`] with a fresh token from a page every member may see (`/rooms/opens/new`).
pub async fn submit(c: &mut Client, method: &str, path: &str, pairs: &[(&str, &str)]) -> Response {
    let token = csrf(c, "/rooms/opens/new").await;
    send(c, method, path, pairs, &token).await
}

/// One request of a table: method, path, form pairs and the status it must answer.
pub type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)], u16);

/// [`send`]s each case in order with `token` and asserts its status.
pub async fn expect_statuses(c: &mut Client, token: &str, cases: &[Case<'_>]) {
    for &(method, path, pairs, status) in cases {
        let r = send(c, method, path, pairs, token).await;
        assert_eq!(r.status, status, "{method} {path} {pairs:?}: {}", r.body);
    }
}

/// The one integer `sql` selects.
pub async fn scalar_i64(server: &TestServer, sql: &str) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap()
}

/// The one text `sql` selects.
pub async fn scalar_text(server: &TestServer, sql: &str) -> String {
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap()
}

/// Opens `/cable` as `c` and subscribes to room `room`'s message stream, as its page does.
pub async fn watch_room(server: &TestServer, c: &mut Client, room: i64) -> Ws {
    let page = c.get(&format!("/rooms/{room}")).await;
    assert_eq!(page.status, 200);
    let signed = attr_after(&page.body, "signed-stream-name=\"").expect("stream name");
    let identifier =
        serde_json::json!({"channel": "RoomMessagesChannel", "signed_stream_name": signed})
            .to_string();
    let mut ws = connect_with(server, c).await;
    ws.send_text(&subscribe_cmd(&identifier)).await;
    assert_eq!(ws.next_non_ping(T).await, text(&confirm(&identifier)));
    ws
}

/// The next broadcast's `message` (a turbo-stream string).
pub async fn next_message(ws: &mut Ws) -> String {
    match ws.next_non_ping(T).await {
        Some(WsEvent::Text(t)) => {
            let v: serde_json::Value = serde_json::from_str(&t).unwrap();
            v["message"].as_str().expect("a string message").to_owned()
        }
        other => panic!("expected a broadcast, got {other:?}"),
    }
}

/// The next broadcast whose `message` contains `needle`, skipping others.
pub async fn broadcast_containing(ws: &mut Ws, needle: &str) -> String {
    let deadline = tokio::time::Instant::now() + T;
    while tokio::time::Instant::now() < deadline {
        match ws.next_non_ping(T).await {
            Some(WsEvent::Text(t)) => {
                let v: serde_json::Value = serde_json::from_str(&t).unwrap();
                if let Some(m) = v["message"].as_str() {
                    if m.contains(needle) {
                        return m.to_owned();
                    }
                }
            }
            other => panic!("expected a broadcast, got {other:?}"),
        }
    }
    panic!("no broadcast containing {needle:?}");
}

/// Posts `html` (`message[body_format]=html`) with client id `cid` in room `room` as `c`;
/// asserts it was taken.
pub async fn post_html(c: &mut Client, room: i64, html: &str, cid: &str) {
    let (token, _) = c.room(room).await;
    let r = c
        .post_form(
            &format!("/rooms/{room}/messages"),
            &form(&[
                ("message[body]", html),
                ("message[body_format]", "html"),
                ("message[client_message_id]", cid),
                ("authenticity_token", &token),
            ]),
            &[],
        )
        .await;
    assert!(r.status < 400, "{}", r.body);
}

/// A body that mentions user `user_id` (a signed mention attachment), then `words`.
pub fn mention(server: &TestServer, user_id: i64, words: &str) -> String {
    let sgid = server
        .state
        .keys
        .sgids
        .sign("User", user_id, hearth::rails::ATTACHABLE_PURPOSE);
    format!(
        "<div><action-text-attachment sgid=\"{sgid}\" content-type=\"application/vnd.campfire.mention\"></action-text-attachment> {words}</div>"
    )
}

/// Opens (or finds) the direct room of `c`'s user with `user_id`: its id.
pub async fn direct_room(c: &mut Client, user_id: &str) -> i64 {
    let token = csrf_meta(&c.get("/account/edit").await.body);
    let body = form(&[("user_ids[]", user_id), ("authenticity_token", &token)]);
    let r = c.post_form("/rooms/directs", &body, &[]).await;
    assert_eq!(r.status, 302, "{}", r.body);
    let location = r.header("location").unwrap();
    location.rsplit('/').next().unwrap().parse().unwrap()
}
