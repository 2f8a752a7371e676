//! A fleet shares one gate through Redis: processes with separate cache directories (as on
//! separate machines) pace each host together. Needs the Redis server `.ci/run` starts
//! (`RSS_TEST_REDIS`, a URL) and, for the stop-and-restart test, the `redis-server` binary
//! it installed (`RSS_TEST_REDIS_SERVER`); a plain `cargo test` skips these, saying so.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::helpers::redis::{OwnRedis, free_port};
use crate::helpers::*;
use crate::hosts::{statuses, urls};

const FEED: &str = "<rss><channel><title>T</title><item><title>i</title><link>https://x.example/i</link></item></channel></rss>";

fn redis_url() -> Option<String> {
    let url = std::env::var("RSS_TEST_REDIS")
        .ok()
        .filter(|u| !u.is_empty());
    if url.is_none() {
        eprintln!("skipped: RSS_TEST_REDIS is not set (.ci/run starts a Redis server and sets it)");
    }
    url
}

/// `rss fetch ARGS` with its own cache directory and `store` as the gate store.
async fn fetch_with(store: &str, args: &[String]) -> (Option<i32>, Value) {
    let cache = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::from(rss_std(cache.path()));
    cmd.arg("fetch")
        .args(args)
        .env("RSS_GATE_STORE", store)
        .stderr(Stdio::null());
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("rss fetch finished within two minutes")
        .unwrap();
    (out.status.code(), json(&out.stdout))
}

/// The codes of the host-state store's warnings in `doc`.
fn warning_codes(doc: &Value) -> Vec<String> {
    doc["warnings"]
        .as_array()
        .map(|w| {
            w.iter()
                .filter_map(|w| w["code"].as_str())
                .filter(|c| matches!(*c, "GATE_STORE_UNAVAILABLE" | "HOST_STATE_CORRUPT"))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_machines_with_one_redis_never_send_to_one_host_at_once() {
    let Some(store) = redis_url() else { return };
    let srv = TestServer::start(|_| Reply::xml(FEED).delay(Duration::from_millis(60))).await;
    let runs: Vec<_> = (0..3)
        .map(|p| {
            let mut args = vec!["--no-cache".to_owned()];
            args.extend(urls(&srv, &format!("m{p}-"), 8));
            let store = store.clone();
            tokio::spawn(async move { fetch_with(&store, &args).await })
        })
        .collect();
    for run in runs {
        let (code, doc) = run.await.unwrap();
        assert_eq!(code, Some(0), "{doc}");
        assert!(statuses(&doc).iter().all(|s| s == "ok"), "{doc}");
        assert!(warning_codes(&doc).is_empty(), "{doc}");
    }
    assert_eq!(srv.count(), 24);
    assert_eq!(srv.max_in_flight(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cooldown_learned_by_one_machine_is_honoured_by_another() {
    let Some(store) = redis_url() else { return };
    let srv = TestServer::start(|_| Reply::status(429).header("Retry-After", "30")).await;
    let args = |name: &str| {
        vec![
            "--no-cache".to_owned(),
            "--max-gate-wait".to_owned(),
            "5".to_owned(),
            srv.url(name),
        ]
    };
    let (_, first) = fetch_with(&store, &args("/a")).await;
    assert_eq!(
        first["feeds"][0]["error"]["code"], "RATE_LIMITED",
        "{first}"
    );
    assert_eq!(srv.count(), 1);
    let (_, second) = fetch_with(&store, &args("/b")).await;
    let err = &second["feeds"][0]["error"];
    assert_eq!(err["code"], "RATE_LIMITED", "{second}");
    assert!(
        err["details"]["retry_after_seconds"].as_u64().unwrap() > 20,
        "{err}"
    );
    assert_eq!(srv.count(), 1, "the second machine sent inside the window");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_holding_a_send_slot_frees_it_within_seconds() {
    let Some(store) = redis_url() else { return };
    crate::hosts::killed_sender_frees_the_host(Some(&store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_stopped_mid_run_costs_a_warning_and_back_it_is_used_again() {
    let Some(bin) = std::env::var("RSS_TEST_REDIS_SERVER")
        .ok()
        .filter(|b| !b.is_empty())
    else {
        eprintln!("skipped: RSS_TEST_REDIS_SERVER is not set (.ci/run installs redis-server)");
        return;
    };
    let port = free_port();
    let mut redis = Some(OwnRedis::start(&bin, port));
    let store = redis.as_ref().unwrap().url();
    let srv = TestServer::start(|_| Reply::xml(FEED).delay(Duration::from_millis(300))).await;

    let (_, before) = fetch_with(&store, &urls(&srv, "a", 1)).await;
    assert!(warning_codes(&before).is_empty(), "{before}");

    let mut args = vec!["--no-cache".to_owned()];
    args.extend(urls(&srv, "b", 6));
    let run = {
        let store = store.clone();
        tokio::spawn(async move { fetch_with(&store, &args).await })
    };
    wait_until("two feeds are fetched", || srv.count() >= 2).await;
    drop(redis.take());
    let (code, during) = run.await.unwrap();
    assert_eq!(code, Some(0), "{during}");
    assert!(statuses(&during).iter().all(|s| s == "ok"), "{during}");
    assert!(
        warning_codes(&during).contains(&"GATE_STORE_UNAVAILABLE".to_owned()),
        "{during}"
    );
    assert_eq!(srv.max_in_flight(), 1);

    let _back = OwnRedis::start(&bin, port);
    let (code, after) = fetch_with(&store, &urls(&srv, "c", 2)).await;
    assert_eq!(code, Some(0), "{after}");
    assert!(warning_codes(&after).is_empty(), "{after}");
}
