//! Issue 38 on the command line: `rss watch` prints each new item once, as it appears,
//! until a signal (exit 0, whole lines) or `--duration`; with `--reader`, marks move only
//! by `rss ack`. And a feed's declared schedule counts as freshness for ordinary fetches.

use std::io::Read;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::helpers::*;
use crate::watch_origin::{Flavor, Origins};

/// What a watch wrote on stdout so far, as it came, and the thread reading it.
struct Out {
    bytes: Arc<Mutex<Vec<u8>>>,
    reader: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Out {
    /// Waits until the reader has read stdout to its end (the process exited), so what is
    /// looked at next is all the process wrote.
    fn to_end(&self) {
        if let Some(reader) = self.reader.lock().unwrap().take() {
            reader.join().unwrap();
        }
    }
}

/// `rss watch ARGS` with the cache (and state) in `cache`, its stdout gathered as it comes.
fn watch(cache: &std::path::Path, args: &[&str]) -> (Child, Out) {
    let mut child = rss_std(cache)
        .arg("watch")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let bytes: Arc<Mutex<Vec<u8>>> = Arc::default();
    let mut pipe = child.stdout.take().unwrap();
    let gathered = bytes.clone();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            gathered.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    let out = Out {
        bytes,
        reader: Mutex::new(Some(reader)),
    };
    (child, out)
}

/// The whole lines written so far.
fn lines(out: &Out) -> Vec<String> {
    let bytes = out.bytes.lock().unwrap().clone();
    let text = String::from_utf8(bytes).unwrap();
    let mut all: Vec<String> = text.split('\n').map(str::to_owned).collect();
    all.pop();
    all
}

fn records(out: &Out) -> Vec<Value> {
    lines(out).iter().map(|l| json(l.as_bytes())).collect()
}

fn titles(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["type"] == "item")
        .map(|r| r["title"].as_str().unwrap().to_owned())
        .collect()
}

