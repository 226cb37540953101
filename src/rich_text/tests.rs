use super::*;
use crate::rails::{KdfDigest, SignedGlobalIds, ATTACHABLE_PURPOSE};

fn ids() -> SignedGlobalIds {
    SignedGlobalIds::from_secret_key_base(b"secret", KdfDigest::Sha256, "campfire")
}

fn people(sgids: &SignedGlobalIds, who: &[(i64, &str)]) -> HashMap<String, Person> {
    who.iter()
        .map(|(id, name)| {
            (
                sgids.sign("User", *id, ATTACHABLE_PURPOSE),
                Person {
                    id: *id,
                    name: (*name).to_owned(),
                },
            )
        })
        .collect()
}

fn trix_mention(sgid: &str, name: &str) -> String {
    let json = serde_json::json!({
        "content": format!("<span class=\"mention\" sgid={sgid}><img src=x onerror=alert(1)> {name}</span>"),
        "contentType": MENTION_CONTENT_TYPE,
        "sgid": sgid,
    });
    format!(
        "<figure data-trix-attachment=\"{}\" data-trix-content-type=\"{MENTION_CONTENT_TYPE}\" class=\"attachment attachment--content\"><span class=\"mention\">{name}</span><figcaption class=\"attachment__caption\"></figcaption></figure>",
        html_escape(&json.to_string())
    )
}

#[test]
fn plain_text_is_escaped_like_rails_with_lines_and_links() {
    assert_eq!(
        from_plain_text("<script>alert(1)</script>").html,
        "<div>&lt;script&gt;alert(1)&lt;/script&gt;</div>"
    );
    assert_eq!(
        from_plain_text(" a\nb & c ").html,
        "<div>a<br>b &amp; c</div>"
    );
    assert_eq!(
        from_plain_text("say \"hi\" & it's <b>\r\ncafé ☕").html,
        "<div>say &quot;hi&quot; &amp; it&#39;s &lt;b&gt;<br>café ☕</div>"
    );
    assert_eq!(from_plain_text("   \n  ").html, "<div></div>");
    assert!(from_plain_text("   \n  ").is_blank());
    let linked = from_plain_text("see https://example.com/a?b=1&c=2.");
    assert_eq!(
        linked.html,
        "<div>see <a href=\"https://example.com/a?b=1&amp;c=2\" target=\"_blank\" rel=\"noopener noreferrer\">https://example.com/a?b=1&amp;c=2</a>.</div>"
    );
    assert_eq!(linked.plain_text, "see https://example.com/a?b=1&c=2.");
}

#[test]
fn plain_text_inverts_from_plain_text() {
    for typed in [
        "plain",
        "a < b & \"c\" it's\nsecond line\nafter",
        "&amp; typed literally &lt;",
        "café ☕ <script>",
        "a link https://example.com/x in it",
    ] {
        assert_eq!(plain_text(&from_plain_text(typed).html), typed);
    }
    assert_eq!(
        plain_text("<div>Rails <strong>rich</strong> text</div><div>two &#60;3 &#x263A;</div>"),
        "Rails rich text\ntwo <3 ☺"
    );
    assert_eq!(plain_text("<p>a</p><p>b&nbsp;c</p>"), "a\nb\u{a0}c");
}

#[test]
fn the_sanitizer_cuts_what_action_text_would_not_render() {
    let draft = sanitize(concat!(
        "<div>hi <strong>bold</strong> <em>it</em> <a href=\"javascript:alert(1)\">js</a> ",
        "<a href=\"https://ok.example/\" onclick=\"x()\">ok</a><img src=x onerror=alert(1)>",
        "<script>alert(2)</script><style>p{}</style><iframe src=//evil></iframe>",
        "<span style=\"color:red\" class=\"message--mentioned\">s</span></div>",
        "<pre>let x = 1 &lt; 2;</pre><!-- comment -->",
        "<figure data-trix-attachment='{\"contentType\":\"image/png\",\"url\":\"http://evil/x.png\"}'><img src=\"http://evil/x.png\"></figure>",
        "<action-text-attachment sgid=\"forged\" content-type=\"text/html\" content=\"&lt;script&gt;\"></action-text-attachment>",
    ));
    assert!(draft.sgids().is_empty());
    let body = draft.finish(&HashMap::new());
    assert_eq!(
        body.html,
        concat!(
            "<div>hi <strong>bold</strong> <em>it</em> <a target=\"_blank\" rel=\"noopener noreferrer\">js</a> ",
            "<a href=\"https://ok.example/\" target=\"_blank\" rel=\"noopener noreferrer\">ok</a>",
            "<span>s</span></div><pre>let x = 1 &lt; 2;</pre>"
        )
    );
    assert_eq!(body.plain_text, "hi bold it js oks\nlet x = 1 < 2;");
    for bad in [
        "script",
        "onerror",
        "onclick",
        "javascript",
        "iframe",
        "style",
        "img",
        "figure",
        "forged",
    ] {
        assert!(!body.html.contains(bad), "{bad} in {}", body.html);
    }
}

