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

/// The send-slot keys of `srv`'s host in Redis at `store`.
fn lease_keys(store: &str, srv: &TestServer) -> Vec<String> {
    let client = ::redis::Client::open(store).unwrap();
    let mut conn = client.get_connection().unwrap();
    let pattern = format!("rss:gate:v1:{{127.0.0.1:{}}}:lease:*", srv.addr.port());
    ::redis::cmd("KEYS").arg(pattern).query(&mut conn).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_19_a_run_that_ends_holds_no_send_slot() {
    let Some(store) = redis_url() else { return };
    let srv = TestServer::start(|_| Reply::xml(FEED)).await;
    let (code, doc) = fetch_with(&store, &urls(&srv, "a", 3)).await;
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(lease_keys(&store, &srv), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_19_a_worker_whose_clock_lags_paces_by_the_fleets_one_clock() {
    let Some(store) = redis_url() else { return };
    let srv = TestServer::start(|req| {
        if req.nth_overall == 1 {
            Reply::status(429).header("Retry-After", "3")
        } else {
            Reply::xml(FEED)
        }
    })
    .await;
    // A worker whose clock is 5 s behind learns the host's 3 s window...
    let cache = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::from(rss_std(cache.path()));
    cmd.args([
        "fetch",
        "--no-cache",
        "--max-gate-wait",
        "1",
        &srv.url("/a"),
    ])
    .env("RSS_GATE_STORE", &store)
    .env("RSS_TEST_WALL_CLOCK_SKEW_MS", "-5000")
    .stderr(Stdio::null());
    let out = cmd.output().await.unwrap();
    assert_eq!(
        json(&out.stdout)["feeds"][0]["error"]["code"],
        "RATE_LIMITED"
    );
    // ...and a worker with the right clock still waits it out.
    let (code, doc) = fetch_with(&store, &["--no-cache".into(), srv.url("/b")]).await;
    assert_eq!(code, Some(0), "{doc}");
    let hits = srv.hits();
    assert_eq!(hits.len(), 2);
    let gap = hits[1].arrived - hits[0].finished.unwrap();
    assert!(
        gap >= Duration::from_millis(2_990),
        "sent {gap:?} after the refusal"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_19_a_stalled_holder_knows_it_lost_its_slot_and_the_overlap_is_bounded() {
    let Some(store) = redis_url() else { return };
    let srv = TestServer::start(|req| {
        let d = if req.path == "/slow" { 6_000 } else { 0 };
        Reply::xml(FEED).delay(Duration::from_millis(d))
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::from(rss_std(cache.path()));
    cmd.args(["fetch", "--no-cache", &srv.url("/slow")])
        .env("RSS_GATE_STORE", &store)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let holder = cmd.spawn().unwrap();
    let pid = holder.id().unwrap().to_string();
    wait_until("the holder's request reached the origin", || {
        srv.count() == 1
    })
    .await;
    let sent = srv.hits()[0].arrived;
    let signal = |sig: &str| {
        let st = std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap();
        assert!(st.success());
    };
    // The holder is stopped mid-send (a paused VM, SIGSTOP): it cannot renew its slot.
    signal("-STOP");
    let (code, doc) = fetch_with(&store, &["--no-cache".into(), srv.url("/b")]).await;
    assert_eq!(code, Some(0), "{doc}");
    let other = srv.hits_for("/b")[0].arrived;
    // The slot lapsed no sooner than 2 s after the stop: renewed each second, it lives 3 s.
    assert!(
        other - sent >= Duration::from_millis(1_900),
        "{:?}",
        other - sent
    );
    let resume_at = sent + Duration::from_secs(5);
    tokio::time::sleep(resume_at.saturating_duration_since(std::time::Instant::now())).await;
    signal("-CONT");
    let out = tokio::time::timeout(Duration::from_secs(60), holder.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let doc = json(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    let lost = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["code"] == "GATE_SLOT_LOST");
    assert!(lost, "the stalled holder says its slot lapsed: {doc}");
    assert_eq!(lease_keys(&store, &srv), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_36_three_machines_on_a_silent_two_second_host_learn_the_window_once() {
    let Some(store) = redis_url() else { return };
    let srv = crate::silent::silent_host(|_| Duration::from_secs(2)).await;
    let runs: Vec<_> = (0..3)
        .map(|p| {
            let mut args = vec!["--no-cache".to_owned()];
            args.extend(urls(&srv, &format!("m{p}-"), 4));
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
    // The spacing one machine learned is every machine's the moment it is learned.
    assert_eq!(crate::silent::refusals(&srv), 1);
    let took = crate::silent::span(&srv);
    assert!(took <= Duration::from_secs(22).mul_f64(1.25), "{took:?}");
}

/// A schedule a feed declares (`<ttl>`) is learnt once its body is read, after the copy went
/// to the fleet's tier: the tier's copy learns it too, so another machine serves the copy as
/// fresh by it instead of asking the origin again (before, the tier's copy never knew it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_one_machine_read_in_a_feed_spares_another_machine_the_request() {
    let Some(store) = redis_url() else { return };
    let feed = "<rss><channel><title>T</title><ttl>5</ttl><item><title>i</title><link>https://x.example/i</link></item></channel></rss>";
    let srv = TestServer::start(move |_| Reply::xml(feed).header("ETag", "\"v1\"")).await;
    // A URL no earlier run left in the tier (a Redis server may be shared).
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let url = srv.url(&format!("/ttl-{}-{nanos}", std::process::id()));
    let args = vec![url];
    let (code, first) = fetch_with(&store, &args).await;
    assert_eq!(code, Some(0), "{first}");
    assert_eq!(first["feeds"][0]["declared_ttl_seconds"], 300);
    // Another machine: its own cache directory, the same Redis.
    let (code, second) = fetch_with(&store, &args).await;
    assert_eq!(code, Some(0), "{second}");
    let f = &second["feeds"][0];
    assert_eq!(f["from_cache"], true, "{f}");
    assert_eq!(f["fresh_by"], "ttl", "{f}");
    assert_eq!(srv.count(), 1, "the origin was asked again: {f}");
}
