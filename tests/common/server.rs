//! A loopback HTTP/1.1 test origin that records every request it sees: when it arrived,
//! when its response finished, how many bytes went out, and how many requests were in
//! flight at once. Replies are programmable per request; every connection is closed after
//! its response. Used by the integration tests and the benchmarks. [`TestServer::start_tls`]
//! serves https with a certificate of the test CA (`tests/fixtures/tls/ca.pem`, which the
//! binary trusts through `SSL_CERT_FILE`).

#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// What the origin saw of one request.
#[derive(Debug, Clone)]
pub struct Hit {
    pub path: String,
    pub headers: HashMap<String, String>,
    pub arrived: Instant,
    pub finished: Option<Instant>,
    pub status: u16,
    pub bytes_sent: u64,
    pub client_hung_up: bool,
}

/// A request as the handler sees it.
#[derive(Debug, Clone)]
pub struct Request {
    pub path: String,
    pub headers: HashMap<String, String>,
    /// 1 for the first request to this path, 2 for the second, ...
    pub nth: usize,
    /// 1 for the first request to the server, ...
    pub nth_overall: usize,
    pub arrived: Instant,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

/// How to answer.
#[derive(Debug, Clone)]
pub enum Reply {
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        delay: Duration,
    },
    /// Read the request and never answer (for at most a minute).
    Stall,
    /// Send a 200 with no length and an endless body, until the client hangs up or
    /// `max_bytes` have gone out.
    Endless { max_bytes: u64 },
}

impl Reply {
    pub fn ok(body: impl Into<Vec<u8>>, content_type: &str) -> Reply {
        Reply::Full {
            status: 200,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    pub fn xml(body: impl Into<Vec<u8>>) -> Reply {
        Reply::ok(body, "application/rss+xml")
    }

    pub fn status(status: u16) -> Reply {
        Reply::Full {
            status,
            headers: vec![],
            body: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Full { headers, .. } = &mut self {
            headers.push((name.into(), value.into()));
        }
        self
    }

    pub fn delay(mut self, d: Duration) -> Reply {
        if let Reply::Full { delay, .. } = &mut self {
            *delay = d;
        }
        self
    }
}

type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

struct Shared {
    handler: Box<Handler>,
    hits: Mutex<Vec<Hit>>,
    per_path: Mutex<HashMap<String, usize>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

/// A running origin; stops when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
    /// Serves https (with the test CA's certificate for `127.0.0.1` and `localhost`).
    tls: bool,
}

/// The test CA's certificate (PEM), for `SSL_CERT_FILE`.
pub fn test_ca_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls/ca.pem")
}

/// The TLS settings of an https origin: the test CA's leaf for `127.0.0.1` and `localhost`.
fn tls_acceptor() -> tokio_rustls::TlsAcceptor {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
    let certs = CertificateDer::pem_file_iter(dir.join("server.pem"))
        .expect("the test certificate")
        .collect::<Result<Vec<_>, _>>()
        .expect("the test certificate");
    let key = PrivateKeyDer::from_pem_file(dir.join("server.key")).expect("the test key");
    let provider = Arc::new(tokio_rustls::rustls::crypto::aws_lc_rs::default_provider());
    let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("the test certificate and key");
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    /// Starts an origin on 127.0.0.1 with an OS-chosen port.
    pub async fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> TestServer {
        TestServer::spawn(Box::new(handler), None).await
    }

    /// Starts an https origin on 127.0.0.1 with an OS-chosen port, its certificate the test
    /// CA's ([`test_ca_path`]).
    pub async fn start_tls(
        handler: impl Fn(&Request) -> Reply + Send + Sync + 'static,
    ) -> TestServer {
        TestServer::spawn(Box::new(handler), Some(tls_acceptor())).await
    }

    async fn spawn(handler: Box<Handler>, tls: Option<tokio_rustls::TlsAcceptor>) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared {
            handler,
            hits: Mutex::new(Vec::new()),
            per_path: Mutex::new(HashMap::new()),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
        });
        let s = shared.clone();
        let is_tls = tls.is_some();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let s = s.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    match tls {
                        None => {
                            let _ = serve(stream, s).await;
                        }
                        Some(acceptor) => {
                            let handshake = tokio::time::timeout(
                                Duration::from_secs(10),
                                acceptor.accept(stream),
                            );
                            if let Ok(Ok(stream)) = handshake.await {
                                let _ = serve(stream, s).await;
                            }
                        }
                    }
                });
            }
        });
        TestServer {
            addr,
            shared,
            task,
            tls: is_tls,
        }
    }

    /// Serves fixed bodies by path; anything else is a 404.
    pub async fn with_routes(routes: Vec<(&str, Reply)>) -> TestServer {
        let routes: HashMap<String, Reply> =
            routes.into_iter().map(|(p, r)| (p.to_owned(), r)).collect();
        TestServer::start(move |req| {
            routes
                .get(&req.path)
                .cloned()
                .unwrap_or_else(|| Reply::status(404))
        })
        .await
    }

    pub fn url(&self, path: &str) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}{}", self.addr, path)
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.shared.hits.lock().unwrap().clone()
    }

    pub fn hits_for(&self, path: &str) -> Vec<Hit> {
        self.hits().into_iter().filter(|h| h.path == path).collect()
    }

    pub fn count(&self) -> usize {
        self.shared.hits.lock().unwrap().len()
    }

    pub fn max_in_flight(&self) -> usize {
        self.shared.max_in_flight.load(Ordering::SeqCst)
    }
}