#[test]
fn urls_in_text_are_linked_but_not_inside_links_or_code() {
    let body = sanitize("<div>go www.example.com now <a href=\"/rooms/1\">https://x.io</a></div><pre>https://in.code</pre>")
        .finish(&HashMap::new());
    assert_eq!(
        body.html,
        "<div>go <a href=\"http://www.example.com\" target=\"_blank\" rel=\"noopener noreferrer\">www.example.com</a> now <a href=\"/rooms/1\" target=\"_blank\" rel=\"noopener noreferrer\">https://x.io</a></div><pre>https://in.code</pre>"
    );
}

#[test]
fn mentions_of_the_rooms_people_are_kept_others_cut() {
    let sgids = ids();
    let jason = sgids.sign("User", 2, ATTACHABLE_PURPOSE);
    let outsider = sgids.sign("User", 9, ATTACHABLE_PURPOSE);
    let html = format!(
        "<div>hey {} and {} and {}</div>",
        trix_mention(&jason, "Jason"),
        trix_mention(&outsider, "Out"),
        trix_mention(&jason, "Jason")
    );
    let draft = sanitize(&html);
    assert_eq!(draft.sgids(), [jason.clone(), outsider.clone()]);
    let body = draft.finish(&people(&sgids, &[(2, "Jason <J>")]));
    let chip = mention_chip(2, "Jason <J>");
    let stored = format!(
        "<action-text-attachment sgid=\"{jason}\" content-type=\"{MENTION_CONTENT_TYPE}\" content=\"{}\"></action-text-attachment>",
        html_escape(&chip)
    );
    assert_eq!(
        body.html,
        format!("<div>hey {stored} and  and {stored}</div>")
    );
    assert_eq!(body.mentionee_ids, [2]);
    assert_eq!(body.plain_text, "hey @Jason <J> and  and @Jason <J>");
    assert!(!body.html.contains("onerror") && !body.html.contains(&outsider));

    // Stored, then drawn: the chip inside the attachment; the ids for the highlight.
    let (page, mentioned) = render(&body.html);
    assert_eq!(mentioned, [2]);
    assert_eq!(
        page,
        format!(
            "<div>hey <action-text-attachment sgid=\"{jason}\" content-type=\"{MENTION_CONTENT_TYPE}\" content=\"{}\">{chip}</action-text-attachment> and  and <action-text-attachment sgid=\"{jason}\" content-type=\"{MENTION_CONTENT_TYPE}\" content=\"{}\">{chip}</action-text-attachment></div>",
            html_escape(&chip),
            html_escape(&chip)
        )
    );
    assert_eq!(mentioned_user_ids(&body.html), [2]);
    assert_eq!(plain_text(&body.html), "hey @Jason <J> and  and @Jason <J>");
    // The editor gets Trix's attachment back.
    let trix = to_trix_html(&body.html);
    assert!(trix.contains("<figure data-trix-attachment=\""), "{trix}");
    assert_eq!(
        sanitize(&trix)
            .finish(&people(&sgids, &[(2, "Jason <J>")]))
            .html,
        body.html
    );
}

#[test]
fn a_body_written_by_campfire_renders_its_mention() {
    // As Campfire's MentionTestHelper writes one: the partial's HTML in `content`.
    let sgids = ids();
    let sgid = sgids.sign("User", 5, ATTACHABLE_PURPOSE);
    let content = format!("<div class=\"mention\" sgid=\"{sgid}\">\n  <img src=\"/users/5/avatar\" class=\"avatar\">\n  Kevin\n</div>\n");
    let body = format!(
        "<div>Hi <action-text-attachment sgid=\"{sgid}\" content-type=\"{MENTION_CONTENT_TYPE}\" content=\"{}\"></action-text-attachment>!</div>",
        content.replace('"', "&quot;")
    );
    let (page, ids) = render(&body);
    assert_eq!(ids, [5]);
    assert!(page.contains(&mention_chip(5, "Kevin")), "{page}");
    assert_eq!(plain_text(&body), "Hi @Kevin!");
}

