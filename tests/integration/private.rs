//! Issue 30: private feeds and per-site settings from the owner's config file, credentials
//! that go only where they were meant and are never printed, and bot walls named.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::helpers::*;

const FEED: &str = "<rss><channel><title>Private</title><item><title>i</title><link>https://x.example/i</link></item></channel></rss>";
const SECRET: &str = "s3cr3t-PASSWORD-77";

fn basic(user: &str, password: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

/// A feed behind HTTP Basic (`me` / [`SECRET`]): `401` with a realm otherwise.
async fn private_origin() -> TestServer {
    let want = basic("me", SECRET);
    TestServer::start(move |req| {
        if req.header("authorization") == Some(want.as_str()) {
            Reply::xml(FEED)
        } else {
            Reply::status(401).header("WWW-Authenticate", "Basic realm=\"Private feeds\"")
        }
    })
    .await
}

/// A config file in a directory of its own.
struct ConfigDir {
    dir: tempfile::TempDir,
}

impl ConfigDir {
    fn new(text: &str) -> ConfigDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), text).unwrap();
        ConfigDir { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }
}

/// `rss --config FILE ARGS…` with `FEED_PASS` set to the secret, on `cache`.
fn rss_with(config: &Path, cache: &Path, args: &[&str]) -> std::process::Output {
    rss_std(cache)
        .arg("--config")
        .arg(config)
        .env("FEED_PASS", SECRET)
        .args(args)
        .output()
        .unwrap()
}

fn out_json(o: &std::process::Output) -> Value {
    json(&o.stdout)
}

fn stderr_json(o: &std::process::Output) -> Value {
    let text = String::from_utf8_lossy(&o.stderr);
    let line = text.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON on stderr: {text}"))
}

