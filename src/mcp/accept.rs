//! The HTTP server's connections: accepted one by one and served by hyper (HTTP/1.1, and
//! HTTP/2 with prior knowledge) with a bound on how long a request's head may take to
//! arrive, then closed gracefully when the server stops.
//!
//! `axum::serve` sets no timer, so a client that opened a connection and sent its request
//! head a byte at a time (or nothing at all) held that connection, and a file descriptor,
//! for as long as it liked: a few hundred such clients are enough to leave no descriptor
//! for the agents the server is for. Here every HTTP/1 request head (the first on a
//! connection and each one after, so an idle keep-alive connection too) must arrive within
//! [`HEAD_TIMEOUT`]; past it hyper closes the connection. The first bytes of a connection,
//! which decide between HTTP/1 and HTTP/2, must arrive within it too. A response being
//! streamed (an SSE stream, a listen) is not a head being read and is not cut.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::serve::Listener;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;
use tokio::time::Sleep;

/// How long a request's head may take to arrive, from when the connection is ready for it
/// (accepted, or done with the request before).
pub(super) const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// The bytes that tell HTTP/2's preface from an HTTP/1 request line.
const PREFACE_LEN: usize = 24;

/// Serves `app` on `listener` until `shutdown` resolves; then stops accepting, asks every
/// connection to close once its request in flight is answered, and returns when all have.
pub(super) async fn serve<L>(mut listener: L, app: Router, shutdown: impl Future)
where
    L: Listener<Addr = SocketAddr>,
{
    serve_with(&mut listener, app, shutdown, HEAD_TIMEOUT).await;
}

async fn serve_with<L>(listener: &mut L, app: Router, shutdown: impl Future, head: Duration)
where
    L: Listener<Addr = SocketAddr>,
{
    // Connections watch `stop` to begin closing, and hold `open` while they live.
    let (stop_tx, stop_rx) = watch::channel(false);
    let (open_tx, open_rx) = watch::channel(());
    let mut shutdown = pin!(shutdown);
    loop {
        let (io, remote) = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut shutdown => break,
        };
        tracing::trace!(%remote, "connection accepted");
        let service = TowerToHyperService::new(app.clone());
        let mut stop = stop_rx.clone();
        let open = open_rx.clone();
        tokio::spawn(async move {
            let mut builder = auto::Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(head);
            let io = TokioIo::new(FirstBytesBy::new(io, head));
            let mut conn = pin!(builder.serve_connection(io, service));
            let mut closing = false;
            loop {
                tokio::select! {
                    served = conn.as_mut() => {
                        if let Err(e) = served {
                            tracing::debug!(%remote, "connection ended: {e}");
                        }
                        break;
                    }
                    changed = stop.changed(), if !closing => {
                        closing = true;
                        if changed.is_ok() {
                            conn.as_mut().graceful_shutdown();
                        }
                    }
                }
            }
            drop(open);
        });
    }
    drop(stop_rx);
    let _ = stop_tx.send(true);
    drop(open_rx);
    // Every connection task holds a receiver: this resolves when the last one has ended.
    open_tx.closed().await;
}

/// A connection whose first [`PREFACE_LEN`] bytes must arrive by a deadline (hyper reads
/// them to tell HTTP/2 from HTTP/1, with no bound of its own); a read still waiting for them
/// past it fails with `TimedOut`. Every read after them passes through.
struct FirstBytesBy<T> {
    io: T,
    deadline: Option<Pin<Box<Sleep>>>,
    seen: usize,
}

impl<T> FirstBytesBy<T> {
    fn new(io: T, within: Duration) -> FirstBytesBy<T> {
        FirstBytesBy {
            io,
            deadline: Some(Box::pin(tokio::time::sleep(within))),
            seen: 0,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for FirstBytesBy<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(r) => {
                this.seen += buf.filled().len() - before;
                if this.seen >= PREFACE_LEN {
                    this.deadline = None;
                }
                Poll::Ready(r)
            }
            Poll::Pending => {
                let passed = this
                    .deadline
                    .as_mut()
                    .is_some_and(|d| d.as_mut().poll(cx).is_ready());
                if passed {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the connection's first bytes did not arrive in time",
                    )));
                }
                Poll::Pending
            }
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for FirstBytesBy<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn start(head: Duration) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
        let mut listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new().route("/", get(|| async { "hi" }));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            serve_with(&mut listener, app, rx, head).await;
        });
        (addr, tx)
    }

    /// Reads until the peer closes (or 5 s pass: then the connection was not closed).
    async fn read_to_close(s: &mut tokio::net::TcpStream) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out))
            .await
            .ok()?
            .ok()?;
        Some(out)
    }

    #[tokio::test]
    async fn a_head_sent_too_slowly_loses_its_connection_and_a_prompt_one_is_answered() {
        let (addr, _stop) = start(Duration::from_millis(300)).await;
        // Half a request line, then nothing: closed once the bound passes.
        let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
        slow.write_all(b"GET / HTTP/1.1\r\nHo").await.unwrap();
        let got = read_to_close(&mut slow).await;
        assert!(
            got.is_some(),
            "a stalled head must cost the client its connection"
        );
        // Nothing at all: closed too.
        let mut silent = tokio::net::TcpStream::connect(addr).await.unwrap();
        assert!(read_to_close(&mut silent).await.is_some());
        // A whole request is answered.
        let mut ok = tokio::net::TcpStream::connect(addr).await.unwrap();
        ok.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let answer = read_to_close(&mut ok).await.expect("answered and closed");
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("hi"), "{answer}");
    }

    #[tokio::test]
    async fn http2_with_prior_knowledge_is_served_and_a_stalled_preface_loses_its_connection() {
        let (addr, _stop) = start(Duration::from_millis(300)).await;
        let h2 = reqwest::Client::builder()
            .http2_prior_knowledge()
            .build()
            .unwrap();
        let r = h2.get(format!("http://{addr}/")).send().await.unwrap();
        assert_eq!(r.version(), reqwest::Version::HTTP_2);
        assert_eq!(r.text().await.unwrap(), "hi");
        // Half of HTTP/2's preface, then nothing: hyper waits for the rest to choose a
        // protocol, and the deadline on the first bytes ends that wait.
        let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
        slow.write_all(b"PRI * HTTP/2.0\r\n").await.unwrap();
        assert!(read_to_close(&mut slow).await.is_some());
    }

    #[tokio::test]
    async fn stopping_closes_idle_connections_and_returns() {
        let mut listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new().route("/", get(|| async { "hi" }));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            serve_with(&mut listener, app, rx, Duration::from_secs(60)).await;
        });
        let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
        idle.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut first = [0u8; 12];
        idle.read_exact(&mut first).await.unwrap();
        assert_eq!(&first, b"HTTP/1.1 200");
        tx.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(5), server)
            .await
            .expect("the server returns once its idle connection is closed")
            .unwrap();
        assert!(read_to_close(&mut idle).await.is_some());
    }
}
