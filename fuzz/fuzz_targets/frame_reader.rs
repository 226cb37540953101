//! The inbound frame reader: any byte stream from a client yields whole messages or one
//! error, never a panic, never a message over the limit, and only UTF-8 text; read as a
//! connection without compression and, again, as one that agreed to permessage-deflate
//! (RFC 7692), where the limit bounds what a compressed message inflates to.
#![no_main]

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use hearth::cable::deflate::{Agreed, Inflater};
use hearth::cable::reader::{Inbound, MessageReader};
use hearth::fanout::deflate::Deflate;
use libfuzzer_sys::fuzz_target;

/// A small limit so that the size checks are reached with short inputs.
const LIMIT: usize = 300;

/// Polls a future that never waits (the source is in memory) to its end.
fn run<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    match future.as_mut().poll(&mut cx) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("an in-memory read never waits"),
    }
}

fuzz_target!(|data: &[u8]| {
    read_all(data, None);
    let agreed = Agreed {
        server: Deflate::new(15).expect("a valid window"),
        // Both inflaters: one per message, and one kept across messages.
        client_context_takeover: data.len() % 2 == 1,
    };
    read_all(data, Some(Inflater::new(&agreed)));
});

/// Reads `data` to its end or its first error, checking every message.
fn read_all(data: &[u8], inflater: Option<Inflater>) {
    let mut reader =
        MessageReader::new(std::io::Cursor::new(data.to_vec()), LIMIT).inflating(inflater);
    run(async {
        loop {
            match reader.read().await {
                Ok(Inbound::Text(text)) => assert!(text.len() <= LIMIT),
                Ok(Inbound::Binary(len)) => assert!(len <= LIMIT),
                Ok(Inbound::Ping(payload)) => assert!(payload.len() <= 125),
                Ok(Inbound::Close(_)) => {}
                Err(error) => {
                    let _ = error.close_code();
                    break;
                }
            }
        }
    });
}
