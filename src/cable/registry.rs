//! The open, identified connections by user and session, for server-side disconnects:
//! sign-out and deactivation (Rails' `remote_connections.where(current_user:).disconnect`) and
//! the `server_restart` sent to everyone on SIGTERM.

use std::collections::HashMap;

use parking_lot::Mutex;

use super::protocol::{disconnect, DisconnectReason};
use crate::fanout::frame::Frame;
use crate::fanout::Connection;

#[derive(Debug)]
struct Entry {
    user_id: i64,
    session_token: Option<String>,
    connection: Connection,
}

/// Open connections keyed by connection id.
#[derive(Debug, Default)]
pub struct Registry {
    entries: Mutex<HashMap<u64, Entry>>,
}

/// Queues the disconnect frame and a close frame (code 1000) on `connection`.
pub fn close_with(connection: &Connection, reason: DisconnectReason, reconnect: bool) {
    connection.close(&[
        Frame::text(&disconnect(reason, reconnect)),
        Frame::close(1000, ""),
    ]);
}

impl Registry {
    /// Records an identified connection.
    pub fn register(&self, user_id: i64, session_token: Option<String>, connection: Connection) {
        self.entries.lock().insert(
            connection.id(),
            Entry {
                user_id,
                session_token,
                connection,
            },
        );
    }

    /// Forgets a connection (it closed).
    pub fn deregister(&self, connection_id: u64) {
        self.entries.lock().remove(&connection_id);
    }

    /// Number of registered connections.
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// Whether no connection is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn close_matching(
        &self,
        reason: DisconnectReason,
        reconnect: bool,
        pred: impl Fn(&Entry) -> bool,
    ) -> usize {
        let matching: Vec<Connection> = self
            .entries
            .lock()
            .values()
            .filter(|e| pred(e))
            .map(|e| e.connection.clone())
            .collect();
        for c in &matching {
            close_with(c, reason, reconnect);
        }
        matching.len()
    }

    /// Closes the user's connections with `{"type":"disconnect","reason":"remote",…}`.
    pub fn disconnect_user(&self, user_id: i64, reconnect: bool) -> usize {
        self.close_matching(DisconnectReason::Remote, reconnect, |e| {
            e.user_id == user_id
        })
    }

    /// Closes the connections opened with this session token (sign-out).
    pub fn disconnect_session(&self, token: &str, reconnect: bool) -> usize {
        self.close_matching(DisconnectReason::Remote, reconnect, |e| {
            e.session_token.as_deref() == Some(token)
        })
    }

    /// Closes every connection with `{"type":"disconnect","reason":"server_restart","reconnect":true}`.
    pub fn disconnect_all_for_restart(&self) -> usize {
        self.close_matching(DisconnectReason::ServerRestart, true, |_| true)
    }
}
