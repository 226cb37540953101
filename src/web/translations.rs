//! The translated prompts behind a form's globe button (Campfire's `TranslationsHelper`): beside
//! a prompt, a globe opens the same prompt in several languages, for people still learning the
//! page's language. The texts are Hearth's own; `templates/shared/_translation.html` draws them.

/// One prompt in one language: the language's own name, its BCP 47 tag and the text.
#[derive(Debug, Clone, Copy)]
pub struct Translation {
    /// The language's name in that language (`Español`).
    pub language: &'static str,
    /// The `lang` attribute of the text.
    pub tag: &'static str,
    /// The prompt.
    pub text: &'static str,
}

const fn t(language: &'static str, tag: &'static str, text: &'static str) -> Translation {
    Translation {
        language,
        tag,
        text,
    }
}

/// The prompts with translations, by key.
const PROMPTS: &[(&str, &[Translation])] = &[
    (
        "name",
        &[
            t("English", "en", "Type your name"),
            t("Español", "es", "Escribe tu nombre"),
            t("Français", "fr", "Indiquez votre nom"),
            t("Deutsch", "de", "Gib deinen Namen ein"),
            t("Português", "pt-BR", "Digite o seu nome"),
            t("हिन्दी", "hi", "अपना नाम लिखें"),
            t("日本語", "ja", "名前を入力してください"),
        ],
    ),
    (
        "email_address",
        &[
            t("English", "en", "Type your email address"),
            t("Español", "es", "Escribe tu dirección de correo"),
            t("Français", "fr", "Indiquez votre adresse e-mail"),
            t("Deutsch", "de", "Gib deine E-Mail-Adresse ein"),
            t("Português", "pt-BR", "Digite o seu e-mail"),
            t("हिन्दी", "hi", "अपना ईमेल पता लिखें"),
            t("日本語", "ja", "メールアドレスを入力してください"),
        ],
    ),
    (
        "password",
        &[
            t("English", "en", "Type your password"),
            t("Español", "es", "Escribe tu contraseña"),
            t("Français", "fr", "Indiquez votre mot de passe"),
            t("Deutsch", "de", "Gib dein Passwort ein"),
            t("Português", "pt-BR", "Digite a sua senha"),
            t("हिन्दी", "hi", "अपना पासवर्ड लिखें"),
            t("日本語", "ja", "パスワードを入力してください"),
        ],
    ),
    (
        "unsupported_browser",
        &[
            t("English", "en", "This browser is too old for this chat. Switch to one of the browsers below, at the version shown or newer, and keep its automatic updates on."),
            t("Español", "es", "Este navegador es demasiado antiguo para este chat. Cambia a uno de los navegadores de abajo, en la versión indicada o una más reciente, y deja activadas sus actualizaciones automáticas."),
            t("Français", "fr", "Ce navigateur est trop ancien pour ce chat. Passez à l’un des navigateurs ci-dessous, dans la version indiquée ou plus récente, et laissez ses mises à jour automatiques activées."),
            t("Deutsch", "de", "Dieser Browser ist für diesen Chat zu alt. Wechsle zu einem der Browser unten, in der genannten oder einer neueren Version, und lass seine automatischen Updates eingeschaltet."),
            t("Português", "pt-BR", "Este navegador é antigo demais para este chat. Use um dos navegadores abaixo, na versão indicada ou mais nova, e deixe as atualizações automáticas ligadas."),
            t("हिन्दी", "hi", "यह ब्राउज़र इस चैट के लिए बहुत पुराना है। नीचे दिए गए ब्राउज़रों में से किसी एक पर जाएँ, दिखाए गए संस्करण या उससे नए पर, और उसके स्वचालित अपडेट चालू रखें।"),
            t("日本語", "ja", "このブラウザーはこのチャットには古すぎます。下記のいずれかのブラウザー（表示されたバージョン以降）に切り替え、自動更新をオンのままにしてください。"),
        ],
    ),
];

/// The translations of the prompt `key` (none for an unknown key, so a typo shows an empty
/// list rather than failing the page).
pub fn of(key: &str) -> &'static [Translation] {
    PROMPTS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, list)| *list)
        .unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_prompt_has_the_same_languages() {
        let first: Vec<&str> = super::PROMPTS[0].1.iter().map(|t| t.tag).collect();
        for (key, list) in super::PROMPTS {
            let tags: Vec<&str> = list.iter().map(|t| t.tag).collect();
            assert_eq!(tags, first, "{key}");
        }
        assert!(super::of("nope").is_empty());
    }
}
