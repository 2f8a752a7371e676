//! `rss mcp --http ADDR`: the same tools over MCP streamable HTTP at `/mcp`, for many agents
//! at once. Every session shares the process's one client, gate and cache.
//!
//! In front of rmcp's streamable HTTP service (which checks `Host` and `Origin` and caps
//! request bodies): a bearer-token check compared in constant time, a cap on live
//! sessions, and `/healthz`, which needs no token and says nothing but "ok".

use crate::sync::lock;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::StreamExt;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::common::server_side_http::SessionId;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio_util::sync::CancellationToken;

use super::Server;
use crate::error::{Error, Result};
use crate::ops::Context;

/// Largest request body accepted; larger ones get `413`.
pub const MAX_REQUEST_BODY_BYTES: usize = 4 << 20;
/// Default cap on live sessions.
pub const DEFAULT_MAX_SESSIONS: usize = 64;
/// How long a shutdown waits for open connections before it lets them go.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

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
    /// Cap on live sessions.
    pub max_sessions: usize,
    /// Idle time after which a session is closed.
    pub session_idle: Duration,
}

/// The secret bearer tokens a server accepts (one per client, each client's readers its
/// own): kept as their digests, never printed.
#[derive(Clone)]
pub struct Token(Vec<[u8; 32]>);

/// The readers' scope of the bearer token a request carried (`crate::ops::Scope`), put in
/// the request's extensions for the tools.
#[derive(Debug, Clone)]
pub(crate) struct ReaderScope(pub(crate) crate::ops::Scope);

impl Token {
    /// The token `secret` (surrounding whitespace, such as a file's final newline, is not
    /// part of it). Empty is a usage error.
    pub fn new(secret: &str) -> Result<Token> {
        let secret = secret.trim();
        if secret.is_empty() {
            return Err(Error::usage("the MCP token is empty"));
        }
        Ok(Token(vec![Sha256::digest(secret.as_bytes()).into()]))
    }

    /// The tokens of a `--token-file`: one a line, blank lines and `#` comments skipped;
    /// none is a usage error.
    pub fn from_lines(text: &str) -> Result<Token> {
        let digests: Vec<[u8; 32]> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| Sha256::digest(l.as_bytes()).into())
            .collect();
        if digests.is_empty() {
            return Err(Error::usage("the token file holds no token"));
        }
        Ok(Token(digests))
    }

    /// The readers' scope of the token `candidate` is, if it is one, in time independent
    /// of which it is and where they differ (every token is compared, as fixed-size
    /// digests).
    fn matches(&self, candidate: &[u8]) -> Option<crate::ops::Scope> {
        let digest: [u8; 32] = Sha256::digest(candidate).into();
        let mut found = None;
        for known in &self.0 {
            if bool::from(known.ct_eq(&digest)) {
                found = Some(crate::ops::Scope::of_token_digest(known));
            }
        }
        found
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<hidden>)")
    }
}

impl HttpOptions {
    /// Refuses a non-loopback address unless `--allow-remote` and a token are both given.
    pub fn check(&self) -> Result<()> {
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

/// `ip` as the host part of an authority (IPv6 in brackets).
fn host_of(ip: IpAddr) -> String {
    match ip {
        IpAddr::V6(v6) => format!("[{v6}]"),
        v4 => v4.to_string(),
    }
}

#[derive(Clone)]
struct Guard {
    token: Option<Token>,
    sessions: Arc<LocalSessionManager>,
    max_sessions: usize,
    /// With a token: which token's scope opened each session. A session is used, read and
    /// closed only with the token that opened it; another valid token is told it does not
    /// exist, as rmcp tells an unknown one.
    owners: Arc<std::sync::Mutex<std::collections::HashMap<String, crate::ops::Scope>>>,
}

/// Serves until `shutdown` resolves, then stops accepting, cancels every session (and so
/// every call in flight, which frees its host permits) and returns within a few seconds.
pub async fn serve(
    ctx: Context,
    opts: HttpOptions,
    shutdown: impl Future + Send + 'static,
) -> Result<()> {
    opts.check()?;
    let listener = tokio::net::TcpListener::bind(opts.addr)
        .await
        .map_err(|source| Error::Listen {
            addr: opts.addr,
            source,
        })?;
    let local = listener.local_addr().map_err(|source| Error::Listen {
        addr: opts.addr,
        source,
    })?;
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
    let watching = server.clone();
    let mcp = StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), config);
    let guard = Guard {
        token: opts.token.clone(),
        sessions,
        max_sessions: opts.max_sessions,
        owners: Arc::default(),
    };
    let app = Router::new()
        .nest_service("/mcp", mcp)
        .layer(middleware::from_fn_with_state(guard, check_request))
        .route("/healthz", get(|| async { "ok\n" }));
    // The one line a supervisor (or a test on port 0) reads to find the server.
    eprintln!("rss: serving MCP on http://{local}/mcp");
    let (stopped_tx, stopped_rx) = tokio::sync::oneshot::channel::<()>();
    let graceful = {
        let stop = stop.clone();
        async move {
            shutdown.await;
            tracing::info!("shutting down on a signal");
            watching.shut_watches().await;
            stop.cancel();
            let _ = stopped_tx.send(());
        }
    };
    let serving = axum::serve(listener, app).with_graceful_shutdown(graceful);
    let deadline = async {
        if stopped_rx.await.is_ok() {
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        r = serving.into_future() => r.map_err(|source| Error::Listen { addr: local, source })?,
        _ = deadline => tracing::warn!("connections still open after the grace period; closing them"),
    }
    Ok(())
}

/// Token, then the session cap; everything else is rmcp's (Host, Origin, body size).
async fn check_request(State(guard): State<Guard>, mut req: Request, next: Next) -> Response {
    if let Some(token) = &guard.token {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| bearer(v.as_bytes()));
        let Some(scope) = given.and_then(|t| token.matches(t)) else {
            return refuse(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
        };
        // Readers are named within the token's scope: one client never meets another's.
        req.extensions_mut().insert(ReaderScope(scope.clone()));
        match req
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            Some(session) => {
                let owned = lock(&guard.owners).get(session) == Some(&scope);
                if !owned {
                    return refuse(StatusCode::NOT_FOUND, "session not found");
                }
            }
            None if req.method() == Method::POST => {
                if guard.sessions.sessions.read().await.len() >= guard.max_sessions {
                    return too_many_sessions();
                }
                let response = next.run(req).await;
                if let Some(id) = response
                    .headers()
                    .get("mcp-session-id")
                    .and_then(|v| v.to_str().ok())
                {
                    let live = guard.sessions.sessions.read().await;
                    let mut owners = lock(&guard.owners);
                    owners.retain(|k, _| live.contains_key(k.as_str()));
                    owners.insert(id.to_owned(), scope);
                }
                return response;
            }
            None => {}
        }
    }
    let opens_session =
        req.method() == Method::POST && !req.headers().contains_key("mcp-session-id");
    if opens_session && guard.sessions.sessions.read().await.len() >= guard.max_sessions {
        return too_many_sessions();
    }
    match req
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
    {
        Some(session) if req.method() == Method::POST => {
            let session: SessionId = session.into();
            cancel_on_hang_up(guard.sessions, session, req, next).await
        }
        _ => next.run(req).await,
    }
}

