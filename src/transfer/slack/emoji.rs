//! Slack's emoji names (`thumbsup`, `+1::skin-tone-2`, a workspace's custom `partyparrot`) as
//! the text Hearth shows: the emoji character for a standard name (GitHub's gemoji names, which
//! Slack's standard set shares, through the `emojis` crate, plus the few names Slack spells its
//! own way), `:name:` for any other.

/// Names Slack gives standard emoji that gemoji spells otherwise.
const SLACK_ONLY: &[(&str, &str)] = &[
    ("thumbsup_all", "👍"),
    ("simple_smile", "🙂"),
    ("slightly_smiling_face", "🙂"),
    ("white_frowning_face", "☹️"),
    ("sweat_smile", "😅"),
    ("face_with_rolling_eyes", "🙄"),
    ("hugging_face", "🤗"),
    ("thinking_face", "🤔"),
    ("upside_down_face", "🙃"),
    ("hankey", "💩"),
];

/// The emoji character Slack's name `name` (without colons) stands for, with its skin tone
/// (`+1::skin-tone-3`), or None when it is not a standard emoji.
pub fn character(name: &str) -> Option<String> {
    let (base, tone) = match name.split_once("::skin-tone-") {
        Some((base, tone)) => (base, tone.parse::<u8>().ok()),
        None => (name, None),
    };
    if let Some((_, c)) = SLACK_ONLY.iter().find(|(n, _)| *n == base) {
        return Some((*c).to_owned());
    }
    let emoji = emojis::get_by_shortcode(base)?;
    let toned = tone.and_then(|t| {
        let tone = match t {
            2 => emojis::SkinTone::Light,
            3 => emojis::SkinTone::MediumLight,
            4 => emojis::SkinTone::Medium,
            5 => emojis::SkinTone::MediumDark,
            6 => emojis::SkinTone::Dark,
            _ => return None,
        };
        emoji.with_skin_tone(tone)
    });
    Some(toned.unwrap_or(emoji).as_str().to_owned())
}

/// A reaction as a boost's content: the emoji character, else `:name:`, cut to `max_chars`
/// characters (a boost holds at most 16) with `…` at the cut.
pub fn boost_content(name: &str, max_chars: usize) -> String {
    let text = character(name).unwrap_or_else(|| format!(":{name}:"));
    if text.chars().count() <= max_chars {
        return text;
    }
    let mut cut: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_names_become_characters() {
        assert_eq!(character("+1").as_deref(), Some("👍"));
        assert_eq!(character("thumbsup").as_deref(), Some("👍"));
        assert_eq!(character("heart").as_deref(), Some("❤️"));
        assert_eq!(character("tada").as_deref(), Some("🎉"));
        assert_eq!(character("joy").as_deref(), Some("😂"));
        assert_eq!(character("slightly_smiling_face").as_deref(), Some("🙂"));
        assert_eq!(character("+1::skin-tone-3").as_deref(), Some("👍🏼"));
        assert_eq!(character("partyparrot"), None);
    }

    #[test]
    fn other_names_keep_their_colons_within_a_boost() {
        assert_eq!(boost_content("partyparrot", 16), ":partyparrot:");
        assert_eq!(boost_content("tada", 16), "🎉");
        let long = boost_content("a_very_long_custom_emoji", 16);
        assert_eq!(long.chars().count(), 16);
        assert_eq!(long, ":a_very_long_cu…");
    }
}
