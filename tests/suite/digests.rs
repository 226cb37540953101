//! Digests delivered to the real SMTP server: exactly the unread mentions and direct messages
//! of the period (none that were read, none of others' plain posts), one mail per person per
//! period, none for deactivated or banned people, and RFC 8058 one-click unsubscribe. The
//! period is chosen by calling the scheduler's entry with an instant (`run_as_of`).

use std::time::Duration;

use crate::common::forms::{direct_room, mention, post_html};
use crate::common::{csrf_meta, form, Client};
use crate::mail::{hearth_mailing, shared_smtp};
use crate::mail_sign_in::set_site_url;
use hearth::digests::Digests;

const SECRET: &str = "secret123456";

async fn set_digest(c: &mut Client, frequency: &str, tz: &str) {
    let page = c.get("/users/me/profile").await.body;
    assert!(page.contains("id=\"digest_settings\""), "{page}");
    let token = csrf_meta(&page);
    let body = form(&[
        ("_method", "patch"),
        ("user[digest_frequency]", frequency),
        ("user[time_zone]", tz),
        ("authenticity_token", &token),
    ]);
    let r = c.post_form("/users/me/digest", &body, &[]).await;
    assert_eq!(r.status, 302, "{}", r.body);
}

/// An instant in the next local hour of Kolkata (UTC+05:30), so that the hourly period it
/// closes is the one holding the posts made now.
fn next_hour_in_kolkata() -> jiff::Timestamp {
    let tz = jiff::tz::TimeZone::get("Asia/Kolkata").unwrap();
    let now = jiff::Timestamp::now().to_zoned(tz.clone());
    let this_hour = now.date().at(now.hour(), 0, 0, 0).to_zoned(tz).unwrap();
    this_hour.timestamp() + jiff::SignedDuration::from_mins(65)
}

