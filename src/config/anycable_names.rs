//! anycable-go's names for the settings Hearth shares with it, so a deployment moving from
//! anycable-go keeps its environment (`docs/rails-app.md`, "Moving from anycable-go").
//!
//! Each is read by clap from the environment variable anycable-go reads (anycable-go's
//! `cli/options.go`: `ANYCABLE_` and the flag's name in capitals) or from anycable-go's flag
//! (`--rpc_host`, with underscores), hidden from `--help`. [`AnyCableNames::apply`] then fills
//! each Hearth setting that is still unset (or at its default) from its alias: Hearth's own
//! name wins when both are given.

use super::{Config, Redacted};

/// anycable-go's names (see the module docs), each field `go_` and anycable-go's setting.
/// `None`: not given.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct AnyCableNames {
    /// `ANYCABLE_RPC_HOST`: the RPC's address, for [`Config::rpc_url`] when it is an
    /// `http://` or `https://` URL (anycable-go's HTTP RPC; a bare `host:port` is its gRPC,
    /// which Hearth does not speak, and stops the start).
    #[arg(long = "rpc_host", env = "ANYCABLE_RPC_HOST", hide = true)]
    pub go_rpc_host: Option<String>,

    /// `ANYCABLE_HTTP_RPC_SECRET`: [`Config::rpc_secret`].
    #[arg(
        long = "http_rpc_secret",
        env = "ANYCABLE_HTTP_RPC_SECRET",
        hide = true,
        hide_env_values = true
    )]
    pub go_http_rpc_secret: Option<Redacted<String>>,

    /// `ANYCABLE_SECRET`: the common secret the RPC key and the broadcast key are derived
    /// from when neither is given (instead of secret_key_base), and Turbo's signed stream
    /// verifier key when no other is given (anycable-go's fallbacks).
    #[arg(
        long = "secret",
        env = "ANYCABLE_SECRET",
        hide = true,
        hide_env_values = true
    )]
    pub go_secret: Option<Redacted<String>>,

    /// `ANYCABLE_HEADERS`: [`Config::rpc_headers`], comma-separated.
    #[arg(
        long = "headers",
        env = "ANYCABLE_HEADERS",
        hide = true,
        value_delimiter = ','
    )]
    pub go_headers: Option<Vec<String>>,

    /// `ANYCABLE_RPC_CONCURRENCY`: [`Config::rpc_concurrency`].
    #[arg(
        long = "rpc_concurrency",
        env = "ANYCABLE_RPC_CONCURRENCY",
        hide = true
    )]
    pub go_rpc_concurrency: Option<usize>,

    /// `ANYCABLE_BROADCAST_KEY` (or the older `ANYCABLE_HTTP_BROADCAST_SECRET`, below):
    /// [`Config::broadcast_key`].
    #[arg(
        long = "broadcast_key",
        env = "ANYCABLE_BROADCAST_KEY",
        hide = true,
        hide_env_values = true
    )]
    pub go_broadcast_key: Option<Redacted<String>>,

    /// `ANYCABLE_HTTP_BROADCAST_SECRET`: anycable-go's older name of the broadcast key.
    #[arg(
        long = "http_broadcast_secret",
        env = "ANYCABLE_HTTP_BROADCAST_SECRET",
        hide = true,
        hide_env_values = true
    )]
    pub go_http_broadcast_secret: Option<Redacted<String>>,

    /// `ANYCABLE_REDIS_CHANNEL`: [`Config::anycable_redis_channel`].
    #[arg(long = "redis_channel", env = "ANYCABLE_REDIS_CHANNEL", hide = true)]
    pub go_redis_channel: Option<String>,

    /// `ANYCABLE_REDIS_URL`: [`Config::redis_url`] (anycable-go reads `REDIS_URL` too, as
    /// Hearth does).
    #[arg(
        long = "redis_url",
        env = "ANYCABLE_REDIS_URL",
        hide = true,
        hide_env_values = true
    )]
    pub go_redis_url: Option<Redacted<String>>,

    /// `ANYCABLE_TURBO_STREAMS_SECRET`: Turbo's signed stream verifier key as the Rails app
    /// sets it (`Turbo.signed_stream_verifier_key`), a plain string; Hearth's
    /// [`Config::turbo_verifier_key`] is its hex.
    #[arg(
        long = "turbo_streams_secret",
        env = "ANYCABLE_TURBO_STREAMS_SECRET",
        hide = true,
        hide_env_values = true
    )]
    pub go_turbo_streams_secret: Option<Redacted<String>>,

    /// `ANYCABLE_BROADCAST_ADAPTER`: anycable-go's broadcast adapters, comma-separated; one
    /// that reads Redis (`redis`, `redisx`) turns on [`Config::pubsub`] `redis` (Hearth then
    /// reads AnyCable's `__anycable__` channel too); `http` is always on.
    #[arg(
        long = "broadcast_adapter",
        env = "ANYCABLE_BROADCAST_ADAPTER",
        hide = true
    )]
    pub go_broadcast_adapter: Option<String>,

    /// `ANYCABLE_HOST`: the host of [`Config::bind`] (anycable-go's default port, 8080, when
    /// `ANYCABLE_PORT` is not given).
    #[arg(long = "host", env = "ANYCABLE_HOST", hide = true)]
    pub go_host: Option<String>,

    /// `ANYCABLE_PORT`: the port of [`Config::bind`] (Hearth's default host, 127.0.0.1, when
    /// `ANYCABLE_HOST` is not given).
    #[arg(long = "port", env = "ANYCABLE_PORT", hide = true)]
    pub go_port: Option<u16>,
}

