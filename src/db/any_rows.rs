//! Whether a table holds any row, remembered between the writes that may change it: a post
//! asks whether any webhook or push subscription exists before it looks for recipients, and
//! while none does (most servers have no webhook, many no push subscription) it skips the
//! query, and the hop to SQLite's worker thread, altogether.
//!
//! One [`AnyRows`] per table and server (never a process-wide static: tests run several
//! servers in one process). The writes that add or remove rows take it as an argument and
//! call [`AnyRows::changed`] after their commit, so no write path can forget it.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};

/// Unknown, none, or some rows, under a count of the changes made so far.
///
/// The state is one word: the change count in the bits above the lowest two, which hold
/// `UNKNOWN`, `NONE` or `SOME`. A reader that queried remembers its answer only if no
/// change was made since it read the state, so an answer read before a write never outlives
/// it (a write may commit after the reader's query and call `changed` before the reader
/// stores: the count has moved, the store is refused).
#[derive(Debug, Default)]
pub struct AnyRows {
    state: AtomicU64,
}

const UNKNOWN: u64 = 0;
const NONE: u64 = 1;
const SOME: u64 = 2;
const KNOWN_BITS: u64 = 0b11;

impl AnyRows {
    /// Nothing known yet: the first [`Self::any`] queries.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the table holds any row: the remembered answer, or `query`'s (remembered
    /// unless a change was made while it ran).
    ///
    /// # Errors
    /// `query`'s error (nothing is remembered then).
    pub async fn any<F, Fut>(&self, query: F) -> sqlx::Result<bool>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = sqlx::Result<bool>>,
    {
        let seen = self.state.load(Ordering::SeqCst);
        match seen & KNOWN_BITS {
            NONE => return Ok(false),
            SOME => return Ok(true),
            _ => {}
        }
        let any = query().await?;
        let known = (seen & !KNOWN_BITS) | if any { SOME } else { NONE };
        // Refused when a change came meanwhile: the next reader queries again.
        let _ = self
            .state
            .compare_exchange(seen, known, Ordering::SeqCst, Ordering::SeqCst);
        Ok(any)
    }

    /// The remembered answer, if any (no query): for a caller that would rather not even
    /// start the work that asks.
    pub fn known(&self) -> Option<bool> {
        match self.state.load(Ordering::SeqCst) & KNOWN_BITS {
            NONE => Some(false),
            SOME => Some(true),
            _ => None,
        }
    }

    /// Forgets the answer: call after a write that may have added or removed rows has
    /// committed (or failed: forgetting too often costs one query).
    pub fn changed(&self) {
        let _ = self
            .state
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |s| {
                Some(((s & !KNOWN_BITS).wrapping_add(KNOWN_BITS + 1)) | UNKNOWN)
            });
    }
}

#[cfg(test)]
mod tests {
    use super::AnyRows;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn an_answer_is_remembered_until_a_change() {
        block_on(async {
            let rows = AnyRows::new();
            let queries = AtomicUsize::new(0);
            let ask = |answer: bool| {
                let queries = &queries;
                move || async move {
                    queries.fetch_add(1, Ordering::SeqCst);
                    Ok(answer)
                }
            };
            assert!(!rows.any(ask(false)).await.unwrap());
            assert!(!rows.any(ask(true)).await.unwrap(), "remembered: none");
            assert_eq!(queries.load(Ordering::SeqCst), 1);
            rows.changed();
            assert!(rows.any(ask(true)).await.unwrap());
            assert!(rows.any(ask(false)).await.unwrap(), "remembered: some");
            assert_eq!(queries.load(Ordering::SeqCst), 2);
        });
    }

    #[test]
    fn an_answer_read_before_a_change_is_not_remembered() {
        block_on(async {
            let rows = AnyRows::new();
            // The query saw no row; a write committed and said so before the answer came back.
            let stale = rows
                .any(|| async {
                    rows.changed();
                    Ok(false)
                })
                .await
                .unwrap();
            assert!(!stale);
            assert!(
                rows.any(|| async { Ok(true) }).await.unwrap(),
                "the stale answer was remembered"
            );
        });
    }

    #[test]
    fn an_error_is_not_remembered() {
        block_on(async {
            let rows = AnyRows::new();
            assert!(rows
                .any(|| async { Err(sqlx::Error::PoolClosed) })
                .await
                .is_err());
            assert!(rows.any(|| async { Ok(true) }).await.unwrap());
        });
    }
}
