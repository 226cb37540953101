//! An app's own channels beside Campfire's (`--rpc-url`): [`RpcHost`] runs Campfire's
//! channels on the host it wraps ([`super::host::LocalHost`] or [`super::remote::RemoteHost`])
//! and every other channel over AnyCable's HTTP RPC ([`crate::rpc`]): the connection's
//! `connect`, each subscription's `subscribe`, `message` and `unsubscribe` as `command`s, and
//! the connection's `disconnect` through the bounded queue.
//!
//! With `campfire` off (`--channels rpc`), every channel is the app's but
//! `Turbo::StreamsChannel`, whose signed stream names are verified here without a call (as
//! AnyCable's RPC-less Turbo streams).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

use super::host::{AppCommand, AppSession, ChannelHost, Who};
use super::{Outcome, Subscribed};
use crate::db::users::User;
use crate::rpc::{
    CommandMessage, CommandResponse, ConnectContext, ConnectResponse, Disconnect,
    DisconnectRequest, Env, RpcApp, StringMap,
};

/// Campfire's channels on `inner`, an app's channels over RPC (see the module docs).
#[derive(Debug)]
pub struct RpcHost {
    inner: Arc<dyn ChannelHost>,
    app: Arc<RpcApp>,
    campfire: bool,
}

impl RpcHost {
    /// The host running Campfire's channels on `inner` (unless `campfire` is false: then
    /// none) and the others on `app`.
    pub fn new(inner: Arc<dyn ChannelHost>, app: Arc<RpcApp>, campfire: bool) -> Arc<Self> {
        Arc::new(Self {
            inner,
            app,
            campfire,
        })
    }
}

impl ChannelHost for RpcHost {
    fn identify<'a>(
        &'a self,
        session_token: &'a str,
        fresh: bool,
    ) -> BoxFuture<'a, anyhow::Result<Option<User>>> {
        self.inner.identify(session_token, fresh)
    }

    fn subscribe<'a>(
        &'a self,
        who: Who<'a>,
        identifier: &'a str,
        channel: &'a str,
        params: Map<String, Value>,
    ) -> BoxFuture<'a, anyhow::Result<Outcome>> {
        self.inner.subscribe(who, identifier, channel, params)
    }

    fn perform<'a>(
        &'a self,
        who: Who<'a>,
        sub: &'a Subscribed,
        action: &'a str,
        within_rate: bool,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        self.inner.perform(who, sub, action, within_rate)
    }

    fn unsubscribed<'a>(
        &'a self,
        who: Who<'a>,
        sub: &'a Subscribed,
    ) -> BoxFuture<'a, anyhow::Result<()>> {
        self.inner.unsubscribed(who, sub)
    }

    fn still_allowed<'a>(
        &'a self,
        who: Who<'a>,
        sub: &'a Subscribed,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        self.inner.still_allowed(who, sub)
    }

    fn is_app_channel(&self, channel: &str) -> bool {
        if self.campfire {
            !super::CAMPFIRE_CHANNELS.contains(&channel)
        } else {
            channel != super::turbo_streams::CHANNEL
        }
    }

    fn connect<'a>(
        &'a self,
        ctx: &'a ConnectContext,
    ) -> BoxFuture<'a, anyhow::Result<Option<ConnectResponse>>> {
        Box::pin(async move { Ok(Some(self.app.client.connect(&ctx.sid, &ctx.env).await?)) })
    }

    fn command<'a>(
        &'a self,
        session: &'a AppSession,
        identifier: &'a str,
        command: AppCommand<'a>,
        istate: &'a StringMap,
    ) -> BoxFuture<'a, anyhow::Result<CommandResponse>> {
        Box::pin(async move {
            let env = Env {
                url: session.env.url.clone(),
                headers: session.env.headers.clone(),
                cstate: session.env.cstate.clone(),
                istate: istate.clone(),
            };
            let data = match command {
                AppCommand::Message(data) => data,
                _ => "",
            };
            let message = CommandMessage {
                command: command.name(),
                identifier,
                connection_identifiers: &session.identifiers,
                data,
                env: &env,
            };
            Ok(self.app.client.command(&session.sid, &message).await?)
        })
    }

    fn disconnected(&self, session: AppSession, subscriptions: Vec<(String, StringMap)>) {
        let mut env = session.env;
        // Each subscription's state, as JSON by identifier (anycable-go's
        // `SessionEnv.ChannelStates` in a disconnect).
        env.istate = subscriptions
            .iter()
            .filter(|(_, state)| !state.is_empty())
            .filter_map(|(id, state)| Some((id.clone(), serde_json::to_string(state).ok()?)))
            .collect();
        self.app.disconnects.push(Disconnect {
            sid: session.sid,
            request: DisconnectRequest {
                identifiers: session.identifiers.to_string(),
                subscriptions: subscriptions.into_iter().map(|(id, _)| id).collect(),
                env,
            },
        });
    }
}
