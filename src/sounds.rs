//! The sounds `/play <name>` knows (Campfire's `Sound`, `app/models/sound.rb`): the same names,
//! each drawn in the message either as a line of text (often emoji) or as a small picture.
//! The words and the pictures are Hearth's own: a picture is an inline SVG drawn here, coloured
//! through the stylesheet's custom properties (`templates/css/22-sounds.css`), so it follows the
//! light and dark schemes. The sounds themselves are synthesized in the browser from a table of
//! notes and envelopes (`assets/js/sounds.js`): no audio file ships.
//!
//! A message plays a sound when its whole text is `/play <name>` (see
//! [`crate::render::sound_of`]); the stored body stays that text, as Campfire stores it, so a
//! room moved between the two shows the same sounds.

/// A sound `/play <name>` plays: drawn as [`Sound::text`] or, when it has one, as its
/// [`Sound::image`] (never both, as Campfire's `Sound`).
#[derive(Debug, PartialEq, Eq)]
pub struct Sound {
    /// The name typed after `/play`.
    pub name: &'static str,
    /// What the message says instead of `/play <name>`, when the sound is drawn as text.
    pub text: Option<&'static str>,
    /// The picture drawn instead, when the sound has one.
    pub image: Option<Art>,
}

/// A sound's picture: the inside of an `<svg>` of `width`×`height` (its `viewBox` too), whose
/// shapes take their colours from the `sound-art__*` classes.
#[derive(Debug, PartialEq, Eq)]
pub struct Art {
    /// The picture's width in CSS pixels (and its `viewBox`'s).
    pub width: u16,
    /// The picture's height in CSS pixels (and its `viewBox`'s).
    pub height: u16,
    /// What the picture shows, for screen readers (`aria-label`).
    pub label: &'static str,
    /// The SVG markup inside `<svg>`: trusted, written here.
    pub svg: &'static str,
}

const fn text(name: &'static str, text: &'static str) -> Sound {
    Sound {
        name,
        text: Some(text),
        image: None,
    }
}

const fn image(
    name: &'static str,
    width: u16,
    height: u16,
    label: &'static str,
    svg: &'static str,
) -> Sound {
    Sound {
        name,
        text: None,
        image: Some(Art {
            width,
            height,
            label,
            svg,
        }),
    }
}

/// The sound named `name`, if `/play` knows it.
pub fn find(name: &str) -> Option<&'static Sound> {
    SOUNDS.iter().find(|s| s.name == name)
}

