//! `rss mcp --http ADDR`: the same tools over MCP streamable HTTP at `/mcp`, for many agents
//! at once. Every request shares the process's one client, gate and cache; every node of a
//! store (files on one machine, the fleet's Redis) signs cursors with the store's key, so a
//! session-free request (MCP 2026-07-28) may go to any node.
//!
//! Beside `/mcp`: `/healthz` and `/readyz` with no token (`super::life`), `/metrics` behind
//! the token (or on a listener of its own, `--metrics ADDR`, with none). In front of rmcp's
//! service: `super::guard`. On the shutdown signal the node drains (`super::life`): unready
//! at once, new requests refused with `503`, the requests in flight answered within the
//! drain bound, then it stops.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::Server;
pub use super::guard::Token;
use super::guard::{Guard, check_request, refuse};
use super::life::{Health, Life, healthz, readyz};
use crate::error::{Error, Result};
use crate::ops::{Context, KeySource, Service};

/// Largest request body accepted; larger ones get `413`.
pub const MAX_REQUEST_BODY_BYTES: usize = 4 << 20;
/// Default cap on live old-style sessions.
pub const DEFAULT_MAX_SESSIONS: usize = 64;
/// How long connections still open when the drain ends (a session's standing stream) are
/// given to close before the server lets them go.
const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// How long a server starting waits for its store to give it the cursor key.
const KEY_WAIT: Duration = Duration::from_secs(10);

/// How the HTTP server listens and whom it lets in.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen (port 0: any free port, printed on stderr).
    pub addr: SocketAddr,
    /// The bearer token every request to `/mcp` must carry, if any.
    pub token: Option<Token>,
    /// Listening on a non-loopback address was asked for explicitly.
    pub allow_remote: bool,
    /// Further names (`name` or `name:port`) clients may use in `Host` and `Origin`.
    pub allowed_hosts: Vec<String>,
    /// Cap on live old-style sessions (a session-free request is never counted).
    pub max_sessions: usize,
    /// Idle time after which a session is closed.
    pub session_idle: Duration,
    /// The longest a drain waits for the requests in flight before it cuts them.
    pub drain: Duration,
    /// A listener of its own for `/metrics`, with no token (`--metrics ADDR`).
    pub metrics: Option<SocketAddr>,
    /// How the line naming the address is printed on stderr.
    pub announce: Announce,
}

/// How the server names its address on stderr when it listens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Announce {
    /// Not at all (`-q` with a port given: a supervisor knows it).
    Quiet,
    /// `rss: serving MCP on http://ADDR/mcp`.
    Text,
    /// One JSON object, as `--log-format json` writes every line.
    Json,
}

impl HttpOptions {
    /// Refuses a non-loopback address (for `/mcp`, or for `--metrics`) unless
    /// `--allow-remote` and a token are both given.
    pub fn check(&self) -> Result<()> {
        if let Some(m) = self.metrics
            && !m.ip().is_loopback()
            && !self.allow_remote
        {
            return Err(Error::usage(format!(
                "--metrics {m} is not a loopback address: pass --allow-remote to serve metrics to other machines"
            )));
        }
        if self.addr.ip().is_loopback() {
            return Ok(());
        }
        match (self.allow_remote, &self.token) {
            (true, Some(_)) => Ok(()),
            (false, _) => Err(Error::usage(format!(
                "{} is not a loopback address: pass --allow-remote (with a token) to serve other machines",
                self.addr
            ))),
            (true, None) => Err(Error::usage(format!(
                "serving {} to other machines needs a token: set RSS_MCP_TOKEN or --token-file",
                self.addr
            ))),
        }
    }

    /// The `Host` values accepted for the bound address `local`: its IP with and without
    /// the port, `localhost` on loopback, and every `--allowed-host`.
    fn hosts(&self, local: SocketAddr) -> Vec<String> {
        let ip = host_of(local.ip());
        let mut hosts = vec![format!("{ip}:{}", local.port()), ip];
        if local.ip().is_loopback() {
            hosts.push(format!("localhost:{}", local.port()));
            hosts.push("localhost".to_owned());
        }
        hosts.extend(self.allowed_hosts.iter().cloned());
        hosts
    }

