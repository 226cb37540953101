//! `/play <name>` over HTTP: a known name is drawn as its sound (its line of text, or its
//! picture as an inline SVG), the body is stored as typed (`/play name`, as Campfire stores
//! it), and anything else — an unknown name, `/play` alone, a name inside a sentence — stays
//! an ordinary message.

use crate::common;

use common::TestServer;

const JASON: &str = "jason@example.com";
const SECRET: &str = "secret123456";

/// The stored body of the message posted with client id `cid`.
async fn stored_body(server: &TestServer, cid: &str) -> String {
    sqlx::query_scalar("SELECT body FROM messages WHERE client_message_id = ?")
        .bind(cid)
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn play_greatjob_draws_its_picture_and_keeps_the_body_as_typed() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(JASON, SECRET).await;
    let (csrf, _) = c.room(1).await;

    let r = c
        .post_message(1, "/play greatjob", "sound-greatjob", &csrf)
        .await;
    assert_eq!(r.status, 200);
    assert!(r.body.contains("message--sound"), "{}", r.body);
    assert!(
        r.body.contains(
            "class=\"message__sound message__sound--image\" data-sound=\"greatjob\" title=\"Play greatjob\""
        ),
        "{}",
        r.body
    );
    let art = hearth::sounds::find("greatjob")
        .and_then(|s| s.image.as_ref())
        .unwrap();
    assert!(
        r.body.contains(&format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"sound-art\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{label}\">{svg}</svg>",
            w = art.width,
            h = art.height,
            label = art.label,
            svg = art.svg
        )),
        "{}",
        r.body
    );
    assert!(!r.body.contains("message__sound-text"));
    assert!(
        !r.body.contains("/play greatjob"),
        "the command is not shown"
    );
    // Stored as Trix sends a typed line (Campfire's rich text body of the same message).
    assert_eq!(
        stored_body(&server, "sound-greatjob").await,
        "<div>/play greatjob</div>"
    );

    // The room page draws it the same way for whoever reads it later.
    let page = c.get("/rooms/1").await;
    assert!(page.body.contains("data-sound=\"greatjob\""));
    assert!(page.body.contains("class=\"sound-art\""));
}

#[tokio::test]
async fn a_text_sound_shows_its_line_and_anything_else_stays_a_message() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(JASON, SECRET).await;
    let (csrf, _) = c.room(1).await;

    let r = c
        .post_message(1, "/play trombone", "sound-trombone", &csrf)
        .await;
    assert_eq!(r.status, 200);
    let line = hearth::sounds::find("trombone").unwrap().text.unwrap();
    assert!(
        r.body.contains(&format!(
            "<span class=\"message__sound-text\">{line}</span></button>"
        )),
        "{}",
        r.body
    );
    assert!(!r.body.contains("sound-art"));

    for (cid, body) in [
        ("plain-1", "/play"),
        ("plain-2", "/play drumroll"),
        ("plain-3", "/play trombone please"),
        ("plain-4", "now /play trombone"),
        ("plain-5", "/playtrombone"),
    ] {
        let r = c.post_message(1, body, cid, &csrf).await;
        assert_eq!(r.status, 200, "{body}");
        assert!(!r.body.contains("data-sound="), "{body}: {}", r.body);
        assert!(!r.body.contains("message--sound"), "{body}");
        assert!(r.body.contains(body), "{body} is shown as typed");
    }
}
