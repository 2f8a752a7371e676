//! Issue 38: feeds as MCP resources and subscriptions to them, driven by the official
//! Python SDK (2.3, which `.ci/run` installs) over stdio and over HTTP, against loopback
//! origins whose feeds change during the test (`tests/watch_client.py` changes them through
//! their control server; these tests read the origins' request logs).
//!
//! Without `RSS_TEST_PYTHON` the tests say they skipped.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::*;
use crate::mcp::{python_with_mcp, run_python_script};
use crate::watch_origin::{Flavor, Origins};

/// A running `rss mcp --http 127.0.0.1:0` with `flags`, killed when dropped.
pub struct Node {
    _child: tokio::process::Child,
    pub url: String,
}

impl Node {
    pub async fn start(cache: &std::path::Path, flags: &[&str], env: &[(&str, &str)]) -> Node {
        let mut cmd = rss_tokio();
        cmd.arg("--cache-dir")
            .arg(cache)
            .args(["mcp", "--http", "127.0.0.1:0", "--allow-private-networks"])
            .args(flags)
            .envs(env.iter().copied())
            .env("RSS_STATE_DIR", cache.join("state"));
        let (child, url) = spawn_listening(cmd).await;
        Node { _child: child, url }
    }
}

/// Runs the script's `config`, and returns each part's result by name.
pub async fn run(config: Value) -> Option<std::collections::HashMap<String, Value>> {
    let scenario = config["scenario"].as_str().unwrap().to_owned();
    let out = run_python_script(
        "watch_client.py",
        &[&config.to_string()],
        &[],
        &format!("OK {scenario}"),
    )
    .await?;
    Some(
        out.lines()
            .filter_map(|l| l.strip_prefix("RESULT "))
            .filter_map(|l| l.split_once(' '))
            .map(|(name, v)| (name.to_owned(), serde_json::from_str(v).unwrap()))
            .collect(),
    )
}

fn fresh(seconds: u32) -> Flavor {
    Flavor {
        max_age: Some(seconds),
        ..Flavor::default()
    }
}

/// How `rss mcp` is reached: its binary and arguments over stdio, or its URLs.
fn transport(http: Option<&[String]>, cache: &std::path::Path, flags: &[&str]) -> Value {
    match http {
        Some(urls) => json!({ "transport": "http", "urls": urls }),
        None => {
            let mut args = vec![
                "--cache-dir".to_owned(),
                cache.display().to_string(),
                "--state-dir".to_owned(),
                cache.join("state").display().to_string(),
                "mcp".to_owned(),
            ];
            args.extend(flags.iter().map(|f| f.to_string()));
            json!({ "transport": "stdio", "rss": env!("CARGO_BIN_EXE_rss"), "args": args })
        }
    }
}