    /// The browser origins accepted: the bound address itself (and `localhost` on
    /// loopback) at its port, and each `--allowed-host` over http and https.
    fn origins(&self, local: SocketAddr) -> Vec<String> {
        let ip = host_of(local.ip());
        let mut origins = vec![format!("http://{ip}:{}", local.port())];
        if local.ip().is_loopback() {
            origins.push(format!("http://localhost:{}", local.port()));
        }
        for h in &self.allowed_hosts {
            if h.contains(':') && !h.ends_with(']') {
                origins.push(format!("http://{h}"));
                origins.push(format!("https://{h}"));
            } else {
                origins.push(format!("http://{h}:80"));
                origins.push(format!("https://{h}:443"));
            }
        }
        origins
    }
}

/// The server's cursor key from its store. A node of a fleet (Redis) must sign with the
/// fleet's key or not serve: it waits up to [`KEY_WAIT`] for a store that does not answer
/// yet. On one machine a state directory that cannot be written leaves the key the
/// process's own, with a warning (its cursors end with it).
async fn take_cursor_key(ctx: &mut Context, service: &Service) -> Result<()> {
    let started = tokio::time::Instant::now();
    loop {
        match service.cursor_key().await {
            Ok((key, source)) => {
                if source == KeySource::Process {
                    tracing::info!(
                        "no state directory or shared store: page cursors are this process's own"
                    );
                }
                ctx.cursor_key = key;
                return Ok(());
            }
            Err(e) if !service.is_remote() => {
                tracing::warn!("page cursors are this process's own: {e}");
                return Ok(());
            }
            Err(e) if started.elapsed() >= KEY_WAIT => return Err(e),
            Err(e) => {
                tracing::warn!("waiting for the store to give the cursor key: {e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// A listener on `addr` whose connections send each write at once (`TCP_NODELAY`): an
/// answer goes out in several small writes, and with Nagle's algorithm each after the first
/// waited for the client's delayed ACK, 40 ms a call.
async fn bind(
    addr: SocketAddr,
) -> Result<(impl axum::serve::Listener<Addr = SocketAddr>, SocketAddr)> {
    use axum::serve::ListenerExt;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Listen { addr, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| Error::Listen { addr, source })?;
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {e}");
        }
    });
    Ok((listener, local))
}

/// What `/metrics` reads: the token it asks for (none on its own listener), and what is
/// sampled at the scrape.
#[derive(Clone)]
struct Observe {
    token: Option<Token>,
    sessions: Arc<LocalSessionManager>,
    server: Server,
}

async fn metrics(State(o): State<Observe>, req: Request) -> Response {
    if let Some(token) = &o.token
        && token.of_request(&req).is_none()
    {
        return refuse(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
    }
    let text = crate::metrics::render(crate::metrics::Sampled {
        hosts_warm: o.server.ctx.client.gate().warm_hosts(),
        sessions: o.sessions.sessions.read().await.len(),
    });
    let mut r = text.into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
    );
    r
}

/// Serves until `shutdown` resolves, then drains: unready at once, new requests refused
/// with `503`, the requests in flight answered (within `opts.drain`; past it they are cut,
/// which frees their hosts), every session closed, and it returns.
pub async fn serve(
    mut ctx: Context,
    opts: HttpOptions,
    shutdown: impl Future + Send + 'static,
) -> Result<()> {
    opts.check()?;
    let service = Arc::new(Service::open(&ctx.config)?);
    take_cursor_key(&mut ctx, &service).await?;
    let (listener, local) = bind(opts.addr).await?;
    let metrics_listener = match opts.metrics {
        Some(addr) => Some(bind(addr).await?),
        None => None,
    };
    let stop = CancellationToken::new();
    let mut sessions = LocalSessionManager::default();
    sessions.session_config = {
        let mut c = SessionConfig::default();
        c.keep_alive = Some(opts.session_idle);
        c
    };
    let sessions = Arc::new(sessions);
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(opts.hosts(local))
        .with_allowed_origins(opts.origins(local))
        .enforce_origin_validation()
        .with_max_request_body_bytes(MAX_REQUEST_BODY_BYTES)
        .with_cancellation_token(stop.child_token());
    let server = Server::new(ctx);
    let mcp = {
        let server = server.clone();
        StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), config)
    };
    let life = Arc::new(Life::default());
    let guard = Guard {
        token: opts.token.clone(),
        sessions: sessions.clone(),
        max_sessions: opts.max_sessions,
        owners: Arc::default(),
        life: life.clone(),
    };
    let observe = |token: Option<Token>| Observe {
        token,
        sessions: sessions.clone(),
        server: server.clone(),
    };
    let health = Health {
        life: life.clone(),
        service,
    };
    let app = Router::new()
        .nest_service("/mcp", mcp)
        .layer(middleware::from_fn_with_state(guard, check_request))
        .route(
            "/metrics",
            get(metrics).with_state(observe(opts.token.clone())),
        )
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz).with_state(health));
    // The one line a supervisor (or a test on port 0) reads to find the server.
    let announce = format!("serving MCP on http://{local}/mcp");
    match opts.announce {
        Announce::Quiet => {}
        Announce::Text => eprintln!("rss: {announce}"),
        Announce::Json => eprintln!(
            "{}",
            serde_json::json!({
                "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
                "level": "INFO",
                "fields": { "message": announce, "addr": local.to_string() },
            })
        ),
    }
    let closing = CancellationToken::new();
    let metrics_server = metrics_listener.map(|(l, at)| {
        tracing::info!("serving metrics on http://{at}/metrics");
        let app = Router::new().route("/metrics", get(metrics).with_state(observe(None)));
        let closing = closing.clone();
        tokio::spawn(super::accept::serve(l, app, closing.cancelled_owned()))
    });
    let drained = {
        let (life, stop, closing) = (life.clone(), stop.clone(), closing.clone());
        let watching = server.clone();
        let bound = opts.drain;
        async move {
            shutdown.await;
            life.drain();
            tracing::info!(
                in_flight = life.in_flight(),
                "draining on a signal: unready, refusing new requests, waiting up to {} s for the requests in flight",
                bound.as_secs()
            );
            // Listens end with their own result at once (they would hold the drain open).
            watching.shut_watches().await;
            if !life.settled(bound).await {
                tracing::warn!(
                    in_flight = life.in_flight(),
                    "the drain bound passed: cutting the requests still in flight"
                );
            }
            // Sessions end (their standing streams with them), and the listeners close.
            stop.cancel();
            closing.cancel();
        }
    };
    let serving = super::accept::serve(listener, app, drained);
    let closed = async {
        closing.cancelled().await;
        tokio::time::sleep(CLOSE_GRACE).await;
    };
    tokio::select! {
        () = serving => {}
        _ = closed => tracing::warn!("connections still open after the drain; closing them"),
    }
    if let Some(m) = metrics_server {
        m.abort();
    }
    Ok(())
}

