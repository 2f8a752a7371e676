//! What stands in front of rmcp's streamable HTTP service (which checks `Host` and `Origin`
//! and caps request bodies): a draining node's refusal, the bearer token compared in
//! constant time, the cap on old-style sessions (counted by the `initialize` requests that
//! open them: a session-free request of the 2026-07-28 revision never counts and is never
//! refused by it), each session's owner, a hang-up's cancellation, and a session's close
//! answered `204` as the official clients expect.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::common::server_side_http::SessionId;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::http::MAX_REQUEST_BODY_BYTES;
use super::life::{Life, Working};
use crate::error::{Error, Result};
use crate::sync::lock;

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
    pub(super) fn matches(&self, candidate: &[u8]) -> Option<crate::ops::Scope> {
        let digest: [u8; 32] = Sha256::digest(candidate).into();
        let mut found = None;
        for known in &self.0 {
            if bool::from(known.ct_eq(&digest)) {
                found = Some(crate::ops::Scope::of_token_digest(known));
            }
        }
        found
    }

    /// The scope of the bearer token `req` carries, if it is one of these.
    pub(super) fn of_request(&self, req: &Request) -> Option<crate::ops::Scope> {
        req.headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| bearer(v.as_bytes()))
            .and_then(|t| self.matches(t))
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<hidden>)")
    }
}

/// The state the checks share.
#[derive(Clone)]
pub(super) struct Guard {
    pub(super) token: Option<Token>,
    pub(super) sessions: Arc<LocalSessionManager>,
    pub(super) max_sessions: usize,
    /// With a token: which token's scope opened each session. A session is used, read and
    /// closed only with the token that opened it; another valid token is told it does not
    /// exist, as rmcp tells an unknown one.
    pub(super) owners: Arc<std::sync::Mutex<std::collections::HashMap<String, crate::ops::Scope>>>,
    pub(super) life: Arc<Life>,
}

fn session_of(req: &Request) -> Option<String> {
    req.headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Draining, token, session owner and cap; everything else is rmcp's (Host, Origin, body
/// size, the protocol's headers).
pub(super) async fn check_request(
    State(guard): State<Guard>,
    mut req: Request,
    next: Next,
) -> Response {
    if guard.life.draining() {
        return draining();
    }
    let scope = match &guard.token {
        None => None,
        Some(token) => match token.of_request(&req) {
            Some(scope) => Some(scope),
            None => return refuse(StatusCode::UNAUTHORIZED, "a valid bearer token is required"),
        },
    };
    if let Some(scope) = &scope {
        // Readers are named within the token's scope: one client never meets another's.
        req.extensions_mut().insert(ReaderScope(scope.clone()));
    }
    let session = session_of(&req);
    if let (Some(scope), Some(session)) = (&scope, &session)
        && lock(&guard.owners).get(session) != Some(scope)
    {
        return refuse(StatusCode::NOT_FOUND, "session not found");
    }
    // A POST's body is read whole, within its bound, before the request counts as work in
    // flight: a body trickled in a byte at a time neither holds the connection past the
    // bound nor holds a drain open.
    if req.method() == Method::POST {
        let (parts, body) = req.into_parts();
        let read = tokio::time::timeout(
            BODY_TIMEOUT,
            axum::body::to_bytes(body, MAX_REQUEST_BODY_BYTES),
        )
        .await;
        let bytes = match read {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(_)) => return too_large(),
            Err(_) => return body_too_slow(),
        };
        let Some(working) = guard.life.admit() else {
            return draining();
        };
        let post = Post {
            parts,
            bytes,
            next,
            working,
        };
        return match session {
            Some(session) => run_in_session(guard.sessions, session.into(), post).await,
            None => open_or_session_free(&guard, scope, post).await,
        };
    }
    let Some(working) = guard.life.admit() else {
        return draining();
    };
    match (req.method().clone(), session) {
        (Method::DELETE, Some(_)) => {
            drop(working);
            let mut r = next.run(req).await;
            // rmcp answers a session's close `202`; the official clients accept 200 or 204
            // (the Python SDK logs "Session termination failed: 202").
            if r.status() == StatusCode::ACCEPTED {
                *r.status_mut() = StatusCode::NO_CONTENT;
                *r.body_mut() = Body::empty();
            }
            r
        }
        _ => {
            // A GET is a session's standing stream: open for as long as the session, it is
            // not work a drain waits for.
            drop(working);
            next.run(req).await
        }
    }
}

/// A POST whose body has been read, admitted as work in flight.
struct Post {
    parts: axum::http::request::Parts,
    bytes: axum::body::Bytes,
    next: Next,
    working: Working,
}

impl Post {
    /// The body as JSON, when it is.
    fn message(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.bytes).ok()
    }

    /// The request handed on with its body; its answer, and its place among the work in
    /// flight (for [`tracked`]).
    async fn forward(self) -> (Response, Working) {
        let response = self
            .next
            .run(Request::from_parts(self.parts, Body::from(self.bytes)))
            .await;
        (response, self.working)
    }
}

