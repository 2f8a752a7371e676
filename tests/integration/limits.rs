//! Hostile servers: endless bodies, stalls, redirect loops.

use std::time::{Duration, Instant};

use crate::helpers::*;
use rss::config::Overrides;
use rss::model::FeedStatus;

fn limited(max_body_bytes: u64, timeout_secs: f64) -> rss::Config {
    let mut c = rss::Config::resolve(
        Overrides {
            max_body_bytes: Some(max_body_bytes),
            timeout_secs: Some(timeout_secs),
            ..Overrides::default()
        },
        |_| None,
    )
    .unwrap();
    c.cache_dir = None;
    c
}

#[tokio::test]
async fn a_body_over_the_cap_stops_reading_and_drops_the_connection() {
    let srv = TestServer::start(|_| Reply::Endless {
        max_bytes: 512 * 1024 * 1024,
    })
    .await;
    let ctx = context(limited(1024 * 1024, 30.0));
    let out = fetch(&ctx, &[srv.url("/endless")], &no_cache()).await;
    let err = out.feeds[0].error.as_ref().unwrap();
    assert_eq!(err.code, "RESPONSE_TOO_LARGE");
    assert_eq!(err.details["limit_bytes"], 1024 * 1024);
    // The server notices the hang-up long before its 512 MiB are out.
    wait_until("the server sees the connection dropped", || {
        srv.hits()[0].client_hung_up
    })
    .await;
    let sent = srv.hits()[0].bytes_sent;
    assert!(sent < 64 * 1024 * 1024, "sent {sent} bytes");
}

#[tokio::test]
async fn a_declared_length_over_the_cap_is_response_too_large() {
    let srv = TestServer::with_routes(vec![("/big", Reply::xml(vec![b' '; 300_000]))]).await;
    let ctx = context(limited(100_000, 30.0));
    let out = fetch(&ctx, &[srv.url("/big")], &no_cache()).await;
    assert_eq!(
        out.feeds[0].error.as_ref().unwrap().code,
        "RESPONSE_TOO_LARGE"
    );
}

#[tokio::test]
async fn a_stalled_server_is_a_timeout_within_the_timeout() {
    let srv = TestServer::start(|_| Reply::Stall).await;
    let ctx = context(limited(1 << 20, 1.0));
    let started = Instant::now();
    let out = fetch(&ctx, &[srv.url("/stall")], &no_cache()).await;
    let took = started.elapsed();
    let err = out.feeds[0].error.as_ref().unwrap();
    assert_eq!(err.code, "NETWORK_ERROR");
    assert_eq!(err.details["kind"], "timeout");
    assert!(
        took >= Duration::from_millis(900),
        "gave up early: {took:?}"
    );
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let f = fetch_one(&format!("http://127.0.0.1:{port}/feed")).await;
    let err = f.error.unwrap();
    assert_eq!(err.code, "NETWORK_ERROR");
    assert_eq!(err.details["kind"], "connect");
}

#[tokio::test]
async fn a_redirect_loop_is_a_clear_error() {
    let srv = TestServer::start(|req| {
        let to = if req.path == "/a" { "/b" } else { "/a" };
        Reply::status(302).header("Location", to)
    })
    .await;
    let f = fetch_one(&srv.url("/a")).await;
    let err = f.error.unwrap();
    assert_eq!(err.code, "NETWORK_ERROR");
    assert_eq!(err.details["kind"], "redirect");
    assert!(err.message.contains("redirect loop"), "{}", err.message);
    assert_eq!(srv.count(), 2, "each URL of the loop is asked once");
}

#[tokio::test]
async fn redirects_are_followed_and_relative_links_use_the_final_url() {
    let body = r#"<rss><channel><title>Moved</title><item><title>x</title><link>post</link></item></channel></rss>"#;
    let srv = TestServer::start(move |req| match req.path.as_str() {
        "/old" => Reply::status(301).header("Location", "/new/feed.xml"),
        "/new/feed.xml" => Reply::xml(body),
        _ => Reply::status(404),
    })
    .await;
    let f = fetch_one(&srv.url("/old")).await;
    assert_eq!(f.status, FeedStatus::Ok);
    assert_eq!(
        f.final_url.as_deref(),
        Some(srv.url("/new/feed.xml").as_str())
    );
    assert_eq!(
        f.items[0].url.as_deref(),
        Some(srv.url("/new/post").as_str())
    );
    assert_eq!(f.attempts, 2);
}

#[tokio::test]
async fn too_many_redirects_stop_at_ten() {
    let srv = TestServer::start(|req| {
        let n: u32 = req.path.trim_start_matches("/r").parse().unwrap_or(0);
        Reply::status(302).header("Location", &format!("/r{}", n + 1))
    })
    .await;
    let f = fetch_one(&srv.url("/r0")).await;
    let err = f.error.unwrap();
    assert_eq!(err.details["kind"], "redirect");
    assert_eq!(srv.count(), 11);
}