#[tokio::test]
async fn a_digest_holds_exactly_the_unread_mentions_and_dms_once_per_period() {
    let smtp = shared_smtp().await;
    let server = hearth_mailing(smtp.starttls_url(), &smtp.ca_file).await;
    let mut david = server.signed_in("david@example.com", SECRET).await;
    set_site_url(&server, &mut david, "8").await;
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    set_digest(&mut jason, "hourly", "Asia/Kolkata").await;
    let bad = form(&[("_method", "patch"), ("user[digest_frequency]", "weekly")]);
    let token = csrf_meta(&jason.get("/users/me/profile").await.body);
    let r = jason
        .post_form(
            "/users/me/digest",
            &format!("{bad}&authenticity_token={token}"),
            &[],
        )
        .await;
    assert_eq!(r.status, 422);
    // In All Talk (room 1): a plain post, then a mention of Jason.
    post_html(&mut david, 1, "<div>lunch at noon, anyone</div>", "d-plain").await;
    post_html(
        &mut david,
        1,
        &mention(&server, 2, "can you look at the build?"),
        "d-mention",
    )
    .await;
    // A direct message from Kevin, unread.
    let mut kevin = server.signed_in("kevin@example.com", SECRET).await;
    let kevin_dm = direct_room(&mut kevin, "2").await;
    post_html(
        &mut kevin,
        kevin_dm,
        "<div>ping me when you are back</div>",
        "k-dm",
    )
    .await;
    // A direct message from JZ, which Jason reads before the digest is built.
    let mut jz = server.signed_in("jz@example.com", SECRET).await;
    let jz_dm = direct_room(&mut jz, "2").await;
    post_html(&mut jz, jz_dm, "<div>already seen this one</div>", "jz-dm").await;
    assert!(hearth::db::rooms::present(&server.state.db.pool, jz_dm, 2)
        .await
        .unwrap());
    let at = next_hour_in_kolkata();
    let digests = Digests::of(&server.state.db, &server.state.keys, &server.state.outbox);
    assert_eq!(
        digests.run_as_of(at).await.unwrap(),
        1,
        "Jason's digest only"
    );
    // The suite's other servers share the SMTP server: this server's digest is the one with
    // this test's words.
    let mut got = Vec::new();
    for _ in 0..200 {
        got = smtp
            .wait_matching("jason@example.com", "unread", 1, Duration::ZERO)
            .await
            .into_iter()
            .filter(|m| m.text().contains("can you look at the build?"))
            .collect();
        if !got.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(got.len(), 1);
    let m = &got[0];
    assert_eq!(m.subject(), "2 unread messages on Hearth");
    let text = m.text();
    assert!(text.contains("can you look at the build?"), "{text}");
    assert!(text.contains("ping me when you are back"), "{text}");
    assert!(!text.contains("lunch at noon"), "not a mention: {text}");
    assert!(
        !text.contains("already seen"),
        "read before the build: {text}"
    );
    assert!(
        text.contains(&format!("{}/rooms/{kevin_dm}/@", server.origin())),
        "{text}"
    );
    assert!(
        m.html().contains("mentioned you in All Talk"),
        "{}",
        m.html()
    );
    let unsubscribe = m.header("List-Unsubscribe").unwrap().to_owned();
    assert_eq!(
        m.header("List-Unsubscribe-Post"),
        Some("List-Unsubscribe=One-Click")
    );
    // One mail per person per period, however often the scheduler runs in it.
    assert_eq!(digests.run_as_of(at).await.unwrap(), 0);
    let later = at + jiff::SignedDuration::from_mins(20);
    assert_eq!(digests.run_as_of(later).await.unwrap(), 0);
    // Deactivated and banned people are never due one.
    let due = hearth::db::digests::recipients(&server.state.db.pool)
        .await
        .unwrap();
    assert!(due.iter().all(|p| p.id != 6 && p.id != 7), "{due:?}");
    // RFC 8058: a POST of `List-Unsubscribe=One-Click`, no cookie, no CSRF token.
    let url = unsubscribe.trim_start_matches('<').trim_end_matches('>');
    let path = url.strip_prefix(&server.origin()).unwrap().to_owned();
    let mut mail_client = server.client();
    let r = mail_client
        .request(
            "POST",
            &path,
            &[("Content-Type", "application/x-www-form-urlencoded")],
            b"List-Unsubscribe=One-Click",
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let (frequency, _) = hearth::db::digests::preferences(&server.state.db.pool, 2)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(frequency, hearth::db::digests::Frequency::Never);
    assert_eq!(server.client().get(&path).await.status, 200);
    let forged = format!("{path}x");
    assert_eq!(server.client().get(&forged).await.status, 404);
    // Unsubscribed: nothing in the next period.
    post_html(&mut kevin, kevin_dm, "<div>one more</div>", "k-dm-2").await;
    let next = at + jiff::SignedDuration::from_hours(1);
    assert_eq!(digests.run_as_of(next).await.unwrap(), 0);
    server.stop().await;
}

#[tokio::test]
async fn a_digest_the_full_mail_queue_refused_goes_out_at_the_next_run() {
    let (server, down) = crate::mail::hearth_with_smtp_down().await;
    let mut david = server.signed_in("david@example.com", SECRET).await;
    set_site_url(&server, &mut david, "8").await;
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    set_digest(&mut jason, "hourly", "Asia/Kolkata").await;
    let mut kevin = server.signed_in("kevin@example.com", SECRET).await;
    let kevin_dm = direct_room(&mut kevin, "2").await;
    post_html(
        &mut kevin,
        kevin_dm,
        "<div>the queue was full when this was due</div>",
        "k-full",
    )
    .await;
    // With the SMTP server down, letters wait (8 in flight, retried); the queue fills up. It
    // is filled again once the sending task has taken the letters it holds.
    let mut queued = 0;
    for _ in 0..2 {
        while server
            .state
            .outbox
            .mailer
            .send(crate::mail::letter("filler@example.net", "filler"))
            .is_ok()
        {
            queued += 1;
            assert!(queued <= 2 * hearth::mail::QUEUE_CAPACITY, "never full");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let at = next_hour_in_kolkata();
    let digests = Digests::of(&server.state.db, &server.state.keys, &server.state.outbox);
    assert_eq!(digests.run_as_of(at).await.unwrap(), 0, "nothing queued");
    let jasons = || async {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM digest_deliveries WHERE user_id = 2")
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap()
    };
    assert_eq!(jasons().await, 0, "the period is not marked sent");
    // The server is back: the queue drains, and a later run queues Jason's digest.
    let smtp = down.bring_up().await;
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let queued = digests.run_as_of(at).await.unwrap();
        if jasons().await == 1 {
            assert!(queued >= 1, "recorded only when queued");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never queued");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(digests.run_as_of(at).await.unwrap(), 0, "once per period");
    drop(smtp);
    server.stop().await;
}