fn host_rule(s: &TestServer) -> String {
    format!(
        "[[site]]\nhost = \"127.0.0.1:{}\"\nauth.basic = {{ user = \"me\", password_env = \"FEED_PASS\" }}\n",
        s.addr.port()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_auth_from_a_variable_reaches_its_origin_and_no_secret_is_printed() {
    let origin = private_origin().await;
    let cfg = ConfigDir::new(&host_rule(&origin));
    let cache = tempfile::tempdir().unwrap();
    let url = origin.url("/feed.xml");
    let out = rss_with(&cfg.path(), cache.path(), &["-vv", "fetch", &url]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = out_json(&out);
    assert_eq!(doc["feeds"][0]["status"], "ok");
    assert_eq!(doc["feeds"][0]["title"], "Private");
    assert_eq!(origin.count(), 1);
    // Nothing that is printed anywhere holds the secret or its Basic encoding.
    let encoded = basic("me", SECRET);
    let encoded = encoded.trim_start_matches("Basic ");
    let hosts = rss_with(&cfg.path(), cache.path(), &["hosts"]);
    let list = rss_with(&cfg.path(), cache.path(), &["cache", "list"]);
    let check = rss_with(
        &cfg.path(),
        cache.path(),
        &["config", "check", "--url", &url],
    );
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    for o in [&out, &hosts, &list, &check] {
        for stream in [&o.stdout, &o.stderr] {
            let text = String::from_utf8_lossy(stream);
            assert!(!text.contains(SECRET) && !text.contains(encoded), "{text}");
        }
    }
    let check = out_json(&check);
    let schema = json(
        &rss_cmd()
            .args(["schema", "--command", "config-check"])
            .output()
            .unwrap()
            .stdout,
    );
    let v = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    assert!(
        v.is_valid(&check),
        "{:?}",
        v.iter_errors(&check)
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
    );
    assert_eq!(check["rules"][0]["auth"]["secret"], "***");
    assert_eq!(check["rules"][0]["auth"]["from"], "env FEED_PASS");
    assert_eq!(check["url"]["rule"], 1);
    // The body was fetched with credentials: it is this user's.
    let list = out_json(&list);
    assert_eq!(list["entries"][0]["private"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_rule_the_feed_is_auth_required_with_its_realm_after_one_request() {
    let origin = private_origin().await;
    let out = rss_cmd()
        .args(["fetch", &origin.url("/feed.xml")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let err = &out_json(&out)["errors"][0];
    assert_eq!(err["code"], "AUTH_REQUIRED", "{err}");
    assert_eq!(err["details"]["realm"], "Private feeds");
    assert_eq!(err["details"]["scheme"], "Basic");
    assert_eq!(err["details"]["http_status"], 401);
    assert!(
        err["details"]["hint"]
            .as_str()
            .unwrap()
            .contains("[[site]]")
    );
    // Not retried, and not a cooldown: the next run asks at once.
    assert_eq!(origin.count(), 1);
    let again = rss_cmd()
        .args(["--max-gate-wait", "0", "fetch", &origin.url("/feed.xml")])
        .output()
        .unwrap();
    assert_eq!(out_json(&again)["errors"][0]["code"], "AUTH_REQUIRED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_another_origin_carries_no_credentials_and_no_configured_header() {
    let other = TestServer::start(|_| Reply::xml(FEED)).await;
    let elsewhere = other.url("/moved.xml");
    let origin = TestServer::start(move |req| match req.path.as_str() {
        "/same" => Reply::status(302).header("Location", "/feed.xml"),
        "/away" => Reply::status(302).header("Location", &elsewhere),
        _ => Reply::xml(FEED),
    })
    .await;
    let cfg = ConfigDir::new(&format!(
        "[[site]]\nurl_prefix = \"{}\"\nauth.basic = {{ user = \"me\", password_env = \"FEED_PASS\" }}\nheaders = {{ X-Api-Key = {{ env = \"FEED_PASS\" }}, X-Plain = \"yes\" }}\n",
        origin.url("/")
    ));
    let cache = tempfile::tempdir().unwrap();
    let out = rss_with(
        &cfg.path(),
        cache.path(),
        &["fetch", &origin.url("/same"), &origin.url("/away")],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Within the rule's scope every hop has them ...
    for h in origin.hits() {
        assert_eq!(
            h.headers.get("authorization"),
            Some(&basic("me", SECRET)),
            "{}",
            h.path
        );
        assert_eq!(h.headers.get("x-api-key").map(String::as_str), Some(SECRET));
        assert_eq!(h.headers.get("x-plain").map(String::as_str), Some("yes"));
    }
    // ... and the hop that left it has none.
    let away = other.hits();
    assert_eq!(away.len(), 1);
    for name in ["authorization", "x-api-key", "x-plain"] {
        assert!(
            !away[0].headers.contains_key(name),
            "{name} went to {}",
            away[0].path
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sites_header_and_user_agent_reach_that_origin_only() {
    let ours = TestServer::start(|_| Reply::xml(FEED)).await;
    let theirs = TestServer::start(|_| Reply::xml(FEED)).await;
    let cfg = ConfigDir::new(&format!(
        "[defaults]\nuser_agent = \"owner/1.0 (+https://owner.example)\"\n[[site]]\nhost = \"127.0.0.1:{}\"\nuser_agent = \"special/2.0\"\nheaders = {{ Accept-Language = \"fr\" }}\n",
        ours.addr.port()
    ));
    let cache = tempfile::tempdir().unwrap();
    let out = rss_with(
        &cfg.path(),
        cache.path(),
        &["fetch", &ours.url("/a.xml"), &theirs.url("/b.xml")],
    );
    assert_eq!(out.status.code(), Some(0));
    let a = &ours.hits()[0].headers;
    assert_eq!(a.get("user-agent").map(String::as_str), Some("special/2.0"));
    assert_eq!(a.get("accept-language").map(String::as_str), Some("fr"));
    let b = &theirs.hits()[0].headers;
    assert_eq!(
        b.get("user-agent").map(String::as_str),
        Some("owner/1.0 (+https://owner.example)")
    );
    assert!(!b.contains_key("accept-language"));
    // A flag beats the file's default.
    let flagged = rss_with(
        &cfg.path(),
        cache.path(),
        &[
            "--user-agent",
            "flag/3",
            "fetch",
            "--no-cache",
            &theirs.url("/b.xml"),
        ],
    );
    assert_eq!(flagged.status.code(), Some(0));
    assert_eq!(
        theirs.hits()[1]
            .headers
            .get("user-agent")
            .map(String::as_str),
        Some("flag/3")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_with_credentials_works_and_is_echoed_with_its_password_masked() {
    let origin = private_origin().await;
    let url = format!("http://me:{SECRET}@{}/feed.xml", origin.addr);
    let shown = format!("http://me:***@{}/feed.xml", origin.addr);
    let cache = tempfile::tempdir().unwrap();
    let out = rss_std(cache.path())
        .args(["-vv", "fetch", &url])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = out_json(&out);
    assert_eq!(doc["feeds"][0]["feed_url"], shown.as_str());
    assert!(!doc["feeds"][0]["final_url"].as_str().unwrap().contains('@'));
    let list = rss_std(cache.path())
        .args(["cache", "list"])
        .output()
        .unwrap();
    let listed = out_json(&list);
    assert_eq!(listed["entries"][0]["feed_url"], shown.as_str());
    assert_eq!(listed["entries"][0]["private"], true);
    // A wrong password: the error names the URL masked too.
    let wrong = format!("http://me:WRONG-{SECRET}@{}/feed.xml", origin.addr);
    let bad = rss_std(cache.path())
        .args(["fetch", "--no-cache", &wrong])
        .output()
        .unwrap();
    let err = &out_json(&bad)["errors"][0];
    assert_eq!(err["code"], "AUTH_REQUIRED");
    assert_eq!(err["details"]["rule"], "the URL itself");
    let message = err["message"].as_str().unwrap();
    assert!(
        message.contains("the credentials of the URL itself were refused"),
        "{message}"
    );
    for o in [&out, &list, &bad] {
        for stream in [&o.stdout, &o.stderr] {
            assert!(!String::from_utf8_lossy(stream).contains(SECRET));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_config_names_its_line_for_every_command_that_reads_it() {
    let cfg = ConfigDir::new(
        "[defaults]\nconcurrency = 4\n\n[[site]]\nhost = \"a.example\"\nuser-agent = \"x\"\n",
    );
    let cache = tempfile::tempdir().unwrap();
    for args in [
        &["fetch", "https://a.example/feed"][..],
        &["config", "check"][..],
        &["hosts"][..],
    ] {
        let out = rss_with(&cfg.path(), cache.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty());
        let err = stderr_json(&out);
        assert_eq!(err["code"], "USAGE_ERROR");
        assert_eq!(err["details"]["line"], 6, "{err}");
        assert_eq!(err["details"]["column"], 1);
        assert!(
            err["message"].as_str().unwrap().contains("user-agent"),
            "{err}"
        );
    }
    // `rss config path` says where it looks, broken file or not; RSS_CONFIG names it too.
    let out = rss_std(cache.path())
        .env("RSS_CONFIG", cfg.path())
        .args(["config", "path"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        cfg.path().display().to_string()
    );
    let out = rss_std(cache.path())
        .env("RSS_CONFIG", cfg.path())
        .args(["fetch", "https://a.example/feed"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_wall_is_blocked_after_one_request_and_never_parsed() {
    const CHALLENGE: &str = "<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>Checking your browser</body></html>";
    let origin = TestServer::start(|req| match req.path.as_str() {
        "/cf" => Reply::ok(CHALLENGE, "text/html")
            .header("cf-mitigated", "challenge")
            .header("server", "cloudflare"),
        "/cf-200" => Reply::ok(FEED, "application/rss+xml").header("cf-mitigated", "challenge"),
        "/html-403" => Reply::Full {
            status: 403,
            headers: vec![("Content-Type".into(), "text/html".into())],
            body: CHALLENGE.into(),
            delay: Duration::ZERO,
        },
        "/html-429-retry" => Reply::Full {
            status: 429,
            headers: vec![
                ("Content-Type".into(), "text/html".into()),
                ("Retry-After".into(), "120".into()),
            ],
            body: CHALLENGE.into(),
            delay: Duration::ZERO,
        },
        _ => Reply::status(404),
    })
    .await;
    for (path, provider, status) in [
        ("/cf", Some("cloudflare"), 200),
        ("/cf-200", Some("cloudflare"), 200),
        ("/html-403", None, 403),
    ] {
        let out = rss_cmd()
            .args(["fetch", &origin.url(path)])
            .output()
            .unwrap();
        let doc = out_json(&out);
        let err = &doc["errors"][0];
        assert_eq!(err["code"], "BLOCKED", "{path}: {err}");
        assert_eq!(err["details"]["provider"], json!(provider), "{path}");
        assert_eq!(err["details"]["http_status"], status, "{path}");
        assert!(doc["feeds"][0]["items"].as_array().unwrap().is_empty());
        assert_eq!(origin.hits_for(path).len(), 1, "{path} was asked once");
    }
    // A 429 that says when to come back stays RATE_LIMITED.
    let out = rss_cmd()
        .args([
            "--max-gate-wait",
            "1",
            "fetch",
            &origin.url("/html-429-retry"),
        ])
        .output()
        .unwrap();
    assert_eq!(out_json(&out)["errors"][0]["code"], "RATE_LIMITED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn min_interval_spaces_two_fetches_of_its_host() {
    let origin = TestServer::start(|_| Reply::xml(FEED)).await;
    let cfg = ConfigDir::new(&format!(
        "[[site]]\nhost = \"127.0.0.1:{}\"\nmin_interval = 1\n",
        origin.addr.port()
    ));
    let cache = tempfile::tempdir().unwrap();
    let out = rss_with(
        &cfg.path(),
        cache.path(),
        &["fetch", &origin.url("/a.xml"), &origin.url("/b.xml")],
    );
    assert_eq!(out.status.code(), Some(0));
    let hits = origin.hits();
    assert_eq!(hits.len(), 2);
    // The second send starts a second after the first one's start; the first request's
    // own trip to the origin (well under 50 ms on loopback) is all the gap can lose.
    let gap = hits[1].arrived - hits[0].arrived;
    assert!(gap >= Duration::from_millis(950), "{gap:?}");
    // The hold is host state: the next process on the same cache directory keeps it too.
    let next = rss_with(
        &cfg.path(),
        cache.path(),
        &["fetch", "--no-cache", &origin.url("/c.xml")],
    );
    let again = rss_with(
        &cfg.path(),
        cache.path(),
        &["fetch", "--no-cache", &origin.url("/d.xml")],
    );
    assert_eq!(
        (next.status.code(), again.status.code()),
        (Some(0), Some(0))
    );
    let hits = origin.hits();
    let gap = hits[3].arrived - hits[2].arrived;
    assert!(
        gap >= Duration::from_millis(950),
        "across processes: {gap:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rules_host_concurrency_lets_that_host_take_more_at_once() {
    let origin = TestServer::start(|_| Reply::xml(FEED).delay(Duration::from_millis(300))).await;
    let cfg = ConfigDir::new(&format!(
        "[[site]]\nhost = \"127.0.0.1:{}\"\nhost_concurrency = 2\n",
        origin.addr.port()
    ));
    let cache = tempfile::tempdir().unwrap();
    let urls: Vec<String> = (0..4).map(|i| origin.url(&format!("/{i}.xml"))).collect();
    let mut args = vec!["fetch"];
    args.extend(urls.iter().map(String::as_str));
    let out = rss_with(&cfg.path(), cache.path(), &args);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(origin.max_in_flight(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rules_proxy_carries_its_requests() {
    let proxy = TestServer::start(|_| Reply::xml(FEED)).await;
    let cfg = ConfigDir::new(&format!(
        "[[site]]\nsite = \"feeds.invalid\"\nproxy = \"{}\"\n",
        proxy.url("")
    ));
    let cache = tempfile::tempdir().unwrap();
    let out = rss_with(
        &cfg.path(),
        cache.path(),
        &["fetch", "http://a.feeds.invalid/feed.xml"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(proxy.hits()[0].path, "http://a.feeds.invalid/feed.xml");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_response_is_kept_and_marked_and_no_store_is_not_kept() {
    let origin = TestServer::start(|req| match req.path.as_str() {
        "/private" => Reply::xml(FEED).header("Cache-Control", "private, max-age=600"),
        _ => Reply::xml(FEED).header("Cache-Control", "no-store"),
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        let out = rss_std(cache.path())
            .args(["fetch", &origin.url("/private"), &origin.url("/nostore")])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
    }
    // A private cache may keep and reuse a `private` response; `no-store` is asked again.
    assert_eq!(origin.hits_for("/private").len(), 1);
    assert_eq!(origin.hits_for("/nostore").len(), 2);
    let list = out_json(
        &rss_std(cache.path())
            .args(["cache", "list"])
            .output()
            .unwrap(),
    );
    let entries = list["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["private"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_server_reads_a_private_feed_through_the_owners_config_and_refuses_headers() {
    let origin = private_origin().await;
    let cfg = ConfigDir::new(&host_rule(&origin));
    let config = cfg.path().display().to_string();
    let s = crate::mcp::spawn_with(
        &[],
        &[("RSS_CONFIG", config.as_str()), ("FEED_PASS", SECRET)],
    )
    .await;
    let url = origin.url("/feed.xml");
    let r = crate::mcp::call(&s, "fetch_feed", json!({ "url": url })).await;
    let doc = crate::mcp::structured(&r);
    assert_eq!(doc["feeds"][0]["status"], "ok", "{doc}");
    assert!(!crate::mcp::text(&r).contains(SECRET));
    for refused in [
        json!({ "url": url, "headers": { "Authorization": "Bearer x" } }),
        json!({ "url": url, "proxy": "http://evil.example:3128" }),
        json!({ "url": url, "user_agent": "x" }),
    ] {
        let r = crate::mcp::call(&s, "fetch_feed", refused.clone()).await;
        let err = crate::mcp::error_object(&r);
        assert_eq!(err["code"], "USAGE_ERROR", "{refused}");
    }
    assert_eq!(origin.count(), 1, "a refused call sends nothing");
    s.client.cancel().await.unwrap();
}

#[test]
fn the_config_files_schema_is_published_for_editors() {
    let out = rss_cmd()
        .args(["schema", "--command", "config"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let schema = json(&out.stdout);
    let v = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    let good = json!({
        "defaults": { "user_agent": "a/1", "host_concurrency": 2, "max_freshness": "1h" },
        "site": [{ "host": "a.example", "auth": { "basic": { "user": "me", "password_env": "P" } },
                   "headers": { "X-Api-Key": { "env": "K" }, "Accept-Language": "en" }, "min_interval": 5 }]
    });
    assert!(
        v.is_valid(&good),
        "{:?}",
        v.iter_errors(&good)
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
    );
    for bad in [
        json!({ "colour": true }),
        json!({ "site": [{ "host": "a.example", "password": "x" }] }),
        json!({ "site": [{ "host": "a.example", "auth": { "basic": { "user": "me", "password": "x" } } }] }),
    ] {
        assert!(!v.is_valid(&bad), "{bad}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_whose_secret_cannot_be_read_sends_nothing_and_says_why() {
    let origin = private_origin().await;
    let cfg = ConfigDir::new(&format!(
        "[[site]]\nhost = \"127.0.0.1:{}\"\nauth.basic = {{ user = \"me\", password_env = \"NOT_SET_ANYWHERE\" }}\n",
        origin.addr.port()
    ));
    let cache = tempfile::tempdir().unwrap();
    let out = rss_with(
        &cfg.path(),
        cache.path(),
        &["fetch", &origin.url("/feed.xml")],
    );
    let err = &out_json(&out)["errors"][0];
    assert_eq!(err["code"], "USAGE_ERROR", "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("NOT_SET_ANYWHERE"),
        "{err}"
    );
    assert_eq!(origin.count(), 0);
    let check = rss_with(&cfg.path(), cache.path(), &["config", "check"]);
    assert_eq!(check.status.code(), Some(2));
    assert!(check.stdout.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_server_logging_at_debug_shows_no_url_password_in_logs_or_summaries() {
    use rmcp::ServiceExt;
    use rmcp::transport::TokioChildProcess;
    let origin = private_origin().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stderr.log");
    let mut cmd = rss_tokio();
    cmd.args(["mcp", "--cache-dir"])
        .arg(dir.path().join("cache"))
        .env("RSS_STATE_DIR", dir.path().join("state"))
        // rmcp logs every call's arguments at debug level.
        .env("RUST_LOG", "trace");
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.expect("the server initializes");
    let url = format!("http://me:{SECRET}@{}/feed.xml", origin.addr);
    let mut shown = String::new();
    for (tool, args) in [
        ("fetch_feed", json!({ "url": url })),
        ("discover_feeds", json!({ "site_url": url })),
    ] {
        let r = client
            .call_tool(
                rmcp::model::CallToolRequestParams::new(tool)
                    .with_arguments(args.as_object().unwrap().clone()),
            )
            .await
            .unwrap();
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains("me:***@"), "{tool}: {text}");
        shown.push_str(&text);
    }
    client.cancel().await.unwrap();
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(!logged.is_empty(), "trace logging wrote nothing");
    for (what, text) in [("results", &shown), ("the log", &logged)] {
        assert!(!text.contains(SECRET), "{what} hold the password");
    }
    assert_eq!(origin.count(), 2);
}

#[test]
fn a_fifo_as_the_config_file_or_a_secret_file_is_refused_at_once() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = make_fifo(dir.path(), "fifo");
    std::fs::set_permissions(&fifo, std::fs::Permissions::from_mode(0o600)).unwrap();
    let cfg = ConfigDir::new(&format!(
        "[[site]]\nhost = \"127.0.0.1:9\"\nheaders = {{ \"X-Api-Key\" = {{ file = \"{}\" }} }}\n",
        fifo.display()
    ));
    // Nothing ever writes to the FIFO: an open that waited for a writer never returned.
    for (config, args) in [
        (&fifo, &["config", "check"][..]),
        (&cfg.path(), &["config", "check"][..]),
        (&cfg.path(), &["fetch", "http://127.0.0.1:9/feed"][..]),
    ] {
        let (code, said) = said_within(
            rss_std(dir.path()).arg("--config").arg(config).args(args),
            Duration::from_secs(30),
        );
        assert_ne!(code, Some(0), "{args:?}: {said}");
        assert!(said.contains("not a regular file"), "{args:?}: {said}");
    }
}
