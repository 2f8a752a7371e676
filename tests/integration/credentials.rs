//! Issue 35: credentials go where they were meant on every request a call makes (feeds,
//! redirects, robots.txt, article pages), decided on the whole chain that led to the
//! request; a rule's port is the port written; what is kept about credentials is keyed by
//! the store's own secret; files are flushed before they are renamed into place. https
//! origins are loopback servers with a certificate of the test CA, which the binary trusts
//! through `SSL_CERT_FILE`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::server::{Hit, test_ca_path};
use crate::helpers::*;

const SECRET: &str = "tok-35-SECRET";
const KEY: &str = "key-35-SECRET";

const PAGE: &str = "<html><head><title>A story</title></head><body><article><h1>A story</h1>\
    <p>Every paragraph of this page says something about the story, at some length, so that \
    it reads as an article and not as a list of links.</p><p>A second paragraph goes on with \
    the story and ends it.</p></article></body></html>";

/// A config whose one rule matches `127.0.0.1` on any port: a bearer token, a secret
/// header and a plain one.
fn config(dir: &Path) -> PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(
        &path,
        "[[site]]\nhost = \"127.0.0.1\"\nauth = { bearer_env = \"TOK_35\" }\nheaders = { \"X-Api-Key\" = { env = \"KEY_35\" }, \"X-Plain\" = \"yes\" }\n",
    )
    .unwrap();
    path
}

/// The environment of every run: the rule's secrets, and the test CA trusted.
fn env() -> Vec<(&'static str, String)> {
    vec![
        ("TOK_35", SECRET.to_owned()),
        ("KEY_35", KEY.to_owned()),
        ("SSL_CERT_FILE", test_ca_path().display().to_string()),
    ]
}

fn rss_in(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = rss_std(&dir.join("cache"));
    cmd.arg("--config").arg(config(dir));
    for (k, v) in env() {
        cmd.env(k, v);
    }
    cmd.args(args).output().unwrap()
}

/// Whether a request carried any of the rule's secrets.
fn carried_secret(h: &Hit) -> bool {
    h.headers.contains_key("authorization")
        || h.headers.contains_key("x-api-key")
        || h.headers
            .values()
            .any(|v| v.contains(SECRET) || v.contains(KEY))
}

fn assert_nothing_secret(hits: &[Hit], what: &str) {
    assert!(!hits.is_empty(), "{what}: no request arrived");
    for h in hits {
        assert!(
            !carried_secret(h),
            "{what}: {} carried a secret: {:?}",
            h.path,
            h.headers
        );
        // What is not a secret still goes by the rule.
        assert_eq!(h.headers.get("x-plain").map(String::as_str), Some("yes"));
    }
}

fn assert_all_secret(hits: &[Hit], what: &str) {
    assert!(!hits.is_empty(), "{what}: no request arrived");
    for h in hits {
        assert_eq!(
            h.headers.get("authorization").map(String::as_str),
            Some(format!("Bearer {SECRET}").as_str()),
            "{what}: {}",
            h.path
        );
        assert_eq!(h.headers.get("x-api-key").map(String::as_str), Some(KEY));
    }
}

const ALLOW_ALL: &str = "User-agent: *\nAllow: /\n";

