//! Image processing across a restart and big phone photos, against the real binary as a child
//! process: a message whose image processing a restart cut off ends at the next start (a
//! thumbnail, or a file chip), and phone photos of 48 and 100 megapixels keep their
//! thumbnails, decoded scaled down by their inverse DCT within the documented ceiling.

use std::time::Duration;

use crate::common::child::Hearth;
use crate::common::temp_dir;
use crate::hardening_images::{
    assert_alive, chip, truncated_png, David, Route, DECODE_CEILING_MIB,
};

/// A thumbnail in a page (an image attachment link).
const THUMBNAIL: &str = "message__attachment-link--image";

/// Room 1's page once nothing in it says "processing…" any more (or as it is after `within`).
async fn page_when_processed(hearth: &mut Hearth, david: &David, within: Duration) -> String {
    let started = std::time::Instant::now();
    loop {
        assert_alive(hearth, "processing").await;
        let page = david.room_page().await;
        if !page.contains("processing…") || started.elapsed() > within {
            return page;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The part of `page` from the message holding `filename` to the next message.
fn message_of<'a>(page: &'a str, filename: &str) -> &'a str {
    let at = page
        .find(&format!("=\"{filename}\""))
        .unwrap_or_else(|| panic!("{filename} is not on the page"));
    let start = page[..at].rfind("<div id=\"message_").unwrap_or(0);
    let end = page[at..]
        .find("<div id=\"message_")
        .map_or(page.len(), |e| at + e);
    &page[start..end]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processing_a_restart_cut_off_ends_at_the_next_start() {
    let dir = temp_dir("resumed-processing");
    let mut hearth = Hearth::start(&dir, &["--upload-rate-limit", "0"]).await;
    let david = David::sign_in(&hearth).await;
    let files: [(&str, Vec<u8>); 3] = [
        ("photo.png", crate::files::png(64, 48)),
        ("broken.png", truncated_png()),
        ("cut-off-twice.png", crate::files::png(64, 48)),
    ];
    for (name, bytes) in &files {
        assert_eq!(
            david.upload(Route::Composer, name, bytes).await,
            200,
            "{name}"
        );
    }
    let page = page_when_processed(&mut hearth, &david, Duration::from_secs(60)).await;
    assert!(
        !page.contains("processing…"),
        "processed before the restart"
    );
    hearth.signal("TERM");
    assert_eq!(hearth.wait(Duration::from_secs(30)).await, Some(0));

    // What a server killed while processing leaves: the files neither analyzed nor with a
    // thumbnail; the last one already found unprocessed at an earlier start.
    {
        let pool = hearth::db::open(&dir.join("hearth.sqlite3")).await.unwrap();
        for (name, _) in &files {
            let id: i64 =
                sqlx::query_scalar("SELECT id FROM active_storage_blobs WHERE filename = ?")
                    .bind(name)
                    .fetch_one(&pool)
                    .await
                    .unwrap();
            let metadata = if *name == "cut-off-twice.png" {
                "json_set(json_remove(metadata, '$.analyzed'), '$.hearth_processing_resumed', json('true'))"
            } else {
                "json_remove(metadata, '$.analyzed')"
            };
            for sql in [
                format!("UPDATE active_storage_blobs SET metadata = {metadata} WHERE id = ?"),
                "DELETE FROM active_storage_attachments WHERE record_type = \
                 'ActiveStorage::VariantRecord' AND record_id IN \
                 (SELECT id FROM active_storage_variant_records WHERE blob_id = ?)"
                    .to_owned(),
                "DELETE FROM active_storage_variant_records WHERE blob_id = ?".to_owned(),
            ] {
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(id)
                    .execute(&pool)
                    .await
                    .unwrap();
            }
        }
        pool.close().await;
    }

    let mut hearth = Hearth::start(&dir, &["--upload-rate-limit", "0"]).await;
    let david = David::sign_in(&hearth).await;
    let page = page_when_processed(&mut hearth, &david, Duration::from_secs(30)).await;
    assert!(
        !page.contains("processing…"),
        "a file whose processing a restart cut off still says processing after 30 s"
    );
    assert!(
        message_of(&page, "photo.png").contains(THUMBNAIL),
        "the resumed image has its thumbnail again"
    );
    for name in ["broken.png", "cut-off-twice.png"] {
        assert!(page.contains(&chip(name)), "{name} is shown as a file chip");
    }
    hearth.signal("TERM");
    assert_eq!(hearth.wait(Duration::from_secs(30)).await, Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `width` × `height` JPEG as a phone writes one (baseline, colour), of a simple pattern at
/// low quality, so that it stays small.
fn phone_jpeg(width: u32, height: u32) -> Vec<u8> {
    let pixels = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([((x / 256) % 32) as u8 * 8, ((y / 256) % 32) as u8 * 8, 128])
    });
    let mut bytes = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut bytes, 10)
        .encode_image(&pixels)
        .unwrap();
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn phone_photos_of_48_and_100_megapixels_keep_their_thumbnails_within_the_decode_ceiling() {
    let dir = temp_dir("phone-photos");
    let mut hearth = Hearth::start(&dir, &[]).await;
    let david = David::sign_in(&hearth).await;
    let before = hearth.peak_rss_kib();
    // 48 MP (decoded at ½) and 100.8 MP (decoded at ¼), as phones' main cameras write them.
    for (name, width, height) in [
        ("phone-48mp.jpg", 8_000, 6_000),
        ("phone-100mp.jpg", 12_000, 8_400),
    ] {
        let photo = phone_jpeg(width, height);
        assert_eq!(david.upload(Route::Composer, name, &photo).await, 200);
        drop(photo);
        let page = page_when_processed(&mut hearth, &david, Duration::from_secs(180)).await;
        assert!(
            !page.contains("processing…"),
            "{name} still processing after 3 minutes"
        );
        let rise_mib = hearth.peak_rss_kib().saturating_sub(before) / 1024;
        eprintln!(
            "{name}: server VmHWM {} MiB before, rose {rise_mib} MiB (ceiling \
             {DECODE_CEILING_MIB} MiB)",
            before / 1024
        );
        assert!(
            !page.contains(&chip(name)),
            "{name} is shown as a file chip, not a thumbnail"
        );
        let message = message_of(&page, name);
        assert!(
            message.contains(THUMBNAIL) && message.contains("height=\"800\""),
            "{name} gets its thumbnail within 1,200 × 800: {message}"
        );
        assert!(
            rise_mib < DECODE_CEILING_MIB,
            "decoding {name} raised the server's peak memory by {rise_mib} MiB"
        );
    }
    hearth.signal("TERM");
    assert_eq!(hearth.wait(Duration::from_secs(30)).await, Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}
