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
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let hit = &srv.hits()[0];
        if hit.client_hung_up {
            assert!(
                hit.bytes_sent < 64 * 1024 * 1024,
                "sent {} bytes",
                hit.bytes_sent
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the server never saw the connection dropped"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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
    assert!(
        ua.starts_with(&format!("rss/{} (+https://", env!("CARGO_PKG_VERSION"))),
        "{ua}"
    );

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