fn fresh(seconds: u32) -> Flavor {
    Flavor {
        max_age: Some(seconds),
        ..Flavor::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rss_watch_prints_each_new_item_once_as_it_appears_and_stops_after_its_duration() {
    let mut o = Origins::start().await;
    let h = o.host(&[("w", fresh(1))], None).await;
    let cache = tempfile::tempdir().unwrap();
    let url = o.feed(h, "w");
    let (mut child, out) = watch(
        cache.path(),
        &["--content", "none", "--duration", "6s", &url],
    );
    // The items present at the start are not printed.
    wait_until("the watch read the feed twice", || o.requests(h, "w") >= 2).await;
    assert!(lines(&out).is_empty());
    o.bump(h, "w");
    wait_until("a line for the new item", || !lines(&out).is_empty()).await;
    o.bump(h, "w");
    o.bump(h, "w");
    wait_until("lines for the next two", || lines(&out).len() >= 3).await;
    let (code, _) = exit_within(&mut child, Duration::from_secs(30));
    assert_eq!(code, Some(0));
    out.to_end();
    let got = records(&out);
    let mut printed = titles(&got);
    // The last two came in one check or in two.
    printed[1..].sort();
    assert_eq!(printed, ["item 3", "item 4", "item 5"], "{got:?}");
    for r in &got {
        assert_eq!(r["type"], "item");
        assert_eq!(r["feed_url"], url.as_str());
        assert!(r["id"].as_str().is_some_and(|i| i.len() == 16), "{r}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_initial_the_items_present_at_the_start_are_printed_first() {
    let mut o = Origins::start().await;
    let h = o.host(&[("w", fresh(60))], None).await;
    let cache = tempfile::tempdir().unwrap();
    let (mut child, out) = watch(
        cache.path(),
        &["--initial", "--duration", "2s", &o.feed(h, "w")],
    );
    let (code, _) = exit_within(&mut child, Duration::from_secs(30));
    assert_eq!(code, Some(0));
    out.to_end();
    assert_eq!(titles(&records(&out)), ["item 2", "item 1"]);
    assert_eq!(o.requests(h, "w"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_and_sigterm_end_a_watch_at_once_with_exit_0_and_whole_lines() {
    for sig in ["INT", "TERM"] {
        let mut o = Origins::start().await;
        let h = o.host(&[("w", fresh(1))], None).await;
        let cache = tempfile::tempdir().unwrap();
        let (mut child, out) = watch(cache.path(), &[&o.feed(h, "w")]);
        wait_until("the watch read the feed", || o.requests(h, "w") >= 1).await;
        o.bump(h, "w");
        wait_until("a line for the new item", || !lines(&out).is_empty()).await;
        let ok = std::process::Command::new("kill")
            .args([&format!("-{sig}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
        let (code, took) = exit_within(&mut child, Duration::from_secs(10));
        assert_eq!(code, Some(0), "SIG{sig}");
        assert!(took < Duration::from_secs(2), "SIG{sig} took {took:?}");
        // Every line whole: what was written ends with a newline, and each line parses.
        out.to_end();
        assert!(out.bytes.lock().unwrap().ends_with(b"\n"));
        assert_eq!(titles(&records(&out)), ["item 3"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_readers_watch_prints_what_it_has_not_acknowledged_and_marks_move_only_by_ack() {
    let mut o = Origins::start().await;
    let h = o.host(&[("w", fresh(60))], None).await;
    let cache = tempfile::tempdir().unwrap();
    let url = o.feed(h, "w");
    let run = |out: &Out, child: &mut Child| {
        let (code, _) = exit_within(child, Duration::from_secs(30));
        assert_eq!(code, Some(0));
        out.to_end();
        records(out)
    };
    let args = [
        "--reader",
        "alerts",
        "--initial",
        "--duration",
        "2s",
        url.as_str(),
    ];
    let (mut child, out) = watch(cache.path(), &args);
    let first = run(&out, &mut child);
    assert_eq!(titles(&first), ["item 2", "item 1"]);
    let delivery = first.last().unwrap();
    assert_eq!(delivery["type"], "delivery", "{first:?}");
    assert_eq!(
        (&delivery["reader"], &delivery["items"]),
        (&"alerts".into(), &2.into())
    );
    // Printing moved no mark: the same run again prints the same items.
    let (mut child, out) = watch(cache.path(), &args);
    assert_eq!(titles(&run(&out, &mut child)), ["item 2", "item 1"]);
    let token = delivery["token"].as_str().unwrap();
    let out = rss_std(cache.path()).args(["ack", token]).output().unwrap();
    assert_eq!(json(&out.stdout)["acknowledged"], 2);
    // Acknowledged, they are never printed again; a new item is, with its delivery.
    let (mut child, out) = watch(cache.path(), &args);
    assert!(run(&out, &mut child).is_empty());
    o.bump(h, "w");
    let out = rss_std(cache.path())
        .args(["cache", "clear"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let (mut child, out) = watch(cache.path(), &args);
    let last = run(&out, &mut child);
    assert_eq!(titles(&last), ["item 3"]);
    assert_eq!(last[1]["type"], "delivery");
    assert_eq!(last[1]["items"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feeds_declared_schedule_is_freshness_and_the_output_says_which_rule_set_it() {
    const TTL: &str = "<rss><channel><title>T</title><ttl>1</ttl><skipHours><hour>0</hour><hour>23</hour></skipHours><skipDays><day>Sunday</day><day>saturday</day></skipDays><item><title>i</title><link>https://x.example/i</link></item></channel></rss>";
    const SY: &str = "<rss xmlns:sy=\"http://purl.org/rss/1.0/modules/syndication/\"><channel><title>T</title><sy:updatePeriod>hourly</sy:updatePeriod><sy:updateFrequency>60</sy:updateFrequency><item><title>i</title><link>https://x.example/i</link></item></channel></rss>";
    let srv = TestServer::with_routes(vec![
        ("/ttl", Reply::xml(TTL)),
        ("/sy", Reply::xml(SY)),
        (
            "/longer",
            Reply::xml(TTL).header("Cache-Control", "max-age=300"),
        ),
        (
            "/no-cache",
            Reply::xml(TTL).header("Cache-Control", "no-cache"),
        ),
    ])
    .await;
    let cache = tempfile::tempdir().unwrap();
    let fetch = |url: &str, extra: &[&str]| {
        let out = rss_std(cache.path())
            .args(extra)
            .args(["fetch", url])
            .output()
            .unwrap();
        json(&out.stdout)["feeds"][0].clone()
    };
    let count = |path: &str| srv.hits_for(path).len();
    let first = fetch(&srv.url("/ttl"), &[]);
    assert_eq!(first["fresh_by"], "ttl", "{first}");
    assert_eq!(first["declared_ttl_seconds"], 60);
    assert_eq!(first["skip_hours"], serde_json::json!([0, 23]));
    assert_eq!(
        first["skip_days"],
        serde_json::json!(["Saturday", "Sunday"])
    );
    let until = rss_date(&first["fresh_until"]);
    let at = chrono::Utc::now();
    assert!(
        until > at + chrono::Duration::seconds(50) && until <= at + chrono::Duration::seconds(60)
    );
    // Served from the cache with no request while it lasts.
    let again = fetch(&srv.url("/ttl"), &[]);
    assert_eq!(
        (again["from_cache"].as_bool(), count("/ttl")),
        (Some(true), 1)
    );
    assert_eq!(again["fresh_by"], "ttl");
    // Capped by --max-freshness, which the output names.
    let capped = fetch(&srv.url("/ttl"), &["--max-freshness", "10s"]);
    assert_eq!(capped["fresh_by"], "max_freshness", "{capped}");
    assert_eq!(fetch(&srv.url("/sy"), &[])["fresh_by"], "sy_update_period");
    assert_eq!(fetch(&srv.url("/sy"), &[])["from_cache"], true);
    // The server's longer max-age wins; its no-cache is the last word.
    assert_eq!(fetch(&srv.url("/longer"), &[])["fresh_by"], "cache_control");
    let no_cache = fetch(&srv.url("/no-cache"), &[]);
    assert_eq!(
        (&no_cache["fresh_until"], &no_cache["fresh_by"]),
        (&Value::Null, &Value::Null)
    );
    fetch(&srv.url("/no-cache"), &[]);
    assert_eq!(count("/no-cache"), 2);
}

fn rss_date(v: &Value) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap())
        .unwrap()
        .with_timezone(&chrono::Utc)
}