#[test]
fn an_empty_editor_body_is_blank() {
    for html in [
        "",
        "<div><br></div>",
        "<div> </div><script>x</script>",
        "<img src=x>",
    ] {
        assert!(sanitize(html).finish(&HashMap::new()).is_blank(), "{html}");
    }
}

#[test]
fn nesting_is_counted_as_a_parser_opens_elements() {
    let deep = |tag: &str, n: usize| format!("{}x", format!("<{tag}>").repeat(n));
    assert!(nests_deeper_than(&deep("div", 13_000), MAX_NESTING));
    assert!(nests_deeper_than(&deep("i", 65), MAX_NESTING));
    assert!(!nests_deeper_than(&deep("i", 64), MAX_NESTING));
    // Closed and void elements (with or without a trailing `/`) and comments do not nest.
    let flat = "<div><b>a</b><br><img src=x><br/><!-- <i><i><i> --></div>".repeat(500);
    assert!(!nests_deeper_than(&flat, 2));
    // A trailing `/` does not close anything else: `<div/>` opens a div, as a parser reads it
    // (10,900 of them were 120 KB of nested divs, 0.6 s to sanitize).
    assert!(nests_deeper_than(&deep("div/", 65), MAX_NESTING));
    assert!(nests_deeper_than(
        &format!("{}x", "<div />".repeat(65)),
        MAX_NESTING
    ));
    assert!(!nests_deeper_than(&deep("div/", 64), MAX_NESTING));
    // An end tag naming no open element closes nothing (`</b>` does not close `<i>`).
    assert!(nests_deeper_than(&"<i></b>".repeat(65), MAX_NESTING));
    // An end tag closes the elements inside its element too.
    assert!(!nests_deeper_than(&"<ul><li><i><b></ul>".repeat(100), 4));
    // Trix's deepest shapes are far from the limit.
    let trix = "<blockquote><ul><li><strong><em><a href=\"https://x\">x</a></em></strong></li></ul></blockquote>";
    assert!(!nests_deeper_than(trix, 8));
}

#[test]
fn relative_hrefs_that_browsers_read_as_another_host_are_cut() {
    // Browsers read `\` as `/` and drop tabs and newlines in a URL, so each of these opens
    // evil.com, while looking like a path on this server.
    for href in [
        "/\\evil.com",
        "\\\\evil.com",
        "\\/evil.com",
        "//evil.com/x",
        "/\t/evil.com",
        "/\n/evil.com",
        " //evil.com",
    ] {
        let html = format!("<div><a href=\"{}\">x</a></div>", html_escape(href));
        let body = sanitize(&html).finish(&HashMap::new());
        assert!(
            !body.html.contains("href") && body.html.contains(">x</a>"),
            "{href:?}: {}",
            body.html
        );
    }
    // Paths of this server, and relative ones, stay.
    for href in ["/rooms/1/@2", "rooms/1", "?q=1", "#top", "/a//b"] {
        let html = format!("<div><a href=\"{href}\">x</a></div>");
        let body = sanitize(&html).finish(&HashMap::new());
        assert!(
            body.html
                .contains(&format!("href=\"{}\"", html_escape(href))),
            "{href}: {}",
            body.html
        );
    }
}

#[test]
fn a_stored_body_the_sanitizer_reshaped_is_drawn_through_it_again() {
    // Cut elements (section, nav, article, button, object, font) leave their children where a
    // browser's parser moves them: the stored form, drawn as it is, would let a list item close
    // the message's own elements and put the rest of the body outside the message.
    for html in [
        "<ul><li>A<div><div><div><div><section><li>B</li></section></div></div></div></div></li></ul><h1>SPOOF</h1><a href='https://evil.example/'>click</a>",
        "<ul><li>A<div><nav><li>B</li></nav></div></li></ul><h1>SPOOF</h1>",
        "<dl><dd>A<div><article><dd>B</dd></article></div></dd></dl><h1>SPOOF</h1>",
        "<p>A<button><p>B</p></button>C</p>",
        "<a href=https://a.example>A<object><a href=https://b.example>B</a></object>C</a>",
        "<h1>A<font><h2>B</h2></font>C</h1>",
    ] {
        let body = sanitize(html).finish(&HashMap::new());
        let (page, _) = render(&body.html);
        assert_eq!(render(&page).0, page, "the page's form is what a parser makes of it: {html}");
        assert_ne!(
            walk(&body.html, &mut Mode::Render).html,
            page,
            "the stored form alone is not: {html}"
        );
    }
}

