use super::*;
use crate::rails::{KdfDigest, SignedGlobalIds, ATTACHABLE_PURPOSE};

struct Team {
    sgids: SignedGlobalIds,
}

impl Resolve for Team {
    fn person(&self, slack_id: &str) -> Option<(String, Person)> {
        let (id, name) = match slack_id {
            "U1" => (1, "Ann Lee"),
            "U2" => (2, "Bo <b>"),
            _ => return None,
        };
        Some((
            self.sgids.sign("User", id, ATTACHABLE_PURPOSE),
            Person {
                id,
                name: name.to_owned(),
            },
        ))
    }

    fn room(&self, slack_id: &str) -> Option<(i64, String)> {
        (slack_id == "C1").then(|| (7, "general".to_owned()))
    }
}

fn team() -> Team {
    Team {
        sgids: SignedGlobalIds::from_secret_key_base(b"secret", KdfDigest::Sha256, "campfire"),
    }
}

/// The stored body of `text`, as [`body`] makes it.
fn html(text: &str) -> String {
    body("", text, "", &team()).html
}

const A: &str = "target=\"_blank\" rel=\"noopener noreferrer\"";

#[test]
fn plain_lines_are_one_div_with_breaks() {
    assert_eq!(html("hello"), "<div>hello</div>");
    assert_eq!(html("a\nb\n\nc"), "<div>a<br>b<br><br>c</div>");
    assert_eq!(html(""), "");
}

#[test]
fn emphasis_follows_slacks_markers() {
    assert_eq!(html("*bold*"), "<div><strong>bold</strong></div>");
    assert_eq!(
        html("_it_ and ~gone~"),
        "<div><em>it</em> and <del>gone</del></div>"
    );
    assert_eq!(
        html("*bold _both_*"),
        "<div><strong>bold <em>both</em></strong></div>"
    );
    assert_eq!(html("snake_case_name"), "<div>snake_case_name</div>");
    assert_eq!(html("2 * 3 * 4"), "<div>2 * 3 * 4</div>");
    assert_eq!(html("*not closed"), "<div>*not closed</div>");
    assert_eq!(html("(*aside*)"), "<div>(<strong>aside</strong>)</div>");
    assert_eq!(html("**"), "<div>**</div>");
    assert_eq!(html("*a\nb*"), "<div>*a<br>b*</div>");
}

#[test]
fn code_keeps_its_text() {
    assert_eq!(
        html("run `ls *.rs` now"),
        "<div>run <code>ls *.rs</code> now</div>"
    );
    assert_eq!(
        html("```\nfn main() {\n  *x* &lt;tag&gt;\n}\n```"),
        "<pre>fn main() {\n  *x* &lt;tag&gt;\n}</pre>"
    );
    assert_eq!(
        html("before ```mid``` after"),
        "<div>before </div><pre>mid</pre><div> after</div>"
    );
    assert_eq!(html("a ``` b"), "<div>a ``` b</div>");
    assert_eq!(html("`<https://x.example|x>`"), "<div><code>x</code></div>");
}

#[test]
fn quotes_are_blockquotes() {
    assert_eq!(
        html("&gt; quoted\n&gt; more\nreply"),
        "<blockquote>quoted<br>more</blockquote><div>reply</div>"
    );
    assert_eq!(
        html("hi\n&gt;&gt;&gt; all\nof this"),
        "<div>hi</div><blockquote>all<br>of this</blockquote>"
    );
    assert_eq!(html("a &gt; b"), "<div>a &gt; b</div>");
}

#[test]
fn links_keep_their_labels_and_allowed_schemes_only() {
    assert_eq!(
        html("see <https://example.com/a?b=1&amp;c=2|the docs>"),
        format!("<div>see <a href=\"https://example.com/a?b=1&amp;c=2\" {A}>the docs</a></div>")
    );
    assert_eq!(
        html("<http://x.example>"),
        format!("<div><a href=\"http://x.example\" {A}>http://x.example</a></div>")
    );
    assert_eq!(
        html("<mailto:a@b.example|a@b.example>"),
        format!("<div><a href=\"mailto:a@b.example\" {A}>a@b.example</a></div>")
    );
    assert_eq!(html("<javascript:alert(1)|click>"), "<div>click</div>");
    assert_eq!(html("<slack://open|app>"), "<div>app</div>");
}