#[tokio::test]
async fn the_user_agent_names_the_tool_and_can_be_overridden() {
    let srv = fixture_server().await;
    let _ = fetch_one(&srv.url("/rss20.xml")).await;
    let ua = srv.hits()[0].headers["user-agent"].clone();
    assert_eq!(ua, format!("rss/{}", env!("CARGO_PKG_VERSION")));

    let mut c = config(None);
    c.user_agent = "custom-agent/1".into();
    let ctx = context(c);
    let _ = fetch(&ctx, &[srv.url("/rss093.xml")], &no_cache()).await;
    assert_eq!(
        srv.hits_for("/rss093.xml")[0].headers["user-agent"],
        "custom-agent/1"
    );
}

#[tokio::test]
async fn gzip_bodies_are_decoded() {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&fixture("rss20.xml")).unwrap();
    let gz = enc.finish().unwrap();
    let srv = TestServer::with_routes(vec![(
        "/gz",
        Reply::xml(gz).header("Content-Encoding", "gzip"),
    )])
    .await;
    let f = fetch_one(&srv.url("/gz")).await;
    assert_eq!(f.meta.title.as_deref(), Some("Example Engineering Blog"));
    assert!(srv.hits()[0].headers["accept-encoding"].contains("gzip"));
}

/// Runs the binary with `args` and `stdin`, returning its exit code, stdout and how long
/// it took; fails the test if it runs past `within`.
fn run_bounded(
    args: &[&str],
    stdin: std::process::Stdio,
    within: Duration,
) -> (Option<i32>, serde_json::Value, Vec<u8>, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let mut child = rss_std(dir.path())
        .args(args)
        .stdin(stdin)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    exit_within(&mut child, within);
    let out = child.wait_with_output().unwrap();
    let stdout = if out.stdout.is_empty() {
        serde_json::Value::Null
    } else {
        json(&out.stdout)
    };
    (out.status.code(), stdout, out.stderr, started.elapsed())
}

fn stderr_code(stderr: &[u8]) -> String {
    json(stderr)["code"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn endless_local_inputs_are_cut_at_the_body_cap() {
    let cap = ["--max-body-bytes", "1000000"];
    let null = std::process::Stdio::null;
    for args in [
        vec!["fetch", "--opml", "/dev/zero"],
        vec!["fetch", "--input", "/dev/zero"],
    ] {
        let mut a = args.clone();
        a.extend(cap);
        let (code, _, stderr, _) = run_bounded(&a, null(), Duration::from_secs(60));
        assert_eq!(code, Some(4), "{args:?}");
        assert_eq!(stderr_code(&stderr), "RESPONSE_TOO_LARGE", "{args:?}");
    }
    let zero = std::fs::File::open("/dev/zero").unwrap();
    let (code, _, stderr, _) = run_bounded(
        &["fetch", "-", "--max-body-bytes", "1000000"],
        zero.into(),
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(4));
    assert_eq!(stderr_code(&stderr), "RESPONSE_TOO_LARGE");
    // A feed file, show and discover read through the same cap.
    let (code, out, _, _) = run_bounded(
        &["fetch", "/dev/zero", "--max-body-bytes", "1000000"],
        null(),
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(4));
    assert_eq!(out["feeds"][0]["error"]["code"], "RESPONSE_TOO_LARGE");
    for args in [
        vec![
            "show",
            "/dev/zero",
            "--id",
            "x",
            "--max-body-bytes",
            "1000000",
        ],
        vec!["discover", "/dev/zero", "--max-body-bytes", "1000000"],
    ] {
        let (code, _, stderr, _) = run_bounded(&args, null(), Duration::from_secs(60));
        assert_eq!(code, Some(4), "{args:?}");
        assert_eq!(stderr_code(&stderr), "RESPONSE_TOO_LARGE", "{args:?}");
    }
}

#[test]
fn a_fifo_with_no_writer_is_given_up_after_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = make_fifo(dir.path(), "fifo");
    let fifo = fifo.to_str().unwrap();
    let (code, out, _, took) = run_bounded(
        &["fetch", fifo, "--timeout", "2"],
        std::process::Stdio::null(),
        Duration::from_secs(30),
    );
    assert_eq!(code, Some(4));
    let err = &out["feeds"][0]["error"];
    assert_eq!(err["code"], "IO_ERROR", "{err}");
    assert!(took >= Duration::from_secs(2));
    let (code, _, stderr, _) = run_bounded(
        &["fetch", "--input", fifo, "--timeout", "2"],
        std::process::Stdio::null(),
        Duration::from_secs(30),
    );
    assert_eq!(code, Some(4));
    assert_eq!(stderr_code(&stderr), "IO_ERROR");
}

#[test]
fn an_unreadable_input_list_is_an_io_error_not_a_usage_error() {
    let (code, _, stderr, _) = run_bounded(
        &["fetch", "--input", "/no/such/list.txt"],
        std::process::Stdio::null(),
        Duration::from_secs(30),
    );
    assert_eq!(code, Some(4));
    assert_eq!(stderr_code(&stderr), "IO_ERROR");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_bad_inputs_cost_what_their_output_costs() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("list.txt");
    let text: String = (0..100_000)
        .map(|i| format!("ftp://h{i}.example/feed\n"))
        .collect();
    std::fs::write(&list, text).unwrap();
    let out = rss_std(dir.path())
        .args(["fetch", "--input", list.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let doc = json(&out.stdout);
    assert_eq!(doc["feeds"].as_array().unwrap().len(), 100_000);
    assert_eq!(doc["errors"][99_999]["code"], "INVALID_URL");
}

/// A loopback server that answers every connection with `act` (raw bytes, no HTTP help).
async fn raw_server(act: fn(tokio::net::TcpStream) -> tokio::task::JoinHandle<()>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            act(stream);
        }
    });
    format!("http://{addr}/feed")
}