/// `503` with `Retry-After` for a session past the cap.
fn too_many_sessions() -> Response {
    let mut r = refuse(
        StatusCode::SERVICE_UNAVAILABLE,
        "too many open sessions; close one or try again later",
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    r
}

/// Runs a request of a session; when it is a call whose answer stream the client drops
/// before it ends (a hang-up), the call is cancelled as if the client had sent
/// `notifications/cancelled`, so its host permits are freed at once (rmcp keeps a session's
/// calls running for a reconnect that an agent never makes).
async fn cancel_on_hang_up(
    sessions: Arc<LocalSessionManager>,
    session: SessionId,
    req: Request,
    next: Next,
) -> Response {
    let (parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_REQUEST_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => {
            return refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the request body is too large",
            );
        }
    };
    let call_id = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .filter(|v| v["method"] == "tools/call")
        .and_then(|v| v.get("id").cloned());
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    let Some(id) = call_id else {
        return response;
    };
    let (parts, body) = response.into_parts();
    let on_hang_up = move || {
        let cancel = serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": { "requestId": id, "reason": "the client hung up" },
        });
        let Ok(message) = serde_json::from_value::<ClientJsonRpcMessage>(cancel) else {
            return;
        };
        tokio::spawn(async move {
            tracing::debug!("a client hung up mid-call; cancelling it");
            let _ = sessions.accept_message(&session, message).await;
        });
    };
    let stream = HangUpGuard {
        inner: body.into_data_stream(),
        on_hang_up: Some(Box::new(on_hang_up)),
    };
    Response::from_parts(parts, Body::from_stream(stream))
}

/// A response body that runs `on_hang_up` when it is dropped before its end.
struct HangUpGuard {
    inner: axum::body::BodyDataStream,
    on_hang_up: Option<Box<dyn FnOnce() + Send>>,
}

impl futures::Stream for HangUpGuard {
    type Item = std::result::Result<axum::body::Bytes, axum::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let next = self.inner.poll_next_unpin(cx);
        if let std::task::Poll::Ready(None) = next {
            self.on_hang_up = None;
        }
        next
    }
}

impl Drop for HangUpGuard {
    fn drop(&mut self) {
        if let Some(f) = self.on_hang_up.take() {
            f();
        }
    }
}

/// The token of an `Authorization: Bearer TOKEN` header (the scheme in any case).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(7)?;
    scheme
        .eq_ignore_ascii_case(b"bearer ")
        .then(|| rest.trim_ascii())
}

fn refuse(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "error": message }).to_string();
    let mut r = (status, Body::from(body)).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if status == StatusCode::UNAUTHORIZED {
        h.insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"rss\""),
        );
    }
    r
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
    }

    #[test]
    fn tokens_match_exactly_and_never_print() {
        let t = Token::new("s3cret\n").unwrap();
        assert!(t.matches(b"s3cret").is_some());
        assert!(t.matches(b"s3cre").is_none());
        assert!(t.matches(b"s3cret2").is_none());
        assert!(t.matches(b"").is_none());
        assert!(!format!("{t:?}").contains("s3cret"));
        assert!(Token::new("  \n").is_err());
    }

    #[test]
    fn a_token_file_holds_one_token_a_line_each_its_own_scope() {
        let t = Token::from_lines("# agents\nalpha-token\n\n  beta-token  \n#gamma\n").unwrap();
        let (a, b) = (t.matches(b"alpha-token"), t.matches(b"beta-token"));
        assert!(a.is_some() && b.is_some() && a != b);
        assert!(t.matches(b"# agents").is_none());
        assert!(t.matches(b"gamma").is_none());
        assert_eq!(
            Token::new("alpha-token").unwrap().matches(b"alpha-token"),
            a
        );
        assert!(Token::from_lines("\n# nothing\n").is_err());
    }

    #[test]
    fn bearer_reads_the_scheme_in_any_case() {
        assert_eq!(bearer(b"Bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer(b"bearer  abc "), Some(&b"abc"[..]));
        assert_eq!(bearer(b"Basic abc"), None);
        assert_eq!(bearer(b"Bear"), None);
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