#[test]
fn mentions_become_attachments_with_the_servers_chip() {
    let b = body("", "hi <@U1> and <@U2|bo>", "", &team());
    assert_eq!(b.mentionee_ids, vec![1, 2]);
    assert_eq!(b.plain_text, "hi @Ann Lee and @Bo <b>");
    assert!(
        b.html
            .contains("content-type=\"application/vnd.campfire.mention\""),
        "{}",
        b.html
    );
    assert!(
        b.html
            .contains("&lt;span class=&quot;mention&quot; data-user-id=&quot;1&quot;&gt;@Ann Lee"),
        "{}",
        b.html
    );
    assert!(!b.html.contains("<b>"), "{}", b.html);
    let (shown, ids) = crate::rich_text::render(&b.html);
    assert_eq!(ids, vec![1, 2]);
    assert!(
        shown.contains("<span class=\"mention\" data-user-id=\"2\">@Bo &lt;b&gt;</span>"),
        "{shown}"
    );
    assert_eq!(html("<@U9|gone>"), "<div>@gone</div>");
    assert_eq!(html("<@U9>"), "<div>@U9</div>");
    assert_eq!(html("`<@U1>`"), "<div><code>@Ann Lee</code></div>");
}

#[test]
fn channels_link_to_their_rooms() {
    assert_eq!(
        html("in <#C1|general>"),
        format!("<div>in <a href=\"/rooms/7\" {A}>#general</a></div>")
    );
    assert_eq!(
        html("<#C1>"),
        format!("<div><a href=\"/rooms/7\" {A}>#general</a></div>")
    );
    assert_eq!(html("<#C9|elsewhere>"), "<div>#elsewhere</div>");
}

#[test]
fn special_words_read_as_slack_shows_them() {
    assert_eq!(html("<!here> <!channel>"), "<div>@here @channel</div>");
    assert_eq!(html("<!everyone>"), "<div>@everyone</div>");
    assert_eq!(html("<!subteam^S1|@devs>"), "<div>@devs</div>");
    assert_eq!(
        html("<!date^1392734382^{date_pretty}|Feb 18, 2014>"),
        "<div>Feb 18, 2014</div>"
    );
}

#[test]
fn entities_are_decoded_then_escaped_once() {
    assert_eq!(
        html("a &amp; b &lt;c&gt;"),
        "<div>a &amp; b &lt;c&gt;</div>"
    );
    assert_eq!(
        body("", "a &amp; b &lt;c&gt;", "", &team()).plain_text,
        "a & b <c>"
    );
    assert_eq!(
        html("fish &amp;chips &nbsp;"),
        "<div>fish &amp;chips &amp;nbsp;</div>"
    );
    assert_eq!(
        html("<script>alert(1)</script>"),
        "<div>scriptalert(1)/script</div>"
    );
    assert_eq!(html("\"q\" it's"), "<div>&quot;q&quot; it&#39;s</div>");
}

#[test]
fn emoji_names_become_emoji() {
    assert_eq!(
        html("nice :tada: :+1::skin-tone-2:"),
        "<div>nice 🎉 👍🏻</div>"
    );
    assert_eq!(
        html(":partyparrot: 10:30:00"),
        "<div>:partyparrot: 10:30:00</div>"
    );
    assert_eq!(html("`:tada:`"), "<div><code>:tada:</code></div>");
}

#[test]
fn extra_html_is_sanitized_with_the_body() {
    let b = body(
        "",
        "file",
        "<div><a href=\"https://files.example/x\" onclick=\"x()\">x.pdf</a></div><script>1</script>",
        &team(),
    );
    assert_eq!(
        b.html,
        format!("<div>file</div><div><a href=\"https://files.example/x\" {A}>x.pdf</a></div>")
    );
}
