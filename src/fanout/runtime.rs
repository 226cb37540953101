//! The writers' own threads: where every connection's drain loop runs (queue engine). One
//! per core by default (`--writer-threads`); each connection's writer lives on one of them.
//!
//! Requests must never queue behind drains. If writers shared the request runtime, a post's
//! handler — which hops to SQLite's worker threads and back several times — would wait behind
//! hundreds of ready writer tasks at each hop. With the writers on a thread of their own, a
//! request's thread is idle when the request arrives, and the OS scheduler runs it first
//! (a thread that slept is favoured over one that has been busy). Sockets stay registered
//! with the reactor of the runtime that accepted them; only their write loops live here.

use std::future::Future;
use std::sync::Arc;

use tokio::runtime::Handle;
use tokio::sync::oneshot;

use super::queue::WakeList;
use super::sweeper;

/// A current-thread tokio runtime on a dedicated OS thread named `hearth-fanout-<i>`, with its
/// sweeper (`sweeper.rs`) running. Dropping it stops the thread (and drops any writer still
/// running there).
#[derive(Debug)]
pub(crate) struct WriterRuntime {
    handle: Handle,
    wakes: Arc<WakeList>,
    stop: Option<oneshot::Sender<()>>,
}

impl WriterRuntime {
    /// Starts the thread. Errors when the OS refuses a thread or the runtime cannot be built.
    pub(crate) fn start(i: usize) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        let wakes = Arc::new(WakeList::default());
        handle.spawn(sweeper::sweep(wakes.clone()));
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name(format!("hearth-fanout-{i}"))
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
            })?;
        Ok(Self {
            handle,
            wakes,
            stop: Some(stop),
        })
    }

    /// The list this thread's sweeper drains: the wake-up target of the outboxes whose
    /// writers run here.
    pub(crate) fn wakes(&self) -> &Arc<WakeList> {
        &self.wakes
    }

    /// Spawns a writer task on the thread.
    pub(crate) fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.handle.spawn(task);
    }
}

impl Drop for WriterRuntime {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