async fn read_head(
    stream: &mut (impl AsyncRead + Unpin),
) -> Option<(String, HashMap<String, String>)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        if buf.len() > 64 * 1024 {
            return None;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&buf);
    let mut lines = text.split("\r\n");
    let request_line = lines.next()?;
    let path = request_line.split_whitespace().nth(1)?.to_owned();
    let mut headers = HashMap::new();
    for line in lines {
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    Some((path, headers))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn finish(s: &Shared, index: usize) {
    s.in_flight.fetch_sub(1, Ordering::SeqCst);
    s.hits.lock().unwrap()[index].finished = Some(Instant::now());
}

async fn serve(
    mut stream: impl AsyncRead + AsyncWrite + Unpin,
    s: Arc<Shared>,
) -> std::io::Result<()> {
    let Some((path, headers)) = read_head(&mut stream).await else {
        return Ok(());
    };
    let arrived = Instant::now();
    let in_flight = s.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    s.max_in_flight.fetch_max(in_flight, Ordering::SeqCst);
    let (index, req) = {
        let mut hits = s.hits.lock().unwrap();
        let mut per = s.per_path.lock().unwrap();
        let nth = per.entry(path.clone()).or_insert(0);
        *nth += 1;
        hits.push(Hit {
            path: path.clone(),
            headers: headers.clone(),
            arrived,
            finished: None,
            status: 0,
            bytes_sent: 0,
            client_hung_up: false,
        });
        let req = Request {
            path,
            headers,
            nth: *nth,
            nth_overall: hits.len(),
            arrived,
        };
        (hits.len() - 1, req)
    };
    let reply = (s.handler)(&req);
    let mut sent = 0u64;
    let mut hung_up = false;
    let status;
    match reply {
        Reply::Full {
            status: st,
            headers,
            body,
            delay,
        } => {
            status = st;
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            // The request stops being in flight before a byte of the answer goes out, so a
            // client that waits for the answer can never be counted as overlapping.
            finish(&s, index);
            let mut head = format!("HTTP/1.1 {st} {}\r\n", reason(st));
            for (k, v) in &headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str(&format!(
                "Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            ));
            let r = async {
                stream.write_all(head.as_bytes()).await?;
                stream.write_all(&body).await?;
                stream.flush().await
            }
            .await;
            match r {
                Ok(()) => sent = (head.len() + body.len()) as u64,
                Err(_) => hung_up = true,
            }
        }
        Reply::Stall => {
            finish(&s, index);
            status = 0;
            let mut sink = [0u8; 64];
            let _ = tokio::time::timeout(Duration::from_secs(60), stream.read(&mut sink)).await;
            hung_up = true;
        }
        Reply::Endless { max_bytes } => {
            finish(&s, index);
            status = 200;
            let head =
                "HTTP/1.1 200 OK\r\nContent-Type: application/rss+xml\r\nConnection: close\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_ok() {
                let chunk = vec![b'x'; 64 * 1024];
                let _ = stream.write_all(b"<rss><channel><title>").await;
                while sent < max_bytes {
                    match stream.write_all(&chunk).await {
                        Ok(()) => sent += chunk.len() as u64,
                        Err(_) => {
                            hung_up = true;
                            break;
                        }
                    }
                }
            }
        }
    }
    let _ = stream.shutdown().await;
    let mut hits = s.hits.lock().unwrap();
    let h = &mut hits[index];
    h.status = status;
    h.bytes_sent = sent;
    h.client_hung_up = hung_up;
    Ok(())
}