/// Every point of the issue that one server shows, its parts at once (each on an origin of
/// its own, so that one host's pacing never times another's checks).
async fn session(over_http: bool) {
    if python_with_mcp().is_none() {
        return;
    }
    let mut o = Origins::start().await;
    let notify = o
        .host(
            &[
                ("a", fresh(1)),
                (
                    "b",
                    Flavor {
                        churn: true,
                        ..fresh(1)
                    },
                ),
            ],
            None,
        )
        .await;
    let three = o.host(&[("c", fresh(1))], None).await;
    let declared = o
        .host(
            &[
                (
                    "t",
                    Flavor {
                        ttl: Some(1),
                        ..fresh(1)
                    },
                ),
                (
                    "s",
                    Flavor {
                        sy: Some(("hourly", 60)),
                        ..fresh(1)
                    },
                ),
                ("m", fresh(1)),
            ],
            None,
        )
        .await;
    let retry = o
        .host(
            &[(
                "r",
                Flavor {
                    refuse_nth: Some((2, 503, "3")),
                    ..fresh(1)
                },
            )],
            None,
        )
        .await;
    let stop = o.host(&[("d", fresh(1))], None).await;
    let strict_feeds = ["p", "q", "u", "v"];
    let strict_flavors: Vec<(&str, Flavor)> = strict_feeds.iter().map(|n| (*n, fresh(1))).collect();
    let strict = o
        .host(&strict_flavors, Some(Duration::from_millis(1500)))
        .await;
    let cache = tempfile::tempdir().unwrap();
    let node = match over_http {
        true => Some(Node::start(cache.path(), &[], &[]).await),
        false => None,
    };
    let urls = node.as_ref().map(|n| vec![n.url.clone()]);
    let mut config = transport(urls.as_deref(), cache.path(), &[]);
    config["scenario"] = json!("session");
    config["feeds"] = json!({
        "a": o.feed(notify, "a"),
        "b": o.feed(notify, "b"),
        "missing": o.feed(notify, "missing"),
        "c": o.feed(three, "c"),
        "t": o.feed(declared, "t"),
        "s": o.feed(declared, "s"),
        "m": o.feed(declared, "m"),
        "r": o.feed(retry, "r"),
        "d": o.feed(stop, "d"),
        "strict": strict_feeds.iter().map(|n| o.feed(strict, n)).collect::<Vec<_>>(),
    });
    config["control"] = json!({
        "bump_a": o.control_url("bump", notify, "a"),
        "count_a": o.control_url("count", notify, "a"),
        "bump_c": o.control_url("bump", three, "c"),
        "count_c": o.control_url("count", three, "c"),
        "count_d": o.control_url("count", stop, "d"),
    });
    let Some(results) = run(config).await else {
        return;
    };

    // Notified on a change of items, once, and never on a 304 or the same items: the
    // unchanged feed was checked (and answered 304), the churning one too.
    let a_hits = o.server(notify).hits_for("/a.xml");
    assert!(a_hits.iter().any(|h| h.status == 304), "{a_hits:?}");
    assert!(o.requests(notify, "b") >= 3, "{}", o.requests(notify, "b"));
    let latency = results["notify"]["latency"].as_f64().unwrap();
    eprintln!("notified {latency:.2} s after the change (max-age=1)");
    // Within the feed's freshness (1 s) and a delay a loaded machine stays far under.
    assert!(latency < 5.0, "notified {latency} s after the change");

    // Three listeners: one check per interval between them.
    let checks =
        results["three"]["after"].as_u64().unwrap() - results["three"]["before"].as_u64().unwrap();
    assert!(
        (2..=6).contains(&checks),
        "{checks} checks in 4 s with max-age=1 for three listeners"
    );

    // `<ttl>` and `sy:*` (a minute each) outrank max-age=1: one check each, while the feed
    // that declares nothing was checked every second.
    assert_eq!(o.requests(declared, "t"), 1);
    assert_eq!(o.requests(declared, "s"), 1);
    assert!(
        o.requests(declared, "m") >= 3,
        "{}",
        o.requests(declared, "m")
    );

    // The 503's Retry-After: 3 held the next request for three seconds.
    let r = o.server(retry).hits_for("/r.xml");
    assert!(r.len() >= 3, "{r:?}");
    assert_eq!(r[1].status, 503);
    let gap = r[2].arrived.duration_since(r[1].arrived);
    assert!(gap >= Duration::from_secs(3), "{gap:?}");

    // A strict host's subscriptions: paced by the gate, never burst; the one refusal its
    // first contact cost (nothing was known of it) is all, and every feed was checked.
    assert!(o.refused(strict) <= 1, "{} refusals", o.refused(strict));
    for n in strict_feeds {
        assert!(o.requests(strict, n) >= 1, "{n} was never checked");
    }
    eprintln!("stop: {}", results["stop"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_feeds_are_resources_and_their_changes_are_told() {
    session(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_feeds_are_resources_and_their_changes_are_told() {
    session(true).await;
}

/// Past the caps, the subscriptions over them are left out and named, and nothing else
/// breaks.
async fn caps(over_http: bool) {
    if python_with_mcp().is_none() {
        return;
    }
    let mut o = Origins::start().await;
    let names = ["e1", "e2", "e3", "e4", "e5"];
    let flavors: Vec<(&str, Flavor)> = names.iter().map(|n| (*n, fresh(1))).collect();
    let h = o.host(&flavors, None).await;
    let cache = tempfile::tempdir().unwrap();
    let flags = [
        "--max-subscriptions",
        "3",
        "--max-subscriptions-per-listener",
        "2",
    ];
    let node = match over_http {
        true => Some(Node::start(cache.path(), &flags, &[]).await),
        false => None,
    };
    let urls = node.as_ref().map(|n| vec![n.url.clone()]);
    let mut config = transport(urls.as_deref(), cache.path(), &flags);
    config["scenario"] = json!("caps");
    let feeds: serde_json::Map<String, Value> = names
        .iter()
        .map(|n| (n.to_string(), Value::from(o.feed(h, n))))
        .collect();
    config["feeds"] = Value::Object(feeds);
    config["control"] = json!({
        "bump_e1": o.control_url("bump", h, "e1"),
        "count_e1": o.control_url("count", h, "e1"),
    });
    run(config).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_subscriptions_past_the_caps_are_named_and_nothing_else_breaks() {
    caps(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_subscriptions_past_the_caps_are_named_and_nothing_else_breaks() {
    caps(true).await;
}

/// Two nodes of a fleet on one Redis (each its own cache, as on two machines), each with a
/// listener of one feed: the feed is checked once per interval between them, and both
/// listeners are told of its change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_on_one_redis_check_a_feed_once_between_them() {
    if python_with_mcp().is_none() {
        return;
    }
    let Some(store) = std::env::var("RSS_TEST_REDIS")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        eprintln!("skipped: RSS_TEST_REDIS is not set (.ci/run starts a Redis server and sets it)");
        return;
    };
    let mut o = Origins::start().await;
    let h = o.host(&[("f", fresh(1))], None).await;
    let (c1, c2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let env = [("RSS_GATE_STORE", store.as_str())];
    let n1 = Node::start(c1.path(), &[], &env).await;
    let n2 = Node::start(c2.path(), &[], &env).await;
    let config = json!({
        "scenario": "fleet",
        "transport": "http",
        "urls": [n1.url, n2.url],
        "feeds": { "f": o.feed(h, "f") },
        "control": {
            "bump_f": o.control_url("bump", h, "f"),
            "count_f": o.control_url("count", h, "f"),
        },
    });
    let Some(results) = run(config).await else {
        return;
    };
    let checks =
        results["fleet"]["after"].as_u64().unwrap() - results["fleet"]["before"].as_u64().unwrap();
    eprintln!("{checks} checks in 5 s for two nodes");
    // Each node alone checks every second: two would make about ten in five seconds.
    assert!(
        (2..=7).contains(&checks),
        "{checks} checks in 5 s with max-age=1 for two nodes"
    );
}

/// Two `rss mcp` processes of one machine (one cache directory, so one host-state store),
/// each with a listener of one feed: one of them checks it, the other reads what it found,
/// and both listeners are told of its change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_machine_check_a_feed_once_between_them() {
    if python_with_mcp().is_none() {
        return;
    }
    let mut o = Origins::start().await;
    let h = o.host(&[("f", fresh(1))], None).await;
    let cache = tempfile::tempdir().unwrap();
    let mut config = transport(None, cache.path(), &[]);
    config["scenario"] = json!("fleet");
    config["feeds"] = json!({ "f": o.feed(h, "f") });
    config["control"] = json!({
        "bump_f": o.control_url("bump", h, "f"),
        "count_f": o.control_url("count", h, "f"),
    });
    let Some(results) = run(config).await else {
        return;
    };
    let checks =
        results["fleet"]["after"].as_u64().unwrap() - results["fleet"]["before"].as_u64().unwrap();
    eprintln!("{checks} checks in 5 s for two servers on one machine");
    assert!(
        (2..=7).contains(&checks),
        "{checks} checks in 5 s with max-age=1 for two servers"
    );
}