#[test]
fn a_typed_body_is_shown_as_render_draws_it() {
    // A typed body without links is only walked when a post shows it; from the database it goes
    // through the sanitizer again. The two must draw the same, whatever was typed.
    let long = "word ".repeat(2_000);
    for text in [
        "hello",
        "  two\nlines\r\nand a third  ",
        "<script>alert(1)</script> & \"quotes\" 'apostrophes' </div></div><h1>x</h1>",
        "see https://example.com/a?b=1&c=\"2\"<x> and http://x.example/'y' then www.example.org.",
        "javascript:alert(1) data:text/html,<b>x</b> ftp://files.example/x mailto:a@b.example",
        "&amp; &lt; &#60; &#x3c; &nbsp; &bogus; &",
        "émoji 😀 ✔ — right-to-left \u{202e}abc \u{2028} line \u{2029} paragraph",
        "tab\tand\u{0}nul and \u{feff}bom",
        "@Someone not a mention <action-text-attachment sgid=\"x\"></action-text-attachment>",
        "<a href=\"https://evil.example\">link</a> <img src=x onerror=alert(1)>",
        "HTTPS://UPPER.example/Path MAILTO:x@y.example http:// https://a.example/\\evil",
        "https://a.example/javascript:alert(1) https://a.example/?q=<script>&r='x' www.example.com/(a)b).",
        long.as_str(),
    ] {
        let body = from_plain_text(text);
        assert_eq!(body.shown(), render(&body.html), "{text:?}");
    }
    // And texts made of the pieces above, shuffled by a fixed xorshift.
    let pieces = [
        "<",
        ">",
        "&",
        "\"",
        "'",
        " ",
        "\n",
        "http://",
        "https://",
        "mailto:",
        "www.",
        "a.example",
        "/",
        "?",
        "=",
        "(",
        ")",
        ".",
        ",",
        "#",
        "&amp;",
        "<b>",
        "</div>",
        "\u{0}",
        "\u{2028}",
        "é",
        "😀",
        "\t",
        "javascript:",
        "@",
        ":",
    ];
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..3_000 {
        let mut text = String::new();
        for _ in 0..(next() % 24) {
            text.push_str(pieces[(next() % pieces.len() as u64) as usize]);
        }
        let body = from_plain_text(&text);
        assert_eq!(body.shown(), render(&body.html), "{text:?}");
    }
}

#[test]
fn an_editor_body_is_shown_through_the_sanitizer_again() {
    let body = sanitize("<ul><li>A<div><nav><li>B</li></nav></div></li></ul><h1>SPOOF</h1>")
        .finish(&HashMap::new());
    assert_eq!(body.shown(), render(&body.html));
    assert_ne!(body.shown().0, walk(&body.html, &mut Mode::Render).html);
}

#[test]
fn typed_text_links_only_what_the_sanitizer_keeps() {
    // `ftp://` was linked and then cut by the sanitizer: an `<a>` without `href` on the page;
    // so was a URL that does not parse (a port out of range).
    for (text, cut, kept) in [
        (
            "get ftp://files.example/x or https://files.example/x",
            "ftp://files.example/x\"",
            "<a href=\"https://files.example/x\"",
        ),
        (
            "see http://a.example:99999/x and www.example.com",
            "href=\"http://a.example:99999",
            "<a href=\"http://www.example.com\"",
        ),
    ] {
        let body = from_plain_text(text);
        assert!(!body.html.contains(cut), "{}", body.html);
        assert!(body.html.contains(kept), "{}", body.html);
        let page = render(&body.html).0;
        assert!(!page.contains("<a target"), "{page}");
    }
}

#[test]
fn typed_text_loses_its_nul_characters_as_a_page_would() {
    let body = from_plain_text("a\u{0}b\u{0}\nwww.\u{0}example.com");
    assert_eq!(body.plain_text, "ab\nwww.example.com");
    assert!(!body.html.contains('\u{0}'), "{:?}", body.html);
    assert_eq!(body.shown(), render(&body.html));
}

#[test]
fn only_a_typed_body_without_links_skips_the_second_pass() {
    assert!(from_plain_text("loadgen abc <b>&amp;</b> \"x\"").typed);
    assert!(!from_plain_text("see WWW.example.com").typed);
    assert!(!from_plain_text("hTtPs:// alone").typed);
    assert!(!from_plain_text("mailto:").typed);
    assert!(!sanitize("<div>plain</div>").finish(&HashMap::new()).typed);
    assert!(!Body::empty().typed);
}
