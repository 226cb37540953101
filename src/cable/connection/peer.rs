//! The client's side of a connection's socket, shared between the frame reader and the wait
//! for the client's going away while an app's call is pending (`--rpc-url`).
//!
//! As anycable-go discards the pending RPC calls of a session that ended (anycable#266: the
//! calls of a client that is gone only delay everyone else's, and a client that resubscribes
//! in a loop would fill the queue), a connection stops waiting for the app's answer to its
//! `connect` or to a command once the client has closed its side (or, for a command, the
//! server closed the connection), and makes no further command calls for it; the `disconnect`
//! of a connection the app accepted is still queued ([`crate::rpc::DisconnectQueue`]).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, Interest, ReadBuf};
use tokio::net::tcp::OwnedReadHalf;

/// How often a socket that holds unread input is looked at again for the client's close
/// while a call is pending (with nothing unread, the close itself wakes the wait).
const RECHECK: Duration = Duration::from_millis(50);

/// The read half of the client's socket, read by the frame reader while a clone of it waits
/// for the client's close ([`SharedRead::peer_closed`]).
#[derive(Clone, Debug)]
pub(super) struct SharedRead(Arc<OwnedReadHalf>);

impl SharedRead {
    pub(super) fn new(half: OwnedReadHalf) -> Self {
        Self(Arc::new(half))
    }

    /// Resolves once the client has closed its side of the socket (a FIN or a reset seen by
    /// the kernel, though input sent before it may still be unread); never otherwise.
    pub(super) async fn peer_closed(&self) {
        loop {
            let Ok(ready) = self.0.ready(Interest::READABLE).await else {
                return;
            };
            if ready.is_read_closed() {
                return;
            }
            // Unread input (the client's next commands): readiness stays set until it is
            // read, so the close is looked for again a little later.
            tokio::time::sleep(RECHECK).await;
        }
    }
}

impl AsyncRead for SharedRead {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let stream: &tokio::net::TcpStream = (*self.0).as_ref();
        loop {
            std::task::ready!(stream.poll_read_ready(cx))?;
            match stream.try_read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                // The readiness was stale (cleared by `try_read`): wait for the next one.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}