async fn read_head(stream: &mut tokio::net::TcpStream) {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn reply(bytes: &'static [u8]) -> fn(tokio::net::TcpStream) -> tokio::task::JoinHandle<()> {
    // One function per canned reply (a fn pointer cannot capture).
    macro_rules! canned {
        ($b:expr) => {{
            fn act(mut s: tokio::net::TcpStream) -> tokio::task::JoinHandle<()> {
                tokio::spawn(async move {
                    use tokio::io::AsyncWriteExt;
                    read_head(&mut s).await;
                    let _ = s.write_all($b).await;
                    let _ = s.shutdown().await;
                })
            }
            act
        }};
    }
    match bytes {
        b"garbage" => canned!(b"SSH-2.0-OpenSSH_9.6\r\nnot http at all\r\n\r\n"),
        b"bad-length" => canned!(b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nhello"),
        b"bad-header" => canned!(b"HTTP/1.1 200 OK\r\nContent Type here\r\n\r\nhello"),
        b"short-body" => canned!(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n<rss>"),
        _ => canned!(b""),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_that_do_not_speak_http_get_documented_kinds() {
    fn close_at_once(s: tokio::net::TcpStream) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move { drop(s) })
    }
    fn reset(mut s: tokio::net::TcpStream) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            read_head(&mut s).await;
            let _ = s.set_zero_linger();
            drop(s);
        })
    }
    // A plain-HTTP server as real ones are: whatever arrives, it answers 400 at once.
    fn plain_http(mut s: tokio::net::TcpStream) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut buf = [0u8; 512];
            let _ = s.read(&mut buf).await;
            let _ = s
                .write_all(
                    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await;
            let _ = s.shutdown().await;
        })
    }
    let plain = raw_server(plain_http).await;
    let refused = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        format!("http://127.0.0.1:{port}/feed")
    };
    let cases = vec![
        (raw_server(close_at_once).await, "protocol"),
        (raw_server(reset).await, "protocol"),
        (raw_server(reply(b"garbage")).await, "protocol"),
        (raw_server(reply(b"bad-length")).await, "protocol"),
        (raw_server(reply(b"bad-header")).await, "protocol"),
        (raw_server(reply(b"short-body")).await, "body"),
        (plain.replace("http://", "https://"), "tls"),
        (refused, "connect"),
    ];
    let ctx = context(limited(1 << 20, 5.0));
    for (url, kind) in cases {
        let out = fetch(&ctx, std::slice::from_ref(&url), &no_cache()).await;
        let err = out.feeds[0].error.as_ref().unwrap();
        assert_eq!(err.code, "NETWORK_ERROR", "{url}: {err:?}");
        assert_eq!(err.details["kind"], kind, "{url}: {}", err.message);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_private_network_guard_refuses_loopback_by_address_and_by_name() {
    let srv =
        TestServer::start(|_| Reply::xml("<rss><channel><title>t</title></channel></rss>")).await;
    let port = srv.addr.port();
    let by_ip = srv.url("/a");
    let by_name = format!("http://localhost:{port}/b");
    let by_v6 = format!("http://[::1]:{port}/c");
    let out = rss_cmd()
        .args([
            "fetch",
            "--no-cache",
            "--deny-private-networks",
            &by_ip,
            &by_name,
            &by_v6,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let doc = json(&out.stdout);
    for (i, what) in ["127.0.0.1", "localhost", "::1"].iter().enumerate() {
        let err = &doc["feeds"][i]["error"];
        assert_eq!(err["code"], "INVALID_URL", "{what}: {err}");
        let msg = err["message"].as_str().unwrap();
        assert!(
            msg.contains("loopback") && msg.contains("private networks are refused"),
            "{msg}"
        );
        assert_eq!(err["details"]["private_network"], true, "{err}");
    }
    let out = rss_cmd()
        .env("RSS_DENY_PRIVATE_NETWORKS", "1")
        .args(["fetch", "--no-cache", &by_ip])
        .output()
        .unwrap();
    assert_eq!(
        json(&out.stdout)["feeds"][0]["error"]["code"],
        "INVALID_URL"
    );
    // Nothing reached the server; without the guard the same fetch works.
    assert_eq!(srv.count(), 0);
    let out = rss_cmd()
        .args(["fetch", "--no-cache", &by_ip])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(srv.count(), 1);
}
