//! Shared test helpers: fixtures, contexts, and the loopback origin.

#![allow(dead_code)]

#[path = "../common/redis.rs"]
pub mod redis;
#[path = "../common/rss.rs"]
pub mod rss_bin;
#[path = "../common/server.rs"]
pub mod server;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rss::Config;
use rss::config::Overrides;
use rss::internals as inputs;
use rss::model::{FeedResult, FetchOutput, Item};
use rss::ops::{self, CacheMode, Context, FetchOptions};
use rss::{RenderOptions, Selection};

pub use rss_bin::{rss_blocking, rss_tokio, rss_vars};
pub use server::{Reply, TestServer};

pub fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

pub fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixture_path(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// A configuration for tests: no environment, a short timeout, the given cache.
pub fn config(cache_dir: Option<&Path>) -> Config {
    let mut c = Config::resolve(
        Overrides {
            timeout_secs: Some(10.0),
            cache_dir: cache_dir.map(Path::to_path_buf),
            ..Overrides::default()
        },
        |_| None,
    )
    .expect("test config");
    // Readers' marks, if a test keeps any, stay in its temporary directory.
    c.state_dir = cache_dir.map(|d| d.join("state"));
    if cache_dir.is_none() {
        c.cache_dir = None;
        // With no cache there is nowhere to share host state: this process's gate only.
        c.host_state = rss::config::HostStateSetting::Off;
    }
    c
}

pub fn context(config: Config) -> Context {
    Context::new(config)
}

pub fn no_cache() -> FetchOptions {
    FetchOptions {
        cache: CacheMode::Off,
        ..FetchOptions::default()
    }
}

pub fn with_render(render: RenderOptions) -> FetchOptions {
    FetchOptions {
        render,
        ..no_cache()
    }
}

pub fn with_selection(selection: Selection) -> FetchOptions {
    FetchOptions {
        selection,
        ..no_cache()
    }
}

pub async fn fetch(ctx: &Context, urls: &[String], opts: &FetchOptions) -> FetchOutput {
    let inputs = inputs::merge(urls.iter().cloned());
    ops::fetch_feeds(ctx, inputs, opts, &|_, _| {}).await
}

pub async fn fetch_one(url: &str) -> FeedResult {
    let ctx = context(config(None));
    let out = fetch(&ctx, &[url.to_owned()], &no_cache()).await;
    out.feeds.into_iter().next().expect("one feed")
}

pub fn item<'a>(feed: &'a FeedResult, title: &str) -> &'a Item {
    feed.items
        .iter()
        .find(|i| i.title.as_deref() == Some(title))
        .unwrap_or_else(|| {
            panic!(
                "no item titled {title:?} in {:?}",
                feed.items.iter().map(|i| &i.title).collect::<Vec<_>>()
            )
        })
}

/// Serves every fixture at `/<name>` with a content type that fits it.
pub async fn fixture_server() -> TestServer {
    TestServer::start(|req| {
        let name = req.path.trim_start_matches('/');
        match std::fs::read(fixture_path(name)) {
            Ok(body) => {
                let ct = if name.ends_with(".json") {
                    "application/feed+json"
                } else if name.ends_with(".html") {
                    "text/html; charset=utf-8"
                } else {
                    "application/xml"
                };
                Reply::ok(body, ct)
            }
            Err(_) => Reply::status(404),
        }
    })
    .await
}

/// The `rss` binary with a clean environment and a cache directory of its own (a fresh
/// temporary directory, removed when the command is dropped): a test never writes outside
/// temporary directories, and never inherits another test's host state.
pub struct RssCmd {
    cmd: assert_cmd::Command,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for RssCmd {
    type Target = assert_cmd::Command;
    fn deref(&self) -> &Self::Target {
        &self.cmd
    }
}

impl std::ops::DerefMut for RssCmd {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.cmd
    }
}

pub fn rss_cmd() -> RssCmd {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cmd = assert_cmd::Command::cargo_bin("rss").expect("binary");
    for var in rss_vars() {
        cmd.env_remove(var);
    }
    cmd.env("RSS_CACHE_DIR", dir.path())
        .env("RSS_STATE_DIR", dir.path().join("state"))
        .env("NO_COLOR", "1")
        .timeout(Duration::from_secs(120));
    RssCmd { cmd, _dir: dir }
}

/// A `std::process::Command` for the binary with the same clean environment, and the
/// cache directory `cache`.
pub fn rss_std(cache: &Path) -> std::process::Command {
    let mut cmd = rss_blocking();
    cmd.env("RSS_CACHE_DIR", cache)
        .env("RSS_STATE_DIR", cache.join("state"))
        .env("NO_COLOR", "1");
    cmd
}

pub fn json(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(bytes)))
}

/// Every subcommand of `rss`, as `--help` and the man page name them.
/// Every subcommand, as the binary's own definition names them.
pub fn subcommands() -> Vec<String> {
    rss::internals::subcommands()
}

/// Polls `cond` every 20 ms until it holds; fails the test after 30 s, naming `what`.
pub async fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "{what} within 30 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits for `child` to exit, at most `within`; its exit code and how long it took.
pub fn exit_within(child: &mut std::process::Child, within: Duration) -> (Option<i32>, Duration) {
    let started = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return (st.code(), started.elapsed());
        }
        if started.elapsed() > within {
            let _ = child.kill();
            panic!("the process did not exit within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A FIFO named `name` in `dir` (nothing ever writes to it: a reader that waits for a writer
/// waits for ever).
pub fn make_fifo(dir: &Path, name: &str) -> PathBuf {
    let fifo = dir.join(name);
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {}", fifo.display());
    fifo
}

/// Runs `cmd` (stdin closed) until it exits, at most `within`; its exit code and what it
/// wrote on stdout and stderr, together.
pub fn said_within(cmd: &mut std::process::Command, within: Duration) -> (Option<i32>, String) {
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (code, _) = exit_within(&mut child, within);
    let out = child.wait_with_output().unwrap();
    let mut said = String::from_utf8_lossy(&out.stdout).into_owned();
    said.push_str(&String::from_utf8_lossy(&out.stderr));
    (code, said)
}

/// A host that answers `/slow` after 120 s (long past any budget a test waits) and any
/// other path at once, with a small valid feed.
pub async fn slow_and_fast_host() -> TestServer {
    const FEED: &str = "<rss><channel><title>T</title><item><title>i</title><link>https://x.example/i</link></item></channel></rss>";
    TestServer::start(|req| {
        if req.path == "/slow" {
            Reply::xml(FEED).delay(Duration::from_secs(120))
        } else {
            Reply::xml(FEED)
        }
    })
    .await
}

/// Every file under `dir`, in its folders too (a cache keeps its entries in 256 folders by
/// key), in no order.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    read.flatten()
        .flat_map(|e| {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                files_under(&e.path())
            } else {
                vec![e.path()]
            }
        })
        .collect()
}

/// Starts `cmd` (an `rss mcp --http 127.0.0.1:0 …`) with stderr read here: the child, and
/// the URL it says it listens on (within 30 s). Its stderr is drained from then on, so the
/// server never blocks on a full pipe.
pub async fn spawn_listening(mut cmd: tokio::process::Command) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt;
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(at) = line.find("http://") {
                return line[at..].trim().to_owned();
            }
        }
        panic!("the server ended before it listened");
    })
    .await
    .expect("the server listens within 30 s");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}
