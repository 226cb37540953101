//! `hearth --help` and `hearth serve --help` against the documentation: every setting of
//! `serve` is a flag with an environment variable, and `docs/configuration.md` lists each one;
//! `sign-stream` and `broadcast-key` list only the flags they read, and print the keys
//! `serve` uses.

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
        }
        // On the flag's line (short help) or on a line of its own (long help).
        if let Some((_, rest)) = line.split_once("[env: ") {
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
    let readme = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/configuration.md"
    ))
    .expect("docs/configuration.md");
    let flags = flags(&help);
    assert!(flags.len() >= 20, "{help}");
    for (flag, env) in flags {
        let env = env.unwrap_or_else(|| panic!("--{flag} has no environment variable"));
        let row = format!("| `--{flag}` | `{env}` |");
        assert!(
            readme.contains(&row),
            "docs/configuration.md lacks the row {row}"
        );
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

/// `hearth <args>`'s standard output, which must succeed.
fn run(args: &[&str]) -> String {
    help(args).trim_end().to_owned()
}

#[test]
fn key_commands_list_only_their_own_flags_with_serves_env_vars() {
    let serve = flags(&help(&["serve", "--help"]));
    for (command, own) in [
        (
            "sign-stream",
            &[
                "turbo-verifier-key",
                "key-generator-digest",
                "secret-key-base",
                "data-dir",
                "production",
            ][..],
        ),
        (
            "broadcast-key",
            &["broadcast-key", "secret-key-base", "data-dir", "production"][..],
        ),
    ] {
        let text = help(&[command, "--help"]);
        let listed = flags(&text);
        let names: Vec<&str> = listed.iter().map(|(flag, _)| flag.as_str()).collect();
        assert_eq!(names, own, "{command} --help:\n{text}");
        for pair in &listed {
            assert!(
                serve.contains(pair),
                "{command}'s {pair:?} differs from serve's"
            );
        }
    }
}

#[test]
fn key_commands_print_the_keys_serve_uses() {
    let secret = "0123456789abcdef".repeat(8);
    let dir = std::env::temp_dir().join(format!("hearth-cli-{}", std::process::id()));
    let dir = dir.to_str().expect("utf-8 temp dir");
    let signed = run(&[
        "sign-stream",
        "rooms",
        "--secret-key-base",
        &secret,
        "--data-dir",
        dir,
    ]);
    let signer = hearth::rails::StreamNameSigner::from_secret_key_base(
        secret.as_bytes(),
        hearth::rails::KdfDigest::Sha256,
    );
    assert_eq!(signer.verify(&signed).as_deref(), Some("rooms"));
    assert_eq!(
        run(&["broadcast-key", "--secret-key-base", &secret]),
        hearth::anycable::broadcast_key(&secret)
    );
    assert_eq!(
        run(&[
            "broadcast-key",
            "--broadcast-key",
            "k3y",
            "--secret-key-base",
            &secret
        ]),
        "k3y"
    );
    assert!(
        !std::path::Path::new(dir).exists(),
        "an explicit secret writes no file"
    );
}

/// `hearth broadcast-key` and `hearth sign-stream` read anycable-go's names as `hearth serve`
/// does, so a deployment moving from anycable-go prints the keys its server uses.
#[test]
fn key_commands_read_anycable_gos_names_as_serve_does() {
    let with_env = |args: &[&str], env: &[(&str, &str)]| {
        let out = Command::new(env!("CARGO_BIN_EXE_hearth"))
            .args(args)
            .envs(env.iter().copied())
            .env_remove("HEARTH_BROADCAST_KEY")
            .env_remove("HEARTH_TURBO_VERIFIER_KEY")
            .output()
            .expect("hearth runs");
        assert!(out.status.success(), "{args:?} {env:?} failed");
        String::from_utf8(out.stdout).unwrap().trim_end().to_owned()
    };
    let base = "0123456789abcdef".repeat(8);
    let key = ["broadcast-key", "--secret-key-base", &base];
    assert_eq!(
        with_env(&key, &[("ANYCABLE_BROADCAST_KEY", "go-k3y")]),
        "go-k3y"
    );
    assert_eq!(
        with_env(&key, &[("ANYCABLE_HTTP_BROADCAST_SECRET", "old-k3y")]),
        "old-k3y"
    );
    assert_eq!(
        with_env(&key, &[("ANYCABLE_SECRET", "common")]),
        hearth::anycable::broadcast_key("common")
    );
    // Hearth's own name wins.
    let both = [
        "broadcast-key",
        "--broadcast-key",
        "mine",
        "--secret-key-base",
        &base,
    ];
    assert_eq!(with_env(&both, &[("ANYCABLE_BROADCAST_KEY", "go")]), "mine");

    let sign = ["sign-stream", "rooms", "--secret-key-base", &base];
    for var in ["ANYCABLE_TURBO_STREAMS_SECRET", "ANYCABLE_SECRET"] {
        let signed = with_env(&sign, &[(var, "turbo-secret")]);
        let signer = hearth::rails::StreamNameSigner::from_raw_key(b"turbo-secret");
        assert_eq!(signer.verify(&signed).as_deref(), Some("rooms"), "{var}");
    }
}

/// `--data-dir` alone names `<data-dir>/hearth.sqlite3`; when that does not exist but a
/// database is at the former default (`storage/hearth.sqlite3` of the working directory),
/// the command stops and says how to keep it, rather than starting on a new, empty one.
#[test]
fn a_database_left_at_the_former_default_is_not_passed_over() {
    let dir = std::env::temp_dir().join(format!("hearth-cli-left-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("storage")).unwrap();
    std::fs::write(dir.join("storage/hearth.sqlite3"), b"").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args(["serve", "--bind", "127.0.0.1:0", "--data-dir", "state"])
        .current_dir(&dir)
        .env_remove("HEARTH_DATABASE")
        .env_remove("HEARTH_DATA_DIR")
        .output()
        .expect("hearth runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("--database storage/hearth.sqlite3"),
        "{stderr}"
    );
    assert!(!dir.join("state/hearth.sqlite3").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