/// A POST without a session: an `initialize` (which opens an old-style session, within
/// `--max-sessions`), or a session-free request of the 2026-07-28 revision, which no cap of
/// sessions ever refuses.
async fn open_or_session_free(
    guard: &Guard,
    scope: Option<crate::ops::Scope>,
    post: Post,
) -> Response {
    let opens_session = post.message().is_some_and(|v| v["method"] == "initialize");
    if opens_session && guard.sessions.sessions.read().await.len() >= guard.max_sessions {
        crate::metrics::http_refused("sessions");
        return too_many_sessions();
    }
    let (response, working) = post.forward().await;
    if let (true, Some(scope)) = (opens_session, scope)
        && let Some(id) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
    {
        let live = guard.sessions.sessions.read().await;
        let mut owners = lock(&guard.owners);
        owners.retain(|k, _| live.contains_key(k.as_str()));
        owners.insert(id.to_owned(), scope);
    }
    tracked(response, None, working)
}

/// `503` with `Retry-After` for a session past the cap.
fn too_many_sessions() -> Response {
    with_headers(
        refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many open sessions; close one or try again later",
        ),
        &[(header::RETRY_AFTER, "5")],
    )
}

/// `r` with `headers` set.
fn with_headers(mut r: Response, headers: &[(header::HeaderName, &'static str)]) -> Response {
    for (name, value) in headers {
        r.headers_mut()
            .insert(name.clone(), HeaderValue::from_static(value));
    }
    r
}

/// `503` for a request that came after the node began to drain: nothing of it was done, so a
/// balancer may send it to another node (HAProxy: `retry-on 503`, `option redispatch`).
fn draining() -> Response {
    crate::metrics::http_refused("draining");
    with_headers(
        refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "this server is shutting down; send the request to another",
        ),
        &[(header::RETRY_AFTER, "1"), (header::CONNECTION, "close")],
    )
}

/// How long a request's body may take to arrive once its head has.
pub(super) const BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

fn body_too_slow() -> Response {
    crate::metrics::http_refused("slow_body");
    with_headers(
        refuse(
            StatusCode::REQUEST_TIMEOUT,
            "the request body did not arrive within 30 s",
        ),
        &[(header::CONNECTION, "close")],
    )
}

fn too_large() -> Response {
    refuse(
        StatusCode::PAYLOAD_TOO_LARGE,
        "the request body is too large",
    )
}

/// Runs a request of an old-style session; when it is a call whose answer stream the client
/// drops before it ends (a hang-up), the call is cancelled as if the client had sent
/// `notifications/cancelled`, so its host permits are freed at once (rmcp keeps a session's
/// calls running for a reconnect that an agent never makes).
async fn run_in_session(
    sessions: Arc<LocalSessionManager>,
    session: SessionId,
    post: Post,
) -> Response {
    let call_id = post
        .message()
        .filter(|v| v["method"] == "tools/call")
        .and_then(|v| v.get("id").cloned());
    let (response, working) = post.forward().await;
    let Some(id) = call_id else {
        return tracked(response, None, working);
    };
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
    tracked(response, Some(Box::new(on_hang_up)), working)
}

/// `response` with its body watched: the request counts as work in flight until the body
/// ends or is dropped, and `on_hang_up` runs when it is dropped before its end.
fn tracked(
    response: Response,
    on_hang_up: Option<Box<dyn FnOnce() + Send>>,
    working: Working,
) -> Response {
    let (parts, body) = response.into_parts();
    let stream = Watched {
        inner: body.into_data_stream(),
        on_hang_up,
        working: Some(working),
    };
    Response::from_parts(parts, Body::from_stream(stream))
}

/// A response body that holds its request's place among the work in flight until it ends,
/// and runs `on_hang_up` when it is dropped before its end.
struct Watched {
    inner: axum::body::BodyDataStream,
    on_hang_up: Option<Box<dyn FnOnce() + Send>>,
    working: Option<Working>,
}

impl futures::Stream for Watched {
    type Item = std::result::Result<axum::body::Bytes, axum::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let next = self.inner.poll_next_unpin(cx);
        if let std::task::Poll::Ready(None) = next {
            self.on_hang_up = None;
            self.working = None;
        }
        next
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some(f) = self.on_hang_up.take() {
            f();
        }
    }
}

/// The token of an `Authorization: Bearer TOKEN` header (the scheme in any case).
pub(super) fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(7)?;
    scheme
        .eq_ignore_ascii_case(b"bearer ")
        .then(|| rest.trim_ascii())
}

/// A short JSON answer `{"error": message}` with `status`.
pub(super) fn refuse(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "error": message }).to_string();
    let mut r = (status, Body::from(body)).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if status == StatusCode::UNAUTHORIZED {
        crate::metrics::http_refused("token");
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
}
