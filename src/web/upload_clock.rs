//! Time limits of a streamed body (a direct upload's bytes, a multipart form with a file),
//! which the handler reads itself instead of the request context buffering it under
//! `--body-timeout`: no gap between two pieces longer than `--body-timeout`, and the whole
//! body within `--upload-timeout`. Past either the body fails, the handler drops what it
//! stored, and the request is answered 408 (see [`UploadClock::timed_out`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use hyper::body::{Frame, SizeHint};
use tokio::time::{Instant, Sleep};

/// Whether a request's streamed body ran out of time; kept in the request's extensions by
/// the request context, read once the handler answered.
#[derive(Clone, Debug, Default)]
pub struct UploadClock(Arc<AtomicBool>);

impl UploadClock {
    /// Whether the body failed for being too slow.
    pub fn timed_out(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// `body` under the two limits: `gap` between two pieces (and before the first), `whole`
    /// for all of it.
    pub fn wrap(&self, body: Body, gap: Duration, whole: Duration) -> Body {
        let end = Instant::now() + whole;
        Body::new(Timed {
            inner: body,
            gap,
            end,
            sleep: Box::pin(tokio::time::sleep_until(end.min(Instant::now() + gap))),
            fired: self.0.clone(),
        })
    }
}

/// A body that fails once its clock runs out.
struct Timed {
    inner: Body,
    gap: Duration,
    end: Instant,
    sleep: Pin<Box<Sleep>>,
    fired: Arc<AtomicBool>,
}

impl hyper::body::Body for Timed {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        if !this.fired.load(Ordering::Relaxed) {
            if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
                let next = this.end.min(Instant::now() + this.gap);
                this.sleep.as_mut().reset(next);
                return Poll::Ready(frame);
            }
            if this.sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.fired.store(true, Ordering::Relaxed);
        }
        Poll::Ready(Some(Err(axum::Error::new("the upload was too slow"))))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
