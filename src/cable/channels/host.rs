//! The channel host: where a connection's channels run. Chosen once at start (in `app.rs`,
//! by role) and handed to every connection, so the connection never asks which node it runs
//! on:
//!
//! - here, against this node's database (`--role all`, and the app node's side of the
//!   internal endpoint): [`ChannelHost::here`];
//! - on a cable node, the channels that need the database are asked of the app node
//!   ([`super::remote`]) and the rest run here: [`ChannelHost::for_node`] with an app link.
//!
//! Every method returns a boxed future: a connection boxes the database work of each command
//! anyway (see `cable/connection.rs`).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

use super::{remote, ChannelContext, Outcome, Subscribed, Who};
use crate::app_link::AppLink;
use crate::db::users::User;
use crate::state::SharedState;

/// Where channels run (see the module docs): this node's state, and on a cable node the
/// link to its app node.
#[derive(Clone, Debug)]
pub struct ChannelHost {
    state: SharedState,
    /// The app node asked for what needs the database; None: everything runs here.
    link: Option<Arc<AppLink>>,
}

impl ChannelHost {
    /// The host of this node's role: the app node's (asked over `state.app_link`) on a cable
    /// node, else this node's.
    pub fn for_node(state: SharedState) -> Arc<Self> {
        let link = state.app_link.clone();
        Arc::new(Self { state, link })
    }

    /// The host running every channel here, against this node's database.
    pub fn here(state: SharedState) -> Arc<Self> {
        Arc::new(Self { state, link: None })
    }

    /// The channel context of `who`.
    pub fn ctx<'a>(&'a self, who: Who<'a>) -> ChannelContext<'a> {
        ChannelContext {
            pool: &self.state.pool,
            auth_cache: &self.state.auth_cache,
            broadcaster: &self.state.broadcaster,
            signer: &self.state.signer,
            user: who.user,
            presence: &self.state.presence,
            connection_id: who.connection_id,
        }
    }

    /// The active user of a session token (`ApplicationCable::Connection#connect`); None for
    /// an unknown, ended or deactivated session.
    pub fn identify<'a>(
        &'a self,
        session_token: &'a str,
    ) -> BoxFuture<'a, anyhow::Result<Option<User>>> {
        match &self.link {
            Some(link) => Box::pin(remote::identify(link, session_token)),
            None => Box::pin(async move {
                Ok(self
                    .state
                    .auth_cache
                    .resume(&self.state.pool, session_token)
                    .await?)
            }),
        }
    }

    /// A channel's `subscribed` for `channel` with `params` (`identifier` is the whole
    /// identifier, which a cable node caches the app node's answers by).
    pub fn subscribe<'a>(
        &'a self,
        who: Who<'a>,
        identifier: &'a str,
        channel: &'a str,
        params: Map<String, Value>,
    ) -> BoxFuture<'a, anyhow::Result<Outcome>> {
        match &self.link {
            Some(link) if remote::needs_app(channel) => {
                Box::pin(remote::subscribe(link, who, identifier, channel, params))
            }
            _ => Box::pin(async move { super::subscribe(self.ctx(who), channel, &params).await }),
        }
    }

    /// A channel action; false when the channel has no such action. `within_rate` is false
    /// past the connection's budget for the channel.
    pub fn perform<'a>(
        &'a self,
        who: Who<'a>,
        sub: &'a Subscribed,
        action: &'a str,
        within_rate: bool,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        match &self.link {
            Some(link) => Box::pin(remote::perform(link, who, sub, action, within_rate)),
            None => Box::pin(super::perform(self.ctx(who), sub, action, within_rate)),
        }
    }

    /// A channel's `unsubscribed` (on `unsubscribe`, a revocation and the connection's end).
    pub fn unsubscribed<'a>(
        &'a self,
        who: Who<'a>,
        sub: &'a Subscribed,
    ) -> BoxFuture<'a, anyhow::Result<()>> {
        match &self.link {
            Some(link) if remote::unsubscribed_needs_app(sub) => {
                Box::pin(remote::unsubscribed(link, who, sub))
            }
            _ => Box::pin(super::unsubscribed(self.ctx(who), sub)),
        }
    }

    /// Whether a confirmed subscription is still allowed (the re-check after a revocation).
    pub fn still_allowed<'a>(
        &'a self,
        who: Who<'a>,
        sub: &'a Subscribed,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        match &self.link {
            Some(link) => Box::pin(remote::still_allowed(link, who, sub)),
            None => Box::pin(super::still_allowed(self.ctx(who), sub)),
        }
    }
}
