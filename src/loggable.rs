//! Untrusted text quoted in a log line: cut and escaped, so whoever sent it (a cable client,
//! a broadcast body) can neither forge log lines (a newline, an ANSI escape) nor fill the log
//! with one 1 MiB line.

/// Longest piece of client input a log line quotes, in characters.
pub const LOGGED_INPUT_CHARS: usize = 120;

/// Untrusted input as a log line may quote it: at most [`LOGGED_INPUT_CHARS`] characters, control
/// characters and quotes escaped (`\n`, `\u{1b}`), so a client can neither fill the log with
/// 1 MiB identifiers nor forge log lines.
pub fn loggable(input: &str) -> String {
    let mut out: String = input
        .chars()
        .take(LOGGED_INPUT_CHARS)
        .flat_map(char::escape_debug)
        .collect();
    if input.chars().nth(LOGGED_INPUT_CHARS).is_some() {
        out.push_str(&format!("… ({} bytes)", input.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::loggable;

    #[test]
    fn client_input_is_cut_and_escaped_before_it_is_logged() {
        assert_eq!(loggable("abc"), "abc");
        assert_eq!(loggable("a\nb\u{1b}[31m"), "a\\nb\\u{1b}[31m");
        let long = "Z".repeat(1_000_000);
        let logged = loggable(&long);
        assert!(logged.len() < 200, "{}", logged.len());
        assert!(logged.ends_with("(1000000 bytes)"));
    }
}
