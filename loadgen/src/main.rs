//! `loadgen`: see the crate docs of the `loadgen` library and `loadgen/README.md`.

#![forbid(unsafe_code)]

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = loadgen::cli::Cli::parse();
    loadgen::procfs::raise_nofile_limit();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let local = tokio::task::LocalSet::new();
    // On SIGINT or SIGTERM the run is dropped, which kills any server it started
    // (`kill_on_drop`) and closes every connection.
    let outcome = local.block_on(&runtime, async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            r = loadgen::cli::run(cli) => r,
            _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
            _ = term.recv() => Err(anyhow::anyhow!("terminated")),
        }
    });
    match outcome {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