/// `ip` as the host part of an authority (IPv6 in brackets).
fn host_of(ip: IpAddr) -> String {
    match ip {
        IpAddr::V6(v6) => format!("[{v6}]"),
        v4 => v4.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(addr: &str) -> HttpOptions {
        HttpOptions {
            addr: addr.parse().unwrap(),
            token: None,
            allow_remote: false,
            allowed_hosts: vec![],
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle: Duration::from_secs(600),
            drain: Duration::from_secs(60),
            metrics: None,
            announce: Announce::Text,
        }
    }

    #[test]
    fn a_remote_address_needs_allow_remote_and_a_token() {
        assert!(opts("127.0.0.1:0").check().is_ok());
        assert!(opts("[::1]:0").check().is_ok());
        let mut o = opts("0.0.0.0:8765");
        assert_eq!(o.check().unwrap_err().code().as_str(), "USAGE_ERROR");
        o.allow_remote = true;
        assert_eq!(o.check().unwrap_err().code().as_str(), "USAGE_ERROR");
        o.token = Some(Token::new("s3cret").unwrap());
        assert!(o.check().is_ok());
        let mut m = opts("127.0.0.1:0");
        m.metrics = Some("0.0.0.0:9100".parse().unwrap());
        assert_eq!(m.check().unwrap_err().code().as_str(), "USAGE_ERROR");
        m.allow_remote = true;
        assert!(m.check().is_ok());
    }

    #[test]
    fn hosts_and_origins_name_the_bound_address() {
        let mut o = opts("127.0.0.1:0");
        o.allowed_hosts = vec!["rss.internal".into()];
        let local: SocketAddr = "127.0.0.1:8765".parse().unwrap();
        let hosts = o.hosts(local);
        assert!(hosts.contains(&"127.0.0.1:8765".to_owned()));
        assert!(hosts.contains(&"localhost".to_owned()));
        assert!(hosts.contains(&"rss.internal".to_owned()));
        let origins = o.origins(local);
        assert!(origins.contains(&"http://127.0.0.1:8765".to_owned()));
        assert!(origins.contains(&"https://rss.internal:443".to_owned()));
        assert!(!origins.iter().any(|x| x.contains('*')));
    }
}