/// Hearth's default of `--bind`, which `ANYCABLE_HOST` and `ANYCABLE_PORT` replace.
const DEFAULT_BIND: &str = "127.0.0.1:3000";

/// Hearth's default of `--rpc-headers`, which `ANYCABLE_HEADERS` replaces.
const DEFAULT_HEADERS: &str = "cookie";
/// Hearth's default of `--redis-url`, which `ANYCABLE_REDIS_URL` replaces.
const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379";

impl AnyCableNames {
    /// Fills `config`'s settings still unset (or at their default) from the aliases given.
    ///
    /// # Errors
    /// `ANYCABLE_RPC_HOST` is not an `http://` or `https://` URL (anycable-go's gRPC).
    pub fn apply(config: &mut Config) -> anyhow::Result<()> {
        let names = config.anycable.clone();
        let given = |value: Option<&Redacted<String>>| value.is_some_and(|v| !v.is_empty());
        if let Some(host) = names.go_rpc_host.filter(|h| !h.is_empty()) {
            if !(host.starts_with("http://") || host.starts_with("https://")) {
                anyhow::bail!(
                    "ANYCABLE_RPC_HOST {host:?} is a gRPC address; Hearth speaks AnyCable's \
                     HTTP RPC only: give the app's URL (http://host:port/_anycable)"
                );
            }
            config.rpc_url.get_or_insert(host);
        }
        if !given(config.rpc_secret.as_ref()) && given(names.go_http_rpc_secret.as_ref()) {
            config.rpc_secret = names.go_http_rpc_secret;
        }
        if !given(config.broadcast_key.as_ref()) {
            if given(names.go_broadcast_key.as_ref()) {
                config.broadcast_key = names.go_broadcast_key;
            } else if given(names.go_http_broadcast_secret.as_ref()) {
                config.broadcast_key = names.go_http_broadcast_secret;
            }
        }
        if config.rpc_headers == [DEFAULT_HEADERS] {
            if let Some(headers) = names.go_headers.filter(|h| !h.is_empty()) {
                config.rpc_headers = headers;
            }
        }
        if config.rpc_concurrency == crate::rpc::DEFAULT_CONCURRENCY {
            if let Some(n) = names.go_rpc_concurrency {
                config.rpc_concurrency = n;
            }
        }
        if config.anycable_redis_channel.is_none() {
            config.anycable_redis_channel = names.go_redis_channel;
        }
        if config.redis_url.as_str() == DEFAULT_REDIS_URL && given(names.go_redis_url.as_ref()) {
            config.redis_url = names.go_redis_url.unwrap_or_default();
        }
        let redis_adapter = names
            .go_broadcast_adapter
            .as_deref()
            .is_some_and(|a| a.split(',').any(|a| a.trim().starts_with("redis")));
        if redis_adapter && config.pubsub == super::PubSubKind::Inprocess {
            config.pubsub = super::PubSubKind::Redis;
        }
        if config.bind.to_string() == DEFAULT_BIND
            && (names.go_host.is_some() || names.go_port.is_some())
        {
            let host = names.go_host.as_deref().unwrap_or("127.0.0.1");
            let port = names.go_port.unwrap_or(8080);
            let host = if host == "localhost" {
                "127.0.0.1"
            } else {
                host
            };
            config.bind = format!("{host}:{port}")
                .parse()
                .or_else(|_| format!("[{host}]:{port}").parse())
                .map_err(|_| anyhow::anyhow!("ANYCABLE_HOST {host:?} is not an IP address"))?;
        }
        if !given(config.turbo_verifier_key.as_ref()) {
            let turbo = [names.go_turbo_streams_secret, names.go_secret]
                .into_iter()
                .flatten()
                .find(|key| !key.is_empty());
            config.turbo_verifier_key = turbo.map(|key| Redacted(hex::encode(key.as_bytes())));
        }
        Ok(())
    }

