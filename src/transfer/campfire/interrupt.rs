//! Ctrl-C (SIGINT) and SIGTERM during an import. Once [`Interrupt::listen`] is called they no
//! longer end the process at once: they set a flag that the import checks between files,
//! between tables, between batches of bodies and right before its commit, and the import then
//! fails the ordinary way (the transaction rolled back, staged files and a database file it
//! made removed). After the commit the files are moved into place whatever comes, so the
//! database never names a file that is not there.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Whether the import was asked to stop.
#[derive(Clone, Debug, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// A flag set by the next SIGINT or SIGTERM of this process.
    pub fn listen() -> Self {
        let interrupt = Self::default();
        let flag = interrupt.0.clone();
        tokio::spawn(async move {
            let terminate = async {
                match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(mut signal) => {
                        signal.recv().await;
                    }
                    Err(_) => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                () = terminate => {}
            }
            flag.store(true, Ordering::SeqCst);
            eprintln!("\ninterrupted: stopping; the target is left as it was");
        });
        interrupt
    }

    /// Fails once the flag is set.
    ///
    /// # Errors
    /// "interrupted", when a signal came.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.0.load(Ordering::SeqCst) {
            anyhow::bail!("interrupted: nothing was imported, the target is as it was");
        }
        Ok(())
    }
}