/// An http origin: a robots.txt that allows all, and pages that are never cached (so
/// every call reads them again).
async fn plain_pages() -> TestServer {
    TestServer::start(|req| match req.path.as_str() {
        "/robots.txt" => Reply::ok(ALLOW_ALL, "text/plain"),
        _ => Reply::ok(PAGE, "text/html").header("Cache-Control", "no-store"),
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_35_the_robots_txt_read_for_a_downgraded_hop_carries_no_secret() {
    let plain = plain_pages().await;
    let target = plain.url("/page");
    let secure = TestServer::start_tls(move |req| match req.path.as_str() {
        "/robots.txt" => Reply::ok(ALLOW_ALL, "text/plain"),
        _ => Reply::status(302).header("Location", &target),
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let out = rss_in(
        dir.path(),
        &["article", "--respect-robots", &secure.url("/page")],
    );
    let doc = json(&out.stdout);
    assert_eq!(doc["articles"][0]["status"], "ok", "{doc}");
    // Over https the rule's secrets go, robots.txt included ...
    assert_all_secret(&secure.hits(), "https");
    // ... and the http hop the redirect took carries none, nor its robots.txt.
    assert_eq!(plain.hits_for("/robots.txt").len(), 1);
    assert_nothing_secret(&plain.hits(), "the downgraded hop and its robots.txt");

    // The MCP server reads robots.txt on every fetch_article: a model's call, no flag.
    let plain_mcp = plain_pages().await;
    let target = plain_mcp.url("/page");
    let secure_mcp = TestServer::start_tls(move |req| match req.path.as_str() {
        "/robots.txt" => Reply::ok(ALLOW_ALL, "text/plain"),
        _ => Reply::status(302).header("Location", &target),
    })
    .await;
    let config = config(dir.path()).display().to_string();
    let mut vars: Vec<(&str, &str)> = vec![("RSS_CONFIG", config.as_str())];
    let env = env();
    vars.extend(env.iter().map(|(k, v)| (*k, v.as_str())));
    let s = crate::mcp::spawn_with(&[], &vars).await;
    let r = crate::mcp::call(
        &s,
        "fetch_article",
        json!({ "url": secure_mcp.url("/page") }),
    )
    .await;
    let doc = crate::mcp::structured(&r);
    assert_eq!(doc["articles"][0]["status"], "ok", "{doc}");
    s.client.cancel().await.unwrap();
    assert_all_secret(&secure_mcp.hits(), "https over MCP");
    assert_eq!(plain_mcp.hits_for("/robots.txt").len(), 1);
    assert_nothing_secret(
        &plain_mcp.hits(),
        "MCP: the downgraded hop and its robots.txt",
    );
}

/// An https feed whose items link to `pages`' http pages (of the same host name).
async fn secure_feed(pages: &TestServer) -> TestServer {
    let items: String = ["/a1", "/a2"]
        .iter()
        .map(|p| {
            format!(
                "<item><title>{p}</title><link>{}</link></item>",
                pages.url(p)
            )
        })
        .collect();
    let feed = format!("<rss><channel><title>Secure</title>{items}</channel></rss>");
    TestServer::start_tls(move |req| match req.path.as_str() {
        "/robots.txt" => Reply::ok(ALLOW_ALL, "text/plain"),
        _ => Reply::xml(feed.clone()),
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_35_articles_of_an_https_feed_send_no_secret_to_its_http_links() {
    // The CLI's --articles, with and without robots.txt.
    for robots in [false, true] {
        let plain = plain_pages().await;
        let secure = secure_feed(&plain).await;
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec!["fetch", "--articles"];
        if robots {
            args.push("--respect-robots");
        }
        let url = secure.url("/feed.xml");
        args.push(&url);
        let out = rss_in(dir.path(), &args);
        let doc = json(&out.stdout);
        let items = doc["feeds"][0]["items"].as_array().unwrap();
        assert_eq!(items.len(), 2, "{doc}");
        for item in items {
            assert_eq!(item["article"]["status"], "ok", "{item}");
        }
        assert_all_secret(&secure.hits(), "the https feed");
        let pages = || plain.hits_for("/a1").len() + plain.hits_for("/a2").len();
        assert_eq!(pages(), 2);
        assert_nothing_secret(&plain.hits(), "an https feed's http links");
        // Again with the feed from the cache: the chain it was read through is kept.
        let feed_reads = secure.hits_for("/feed.xml").len();
        let mut again = args.clone();
        again.splice(1..1, ["--max-age", "3600"]);
        let out = rss_in(dir.path(), &again);
        let doc = json(&out.stdout);
        assert_eq!(doc["feeds"][0]["from_cache"], true, "{doc}");
        assert_eq!(secure.hits_for("/feed.xml").len(), feed_reads);
        assert_eq!(pages(), 4);
        assert_nothing_secret(&plain.hits(), "the links of a cached https feed");
    }

    // MCP: fetch_feed with articles, and get_item with article (from the cached feed).
    let plain = plain_pages().await;
    let secure = secure_feed(&plain).await;
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path()).display().to_string();
    let mut vars: Vec<(&str, &str)> = vec![("RSS_CONFIG", config.as_str())];
    let env = env();
    vars.extend(env.iter().map(|(k, v)| (*k, v.as_str())));
    let s = crate::mcp::spawn_with(&[], &vars).await;
    let url = secure.url("/feed.xml");
    let r = crate::mcp::call(&s, "fetch_feed", json!({ "url": url, "articles": true })).await;
    let doc = crate::mcp::structured(&r);
    let items = doc["feeds"][0]["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{doc}");
    let a1 = plain.url("/a1");
    let r = crate::mcp::call(
        &s,
        "get_item",
        json!({ "feed_url": url, "id": a1, "article": true }),
    )
    .await;
    let got: Value = crate::mcp::structured(&r);
    assert_eq!(got["item"]["article"]["status"], "ok", "{got}");
    s.client.cancel().await.unwrap();
    assert_all_secret(&secure.hits(), "the https feed over MCP");
    assert_eq!(plain.hits_for("/a1").len() + plain.hits_for("/a2").len(), 3);
    assert_nothing_secret(&plain.hits(), "MCP: an https feed's http links");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_35_a_rule_for_port_80_is_for_port_80_only() {
    let origin = TestServer::start(|_| {
        Reply::xml("<rss><channel><title>T</title><item><title>i</title></item></channel></rss>")
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        "[[site]]\nhost = \"127.0.0.1:80\"\nauth = { bearer_env = \"TOK_35\" }\n[[site]]\nhost = \"127.0.0.1\"\nheaders = { \"X-Plain\" = \"yes\" }\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        rss_std(&dir.path().join("cache"))
            .arg("--config")
            .arg(&path)
            .env("TOK_35", SECRET)
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["fetch", &origin.url("/feed.xml")]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hits = origin.hits();
    assert_eq!(hits.len(), 1);
    assert!(
        !hits[0].headers.contains_key("authorization"),
        "port 80's token went to port {}",
        origin.addr.port()
    );
    assert_eq!(
        hits[0].headers.get("x-plain").map(String::as_str),
        Some("yes")
    );
    let check = run(&["config", "check", "--url", "http://127.0.0.1/feed"]);
    assert_eq!(check.status.code(), Some(0));
    let check = json(&check.stdout);
    let shown = check.to_string();
    assert!(shown.contains("127.0.0.1:80"), "{shown}");
    assert_eq!(check["url"]["rule"], 1, "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_35_a_cached_private_body_keeps_no_fingerprint_a_guess_can_be_checked_against() {
    use sha2::Digest;
    let want = format!("Bearer {SECRET}");
    let origin = TestServer::start(move |req| {
        if req.header("authorization") == Some(want.as_str()) {
            Reply::xml(
                "<rss><channel><title>P</title><item><title>i</title></item></channel></rss>",
            )
        } else {
            Reply::status(401)
        }
    })
    .await;
    let mut ids = Vec::new();
    for _ in 0..2 {
        // Two installs (two cache directories), the same credentials.
        let dir = tempfile::tempdir().unwrap();
        let url = origin.url("/feed.xml");
        let out = rss_in(dir.path(), &["fetch", &url]);
        assert_eq!(json(&out.stdout)["feeds"][0]["status"], "ok");
        let entries = files_under(&dir.path().join("cache").join("feeds"));
        let entry = entries
            .iter()
            .find(|p| p.extension().is_some_and(|e| e == "entry"))
            .expect("a cache entry");
        let text = std::fs::read(entry).unwrap();
        let line = text.split(|&b| b == b'\n').next().unwrap();
        let meta: Value = serde_json::from_slice(line).unwrap();
        let id = meta["credential_id"]
            .as_str()
            .expect("a fingerprint")
            .to_owned();
        // The fingerprint an earlier version kept: a plain hash of what was sent, the same
        // in every install, which a dictionary of passwords finds.
        let mut h = sha2::Sha256::new();
        h.update(b"rss credentials\0");
        for (name, value) in [
            ("authorization", format!("Bearer {SECRET}")),
            ("x-api-key", KEY.to_owned()),
            ("x-plain", "yes".to_owned()),
        ] {
            h.update(name.as_bytes());
            h.update(b"\0");
            h.update(value.as_bytes());
            h.update(b"\n");
        }
        let unkeyed = hex::encode(&h.finalize()[..8]);
        assert_ne!(id, unkeyed);
        assert!(!id.contains(&unkeyed));
        // The key is the cache's own, its owner's only.
        let key = dir.path().join("cache").join("credential.key");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // The same credentials are served the cached copy with no request.
        let before = origin.count();
        let again = rss_in(dir.path(), &["fetch", "--max-age", "3600", &url]);
        assert_eq!(json(&again.stdout)["feeds"][0]["from_cache"], true);
        assert_eq!(origin.count(), before);
        ids.push(id);
    }
    assert_ne!(ids[0], ids[1], "two installs share no fingerprint");
}

/// The write-then-rename calls of a run, as `strace` saw them: each rename's source path,
/// and the paths flushed before it.
fn renames_unflushed(trace: &str) -> (usize, Vec<String>) {
    let mut flushed = std::collections::HashSet::new();
    let mut renamed = 0;
    let mut unflushed = Vec::new();
    for line in trace.lines() {
        let line = line.trim_start_matches(|c: char| c != 'f' && c != 'r' && c != 'l');
        let fd_path = |l: &str| {
            let start = l.find('<')? + 1;
            let end = l[start..].find('>')? + start;
            Some(l[start..end].to_owned())
        };
        if line.starts_with("fsync(") || line.starts_with("fdatasync(") {
            if let Some(p) = fd_path(line) {
                flushed.insert(p);
            }
        } else if line.starts_with("rename(")
            || line.starts_with("renameat(")
            || line.starts_with("renameat2(")
            || line.starts_with("linkat(")
        {
            let Some(from) = line.split('"').nth(1) else {
                continue;
            };
            if !from.contains(".tmp") {
                continue;
            }
            renamed += 1;
            if !flushed
                .iter()
                .any(|p: &String| p.ends_with(from) || from.ends_with(p.as_str()))
            {
                unflushed.push(line.to_owned());
            }
        }
    }
    (renamed, unflushed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_35_every_file_renamed_into_place_was_flushed_first() {
    let Ok(strace) = which("strace") else {
        eprintln!("skipped: strace is not installed");
        return;
    };
    let origin = TestServer::start(|_| {
        Reply::xml("<rss><channel><title>T</title><item><title>i</title><link>https://x.example/i</link></item></channel></rss>")
            .header("Cache-Control", "max-age=60")
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let cache = dir.path().join("cache");
    // A feed (a cache entry, host state) read by a reader (its records and token key),
    // with credentials (the cache's credential key); then its delivery acknowledged (the
    // reader's marks, written together).
    let traced = |args: &[&str]| {
        std::process::Command::new(&strace)
            .args(["-f", "-y", "-qq", "-o"])
            .arg(&trace)
            .args([
                "-e",
                "trace=fsync,fdatasync,rename,renameat,renameat2,linkat",
            ])
            .arg(env!("CARGO_BIN_EXE_rss"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("RSS_CACHE_DIR", &cache)
            .env("RSS_STATE_DIR", dir.path().join("state"))
            .env("TOK_35", SECRET)
            .env("KEY_35", KEY)
            .arg("--config")
            .arg(config(dir.path()))
            .args(args)
            .output()
            .unwrap()
    };
    let out = traced(&["fetch", "--reader", "r", &origin.url("/feed.xml")]);
    if !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("ptrace") {
        eprintln!("skipped: ptrace is not allowed here");
        return;
    }
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fetched = std::fs::read_to_string(&trace).unwrap();
    let (renamed, unflushed) = renames_unflushed(&fetched);
    // The cache entry, the host's state, the reader's delivery and index, the two keys.
    assert!(renamed >= 4, "{renamed} renames:\n{fetched}");
    assert!(unflushed.is_empty(), "renamed unflushed: {unflushed:#?}");
    let token = json(&out.stdout)["delivery"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = traced(&["ack", &token]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let acked = std::fs::read_to_string(&trace).unwrap();
    let (renamed, unflushed) = renames_unflushed(&acked);
    // The delivery kept and stubbed, the index committed and settled, the feed's marks.
    assert!(renamed >= 4, "{renamed} renames:\n{acked}");
    assert!(unflushed.is_empty(), "renamed unflushed: {unflushed:#?}");
}

fn which(name: &str) -> Result<PathBuf, ()> {
    let path = std::env::var_os("PATH").ok_or(())?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or(())
}

#[test]
fn issue_35_a_secret_file_others_may_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("token");
    std::fs::write(&secret, "tok-1\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o622)).unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            "[[site]]\nhost = \"127.0.0.1:9\"\nauth = {{ bearer_file = \"{}\" }}\n",
            secret.display()
        ),
    )
    .unwrap();
    let (code, said) = said_within(
        rss_std(dir.path())
            .arg("--config")
            .arg(&cfg)
            .args(["config", "check"]),
        Duration::from_secs(30),
    );
    assert_ne!(code, Some(0), "{said}");
    assert!(said.contains("writable by other users"), "{said}");
    assert!(!said.contains("tok-1"), "{said}");
}

/// A feed over https that moves for good to http is never remembered as moved: each fetch
/// takes the https step again, so the http address never gets the rule's secrets, the
/// fourth and fifth fetch (past the three that would remember a move) included, and the
/// items' http pages neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_moved_from_https_to_http_sends_no_secret_there_ever() {
    let plain = TestServer::start(|req| match req.path.as_str() {
        "/feed.xml" => Reply::xml(
            "<rss version=\"2.0\"><channel><title>T</title><item><title>A</title>\
             <link>/page</link><guid>a</guid></item></channel></rss>"
                .to_owned(),
        )
        .header("Cache-Control", "no-store"),
        "/robots.txt" => Reply::ok(ALLOW_ALL, "text/plain"),
        _ => Reply::ok(PAGE, "text/html").header("Cache-Control", "no-store"),
    })
    .await;
    let target = plain.url("/feed.xml");
    let secure =
        TestServer::start_tls(move |_| Reply::status(308).header("Location", &target)).await;
    let dir = tempfile::tempdir().unwrap();
    for n in 0..5 {
        let out = rss_in(
            dir.path(),
            &["fetch", "--refresh", "--articles", &secure.url("/mv")],
        );
        let doc = json(&out.stdout);
        assert_eq!(doc["feeds"][0]["status"], "ok", "fetch {n}: {doc}");
    }
    // Every fetch asked the https address first ...
    assert_eq!(secure.hits_for("/mv").len(), 5);
    // ... and nothing that went over http carried a secret.
    assert_eq!(plain.hits_for("/feed.xml").len(), 5);
    assert_nothing_secret(
        &plain.hits(),
        "the http feed a https feed moved to, and its pages",
    );
}