/// Every sound `/play` knows, sorted by name (Campfire's `Sound.names`; the same names as the
/// recipes of `assets/js/sounds.js`).
pub const SOUNDS: &[Sound] = &[
    image(
        "56k",
        84,
        34,
        "a dial-up modem",
        r#"<rect x="2" y="8" width="80" height="22" rx="4" class="sound-art__ink"/><rect x="6" y="24" width="72" height="3" rx="1.5" class="sound-art__muted"/><circle cx="10" cy="14" r="2" class="sound-art__positive"/><circle cx="17" cy="14" r="2" class="sound-art__warn"/><circle cx="24" cy="14" r="2" class="sound-art__accent"/><text x="54" y="20" text-anchor="middle" class="sound-art__text sound-art__text--paper" font-size="12" textLength="22" lengthAdjust="spacingAndGlyphs">56k</text><path d="M71 6q4-3 8 0" class="sound-art__stroke"/>"#,
    ),
    text("ballmer", "🕺 chants for the developers, again and again"),
    text("bell", "🛎️ rings the bell"),
    text("bezos", "🤣 laughs a very big laugh"),
    text("bueller", "📋 takes the roll… hello? 👀"),
    text("butts", "😏 snickers heh heh"),
    image(
        "clowntown",
        120,
        96,
        "a clown's face",
        r#"<circle cx="22" cy="34" r="16" class="sound-art__warn"/><circle cx="98" cy="34" r="16" class="sound-art__warn"/><circle cx="60" cy="52" r="36" class="sound-art__paper"/><circle cx="60" cy="52" r="36" class="sound-art__stroke"/><circle cx="46" cy="42" r="4" class="sound-art__ink"/><circle cx="74" cy="42" r="4" class="sound-art__ink"/><circle cx="60" cy="56" r="8" class="sound-art__negative"/><path d="M40 68q20 18 40 0" class="sound-art__stroke sound-art__stroke--accent"/><path d="M42 16l18-16 18 16z" class="sound-art__accent"/>"#,
    ),
    text("cottoneyejoe", "🤠🎻 stomps and fiddles 🎶"),
    text("crickets", "🦗 … 🦗 … hears nothing but crickets"),
    image(
        "curb",
        120,
        80,
        "a hand held up: enough",
        r#"<rect x="4" y="62" width="112" height="14" rx="3" class="sound-art__muted"/><rect x="4" y="62" width="22" height="14" class="sound-art__warn"/><rect x="48" y="62" width="22" height="14" class="sound-art__warn"/><rect x="92" y="62" width="24" height="14" class="sound-art__warn"/><path d="M44 56V24a5 5 0 0 1 10 0v16V14a5 5 0 0 1 10 0v26V18a5 5 0 0 1 10 0v24V28a5 5 0 0 1 10 0v18q0 10-10 10z" class="sound-art__paper"/><path d="M44 56V24a5 5 0 0 1 10 0v16V14a5 5 0 0 1 10 0v26V18a5 5 0 0 1 10 0v24V28a5 5 0 0 1 10 0v18q0 10-10 10z" class="sound-art__stroke"/>"#,
    ),
    text("dadgummit", "🎣 lost the big one, dad gum it!"),
    image(
        "dangerzone",
        160,
        32,
        "a hazard sign: danger zone",
        r#"<rect width="160" height="32" rx="4" class="sound-art__warn"/><path d="M0 32L16 0h10L10 32zM20 32L36 0h10L30 32zM114 32L130 0h10l-16 32zM134 32L150 0h10l-16 32z" class="sound-art__ink"/><rect x="38" y="4" width="84" height="24" rx="3" class="sound-art__paper"/><text x="80" y="21" text-anchor="middle" class="sound-art__text" font-size="12" textLength="74" lengthAdjust="spacingAndGlyphs">DANGER ZONE</text>"#,
    ),
    text("danielsan", "🥋 balances on one foot 🏆"),
    image(
        "deeper",
        120,
        72,
        "steps going down, deeper",
        r#"<path d="M4 10h28v14h28v14h28v14h28v16H4z" class="sound-art__muted"/><path d="M4 10h28v14h28v14h28v14h28" class="sound-art__stroke"/><path d="M100 6v24m-8-8l8 8 8-8" class="sound-art__stroke sound-art__stroke--accent"/><text x="34" y="62" text-anchor="middle" class="sound-art__text sound-art__text--paper" font-size="12" textLength="40" lengthAdjust="spacingAndGlyphs">deeper</text>"#,
    ),
    image(
        "donotwant",
        100,
        100,
        "a box crossed out: do not want",
        r#"<circle cx="50" cy="50" r="44" class="sound-art__paper"/><rect x="30" y="34" width="40" height="34" rx="3" class="sound-art__muted"/><path d="M30 44h40" class="sound-art__stroke"/><circle cx="50" cy="50" r="44" class="sound-art__stroke sound-art__stroke--negative sound-art__stroke--wide"/><path d="M19 19l62 62" class="sound-art__stroke sound-art__stroke--negative sound-art__stroke--wide"/>"#,
    ),
    image(
        "drama",
        240,
        24,
        "dun, dun, DUN: a dramatic turn",
        r#"<rect width="240" height="24" rx="4" class="sound-art__ink"/><text x="18" y="16" class="sound-art__text sound-art__text--paper" font-size="8">dun</text><text x="58" y="17" class="sound-art__text sound-art__text--paper" font-size="11">dun</text><text x="104" y="19" class="sound-art__text sound-art__text--accent" font-size="16" textLength="64" lengthAdjust="spacingAndGlyphs">DUNNN!</text><path d="M190 4l6 8 6-8 6 8 6-8 6 8 6-8" class="sound-art__stroke sound-art__stroke--accent"/><path d="M190 20l6-8 6 8 6-8 6 8 6-8 6 8" class="sound-art__stroke sound-art__stroke--accent"/>"#,
    ),
    text("flawless", "💎 without a single scratch"),
    text("glados", "🤖🧪 is testing you, for science"),
    text("gogogo", "🏃💨 go go go!"),
    image(
        "greatjob",
        140,
        26,
        "great job, with stars",
        r#"<rect width="140" height="26" rx="13" class="sound-art__accent"/><path d="M14 6l2 5h5l-4 3 2 5-5-3-5 3 2-5-4-3h5zM126 6l2 5h5l-4 3 2 5-5-3-5 3 2-5-4-3h5z" class="sound-art__paper"/><text x="70" y="18" text-anchor="middle" class="sound-art__text sound-art__text--paper" font-size="13" textLength="84" lengthAdjust="spacingAndGlyphs">GREAT JOB!</text>"#,
    ),
    text("greyjoy", "😬🎺 squeaks out a horn"),
    text("guarantee", "🤝 gives a personal guarantee"),
    text("heygirl", "😏💐 hey there"),
    text("honk", "🪿 HONK HONK"),
    text("horn", "📯 sounds the air horn"),
    text("horror", "😱 🔪 🎻 🎻 🎻"),
    text("inconceivable", "🤯 finds it simply inconceivable"),
    text("letitgo", "❄️ lets it all go ☃️"),
    text("live", "🔴 is on the air, no rehearsal"),
    image(
        "loggins",
        140,
        64,
        "aviator sunglasses",
        r#"<path d="M10 14h120" class="sound-art__stroke sound-art__stroke--wide"/><path d="M14 16h46q0 34-24 34Q12 50 14 16zM80 16h46q2 34-22 34Q80 50 80 16z" class="sound-art__ink"/><path d="M22 22l10 0M88 22l10 0" class="sound-art__stroke sound-art__stroke--paper"/><path d="M60 18q10-6 20 0" class="sound-art__stroke sound-art__stroke--wide"/><path d="M4 60h132" class="sound-art__stroke sound-art__stroke--accent"/>"#,
    ),
    text("makeitso", "🚀 makes it happen"),
    text("noooo", "🙅 NOOOOOOO"),
    image(
        "nyan",
        72,
        24,
        "a pixel cat flying on a rainbow",
        r#"<rect x="0" y="4" width="32" height="4" class="sound-art__negative"/><rect x="0" y="8" width="32" height="4" class="sound-art__warn"/><rect x="0" y="12" width="32" height="4" class="sound-art__positive"/><rect x="0" y="16" width="32" height="4" class="sound-art__focus"/><rect x="30" y="4" width="24" height="16" rx="3" class="sound-art__accent"/><rect x="50" y="6" width="16" height="12" rx="3" class="sound-art__muted"/><path d="M51 6l2-4 3 4zM60 6l3-4 2 4z" class="sound-art__muted"/><rect x="54" y="10" width="2" height="2" class="sound-art__ink"/><rect x="61" y="10" width="2" height="2" class="sound-art__ink"/><rect x="32" y="20" width="4" height="4" class="sound-art__muted"/><rect x="46" y="20" width="4" height="4" class="sound-art__muted"/>"#,
    ),
    text("ohmy", "🫢 oh my, oh my"),
    text("ohyeah", "😎 plays it their own way"),
    image(
        "pushit",
        120,
        24,
        "push it, with arrows",
        r#"<rect width="120" height="24" rx="4" class="sound-art__focus"/><path d="M8 6l8 6-8 6zM18 6l8 6-8 6zM94 6l8 6-8 6zM104 6l8 6-8 6z" class="sound-art__paper"/><text x="60" y="17" text-anchor="middle" class="sound-art__text sound-art__text--paper" font-size="13" textLength="56" lengthAdjust="spacingAndGlyphs">PUSH IT</text>"#,
    ),
    text("rimshot", "🥁 ba-dum, tss"),
    text("rollout", "🚚 rolls out 💨"),
    image(
        "rumble",
        140,
        80,
        "two boxing gloves",
        r#"<path d="M16 30q0-22 24-22h10q14 0 14 18v14q0 14-14 14H30q-14 0-14-14z" class="sound-art__negative"/><rect x="22" y="54" width="28" height="16" rx="3" class="sound-art__paper"/><rect x="22" y="54" width="28" height="16" rx="3" class="sound-art__stroke"/><path d="M124 30q0-22-24-22H90q-14 0-14 18v14q0 14 14 14h20q14 0 14-14z" class="sound-art__focus"/><rect x="90" y="54" width="28" height="16" rx="3" class="sound-art__paper"/><rect x="90" y="54" width="28" height="16" rx="3" class="sound-art__stroke"/><path d="M70 14l-4 12h8l-4 12" class="sound-art__stroke sound-art__stroke--accent"/>"#,
    ),
    text("sax", "🌆🎷 plays a smooth solo"),
    text("secret", "🗝️ finds a hidden door"),
    text("sexyback", "🕺 brings it back 🔥"),
    text("story", "📖 …and that's how it happened"),
    text("tada", "🎉 ta-da!"),
    text("tmyk", "🌠 learned something today 🌠"),
    text("totes", "💯 totally, totally"),
    text("trololo", "🎙️ lo-lo-lo, la-la-la"),
    text("trombone", "🎺 wah, wah, wahhh"),
    text("unix", "⌨️ knows this system"),
    text("vuvuzela", "📯 BZZZZZZZZZZZZZZZ"),
    image(
        "what",
        80,
        96,
        "a face asking what?",
        r#"<circle cx="40" cy="56" r="36" class="sound-art__warn"/><circle cx="28" cy="50" r="6" class="sound-art__paper"/><circle cx="52" cy="50" r="6" class="sound-art__paper"/><circle cx="28" cy="50" r="3" class="sound-art__ink"/><circle cx="52" cy="50" r="3" class="sound-art__ink"/><ellipse cx="40" cy="74" rx="6" ry="8" class="sound-art__ink"/><path d="M22 38l10 4M58 38l-10 4" class="sound-art__stroke"/><text x="66" y="20" text-anchor="middle" class="sound-art__text sound-art__text--accent" font-size="22">?</text>"#,
    ),
    text("whoomp", "🙌 there it is! 😎"),
    text("wups", "🙈 oops, my bad"),
    image(
        "yay",
        100,
        50,
        "yay, with confetti",
        r#"<path d="M6 8l4 2-2 4zM88 6l6 2-3 5zM14 40l5-1 1 5zM84 38l6 1-3 5zM50 4l3 3-4 2z" class="sound-art__accent"/><circle cx="28" cy="8" r="2" class="sound-art__focus"/><circle cx="72" cy="44" r="2" class="sound-art__positive"/><circle cx="94" cy="24" r="2" class="sound-art__warn"/><circle cx="4" cy="26" r="2" class="sound-art__positive"/><text x="50" y="35" text-anchor="middle" class="sound-art__text sound-art__text--accent" font-size="26" textLength="64" lengthAdjust="spacingAndGlyphs">YAY!</text>"#,
    ),
    image(
        "yeah",
        110,
        24,
        "yeah, in sunglasses",
        r#"<rect width="110" height="24" rx="12" class="sound-art__ink"/><path d="M10 9h22M11 9h9q0 8-5 8t-4-8zM23 9h9q0 8-5 8t-4-8z" class="sound-art__paper"/><path d="M11 9h9q0 8-5 8t-4-8zM23 9h9q0 8-5 8t-4-8z" class="sound-art__focus"/><text x="70" y="17" text-anchor="middle" class="sound-art__text sound-art__text--paper" font-size="13" textLength="58" lengthAdjust="spacingAndGlyphs">YEAAAH!</text>"#,
    ),
    text("yodel", "🏔️ yodels from the mountaintop 🎶"),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Campfire's names, as `app/models/sound.rb` lists them.
    const CAMPFIRE: [&str; 56] = [
        "56k",
        "ballmer",
        "bell",
        "bezos",
        "bueller",
        "butts",
        "clowntown",
        "cottoneyejoe",
        "crickets",
        "curb",
        "dadgummit",
        "dangerzone",
        "danielsan",
        "deeper",
        "donotwant",
        "drama",
        "flawless",
        "glados",
        "gogogo",
        "greatjob",
        "greyjoy",
        "guarantee",
        "heygirl",
        "honk",
        "horn",
        "horror",
        "inconceivable",
        "letitgo",
        "live",
        "loggins",
        "makeitso",
        "noooo",
        "nyan",
        "ohmy",
        "ohyeah",
        "pushit",
        "rimshot",
        "rollout",
        "rumble",
        "sax",
        "secret",
        "sexyback",
        "story",
        "tada",
        "tmyk",
        "totes",
        "trololo",
        "trombone",
        "unix",
        "vuvuzela",
        "what",
        "whoomp",
        "wups",
        "yay",
        "yeah",
        "yodel",
    ];

    /// The ones Campfire draws as a picture; the others are text.
    const PICTURES: [&str; 15] = [
        "56k",
        "clowntown",
        "curb",
        "dangerzone",
        "deeper",
        "donotwant",
        "drama",
        "greatjob",
        "loggins",
        "nyan",
        "pushit",
        "rumble",
        "what",
        "yay",
        "yeah",
    ];

    #[test]
    fn the_table_has_exactly_campfires_names_sorted() {
        let names: Vec<_> = SOUNDS.iter().map(|s| s.name).collect();
        assert_eq!(names, CAMPFIRE);
        for name in CAMPFIRE {
            assert_eq!(find(name).map(|s| s.name), Some(name));
        }
        assert!(find("drumroll").is_none());
        assert!(find("").is_none());
    }

    #[test]
    fn each_sound_has_text_or_a_picture_as_campfire_draws_it() {
        for s in SOUNDS {
            let picture = PICTURES.contains(&s.name);
            assert_eq!(s.image.is_some(), picture, "{}: picture", s.name);
            assert_eq!(s.text.is_some(), !picture, "{}: text", s.name);
            if let Some(text) = s.text {
                assert!(!text.trim().is_empty(), "{}", s.name);
                assert!(!text.contains(['<', '>', '&']), "{}", s.name);
            }
            if let Some(art) = &s.image {
                assert!(art.width > 0 && art.width <= 240, "{}", s.name);
                assert!(art.height > 0 && art.height <= 100, "{}", s.name);
                assert!(!art.label.is_empty() && !art.label.contains(['"', '<', '&']));
                // Inner markup only, coloured by class (no colours of its own, no scripts).
                assert!(!art.svg.contains("<svg") && !art.svg.contains("script"));
                assert!(!art.svg.contains("fill=") && !art.svg.contains("stroke="));
                assert!(!art.svg.contains('#'), "{}: a colour of its own", s.name);
                assert!(art.svg.contains("class=\"sound-art__"), "{}", s.name);
            }
        }
    }
}
