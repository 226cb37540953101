//! `hearth --help` and `hearth serve --help` against the README: every setting of `serve` is a
//! flag with an environment variable, and the README's configuration table lists each one.

use std::process::Command;

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args(args)
        .output()
        .expect("hearth runs");
    assert!(out.status.success(), "{args:?} failed");
    String::from_utf8(out.stdout).expect("utf-8 help")
}

/// (flag, environment variable) pairs of a `--help` text.
fn flags(help: &str) -> Vec<(String, Option<String>)> {
    let mut out: Vec<(String, Option<String>)> = Vec::new();
    for line in help.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("--") {
            let name = rest.split([' ', '<']).next().unwrap_or("").to_owned();
            if name != "help" {
                out.push((name, None));
            }
        } else if let Some(rest) = line.strip_prefix("[env: ") {
            if let Some(last) = out.last_mut() {
                last.1 = rest.split(['=', ']']).next().map(str::to_owned);
            }
        }
    }
    out
}

#[test]
fn every_serve_setting_has_an_env_var_and_a_readme_row() {
    let help = help(&["serve", "--help"]);
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let flags = flags(&help);
    assert!(flags.len() >= 20, "{help}");
    for (flag, env) in flags {
        let env = env.unwrap_or_else(|| panic!("--{flag} has no environment variable"));
        let row = format!("| `--{flag}` | `{env}` |");
        assert!(readme.contains(&row), "README lacks the row {row}");
    }
}

#[test]
fn top_level_help_names_the_commands_and_where_settings_are() {
    let help = help(&["--help"]);
    for needle in [
        "serve",
        "seed",
        "sign-stream",
        "hearth serve --help",
        "/metrics",
    ] {
        assert!(help.contains(needle), "{needle} missing:\n{help}");
    }
}
