//! The servers tests start as child processes die with the test process, also when it is
//! killed (`common::child::hearth_command`).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;

/// Set on the copy of this test binary that plays the test process.
const ROLE: &str = "HEARTH_TEST_PLAYS_PARENT";

/// The test process's part: starts `hearth serve` as the tests do, prints its pid and waits
/// to be killed. Runs only in the copy [`a_server_dies_with_a_killed_test_process`] starts.
#[test]
#[ignore = "started by a_server_dies_with_a_killed_test_process"]
fn plays_a_test_process_that_gets_killed() {
    if std::env::var_os(ROLE).is_none() {
        return;
    }
    let dir = common::temp_dir("parent");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let hearth = common::child::Hearth::start(&dir, &["--no-seed"]).await;
        println!("pid={}", hearth.child.id().unwrap());
        tokio::time::sleep(Duration::from_secs(120)).await;
    });
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
fn gone(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
    })
}

#[test]
fn a_server_dies_with_a_killed_test_process() {
    let mut parent = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "children::plays_a_test_process_that_gets_killed",
            "--ignored",
            "--nocapture",
        ])
        .env(ROLE, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(parent.stdout.take().unwrap()).lines();
    let pid: u32 = lines
        .find_map(|l| l.ok()?.strip_prefix("pid=")?.parse().ok())
        .expect("the server's pid");
    assert!(!gone(pid), "the server runs");
    parent.kill().unwrap(); // SIGKILL: no destructor, no kill_on_drop.
    parent.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !gone(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let survived = !gone(pid);
    if survived {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert!(
        !survived,
        "the server {pid} outlived its killed test process"
    );
}