    /// The secret the RPC and broadcast keys derive from when they are not given:
    /// `ANYCABLE_SECRET`, if given (None: secret_key_base).
    pub fn key_base(&self) -> Option<&str> {
        self.go_secret
            .as_deref()
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Config {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            config: Config,
        }
        let mut config = Wrap::try_parse_from(args).expect("parses").config;
        AnyCableNames::apply(&mut config).expect("applies");
        config
    }

    #[test]
    fn anycable_names_fill_what_hearth_names_leave_unset() {
        let config = parse(&[
            "hearth",
            "--rpc_host",
            "http://app:3000/_anycable",
            "--http_rpc_secret",
            "rpc-k",
            "--headers",
            "cookie,x-api-token",
            "--rpc_concurrency",
            "7",
            "--http_broadcast_secret",
            "b-k",
            "--redis_channel",
            "__anycable__",
            "--turbo_streams_secret",
            "t",
            "--secret",
            "s",
        ]);
        assert_eq!(config.rpc_url.as_deref(), Some("http://app:3000/_anycable"));
        assert_eq!(
            config.rpc_secret.as_deref().map(String::as_str),
            Some("rpc-k")
        );
        assert_eq!(config.rpc_headers, ["cookie", "x-api-token"]);
        assert_eq!(config.rpc_concurrency, 7);
        assert_eq!(
            config.broadcast_key.as_deref().map(String::as_str),
            Some("b-k")
        );
        assert_eq!(
            config.anycable_redis_channel.as_deref(),
            Some("__anycable__")
        );
        assert_eq!(
            config.turbo_verifier_key.as_deref().map(String::as_str),
            Some("74")
        );
        assert_eq!(config.anycable.key_base(), Some("s"));
    }

    #[test]
    fn the_redis_broadcast_adapter_host_and_port_are_read_too() {
        let config = parse(&[
            "hearth",
            "--broadcast_adapter",
            "http,redisx",
            "--host",
            "0.0.0.0",
            "--port",
            "8081",
        ]);
        assert_eq!(config.pubsub, super::super::PubSubKind::Redis);
        assert_eq!(config.bind.to_string(), "0.0.0.0:8081");
        let config = parse(&["hearth", "--broadcast_adapter", "http", "--port", "9000"]);
        assert_eq!(config.pubsub, super::super::PubSubKind::Inprocess);
        assert_eq!(config.bind.to_string(), "127.0.0.1:9000");
        let config = parse(&["hearth", "--host", "localhost"]);
        assert_eq!(config.bind.to_string(), "127.0.0.1:8080");
        let config = parse(&["hearth", "--bind", "127.0.0.1:4000", "--port", "9000"]);
        assert_eq!(
            config.bind.to_string(),
            "127.0.0.1:4000",
            "Hearth's name wins"
        );
    }

    #[test]
    fn hearth_names_win_and_a_grpc_host_is_refused() {
        let config = parse(&[
            "hearth",
            "--rpc-url",
            "http://mine/_anycable",
            "--rpc_host",
            "http://theirs/_anycable",
            "--rpc-concurrency",
            "3",
            "--rpc_concurrency",
            "9",
            "--secret",
            "s",
        ]);
        assert_eq!(config.rpc_url.as_deref(), Some("http://mine/_anycable"));
        assert_eq!(config.rpc_concurrency, 3);
        // The common secret is Turbo's key when no other is given, as anycable-go's.
        assert_eq!(
            config.turbo_verifier_key.as_deref().map(String::as_str),
            Some("73")
        );
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            config: Config,
        }
        let mut grpc = Wrap::parse_from(["hearth", "--rpc_host", "localhost:50051"]).config;
        let refused = AnyCableNames::apply(&mut grpc).unwrap_err().to_string();
        assert!(refused.contains("HTTP RPC"), "{refused}");
    }
}
