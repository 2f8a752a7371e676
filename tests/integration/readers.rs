//! Readers (issue 29): delivery marks that only an acknowledgement moves, walked end to end
//! through the binary against loopback feeds: no implicit advance, new items however dated,
//! independent readers, a cleared cache, refused tokens, concurrent acknowledgements,
//! `--limit`, duplicate groups, bounds, text output, listing and forgetting.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::helpers::*;

/// A cache and a state directory of a test's own, apart from each other.
pub struct Dirs {
    pub cache: tempfile::TempDir,
    pub state: tempfile::TempDir,
}

impl Dirs {
    pub fn new() -> Dirs {
        Dirs {
            cache: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
        }
    }

    /// `rss` on these directories.
    pub fn rss(&self) -> std::process::Command {
        let mut cmd = rss_blocking();
        cmd.env("RSS_CACHE_DIR", self.cache.path())
            .env("RSS_STATE_DIR", self.state.path())
            .env("NO_COLOR", "1");
        cmd
    }

    /// Runs `rss ARGS`: its exit code and its stdout as JSON.
    pub fn json(&self, args: &[&str]) -> (i32, Value) {
        run_json(self.rss().args(args))
    }

    /// `rss fetch --reader READER --unseen ARGS`, which must succeed.
    pub fn unseen(&self, reader: &str, args: &[&str]) -> Value {
        let mut all = vec!["fetch", "--reader", reader, "--unseen"];
        all.extend_from_slice(args);
        let (code, out) = self.json(&all);
        assert_eq!(code, 0, "{out}");
        out
    }

    /// `rss ack TOKEN`, which must succeed: (acknowledged, already_acknowledged).
    pub fn ack(&self, token: &str) -> (u64, u64) {
        let (code, out) = self.json(&["ack", token]);
        assert_eq!(code, 0, "{out}");
        (
            out["acknowledged"].as_u64().unwrap(),
            out["already_acknowledged"].as_u64().unwrap(),
        )
    }
}

/// Runs `cmd`: its exit code and stdout as JSON (stderr's JSON error when stdout is empty).
pub fn run_json(cmd: &mut std::process::Command) -> (i32, Value) {
    let out = cmd.output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    let body = if out.stdout.is_empty() {
        &out.stderr
    } else {
        &out.stdout
    };
    (code, json(body))
}

/// The titles of every item of `out`, in order.
pub fn titles(out: &Value) -> Vec<String> {
    out["feeds"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["items"].as_array().unwrap().iter())
        .map(|i| i["title"].as_str().unwrap_or("").to_owned())
        .collect()
}

pub fn token(out: &Value) -> String {
    out["delivery"]["token"]
        .as_str()
        .unwrap_or_else(|| panic!("no token in {}", out["delivery"]))
        .to_owned()
}

/// An RSS document of `items` (title, and an RFC 2822 date or none), each linking to
/// `https://news.example/TITLE`.
pub fn rss_of(items: &[(&str, Option<&str>)]) -> String {
    let mut body = String::from("<rss version=\"2.0\"><channel><title>News</title>");
    for (title, date) in items {
        body.push_str(&format!(
            "<item><title>{title}</title><link>https://news.example/{title}</link>{}</item>",
            date.map(|d| format!("<pubDate>{d}</pubDate>"))
                .unwrap_or_default()
        ));
    }
    body.push_str("</channel></rss>");
    body
}

/// A loopback feed whose document a test changes as it goes.
pub struct LiveFeed {
    pub body: Arc<Mutex<String>>,
    pub srv: TestServer,
}

impl LiveFeed {
    pub async fn start(body: String) -> LiveFeed {
        let shared = Arc::new(Mutex::new(body));
        let serve = shared.clone();
        let srv = TestServer::start(move |_| Reply::xml(serve.lock().unwrap().clone())).await;
        LiveFeed { body: shared, srv }
    }

    pub fn set(&self, body: String) {
        *self.body.lock().unwrap() = body;
    }

    pub fn url(&self) -> String {
        self.srv.url("/feed.xml")
    }
}

const D1: &str = "Mon, 01 Jun 2026 10:00:00 GMT";
const D2: &str = "Tue, 02 Jun 2026 10:00:00 GMT";
const D3: &str = "Wed, 03 Jun 2026 10:00:00 GMT";
const D4: &str = "Thu, 04 Jun 2026 10:00:00 GMT";
const D5: &str = "Fri, 05 Jun 2026 10:00:00 GMT";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_marks_nothing_and_only_an_acknowledgement_moves_the_marks() {
    let feed = LiveFeed::start(rss_of(&[("a", Some(D1)), ("b", Some(D2)), ("c", Some(D3))])).await;
    let d = Dirs::new();
    let url = feed.url();
    // No implicit advance: the same items, however often they are read.
    let first = d.unseen("digest", &[&url]);
    let again = d.unseen("digest", &[&url]);
    assert_eq!(titles(&first), ["c", "b", "a"]);
    assert_eq!(titles(&again), titles(&first));
    assert_eq!(first["delivery"]["reader"], "digest");
    assert_eq!(first["delivery"]["items"], 3);
    assert_ne!(
        token(&first),
        token(&again),
        "each output is its own delivery"
    );
    // The acknowledgement records them; the same token again records nothing new.
    assert_eq!(d.ack(&token(&first)), (3, 0));
    assert_eq!(d.ack(&token(&first)), (0, 3));
    // The other delivery of the same items is a success that records nothing new.
    assert_eq!(d.ack(&token(&again)), (0, 3));
    let after = d.unseen("digest", &[&url]);
    assert!(titles(&after).is_empty(), "{after}");
    assert_eq!(after["truncation"]["items_omitted_as_seen"], 3);
    assert_eq!(after["delivery"]["items"], 0);
    assert!(after["delivery"]["token"].is_null());
    // Without --unseen a reader's fetch returns everything, with a token for it.
    let (code, all) = d.json(&["fetch", "--reader", "digest", &url]);
    assert_eq!(code, 0);
    assert_eq!(titles(&all).len(), 3);
    assert_eq!(d.ack(&token(&all)), (0, 3));
    // A fetch without a reader says nothing of deliveries.
    let (_, plain) = d.json(&["fetch", &url]);
    assert!(plain["delivery"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_items_are_delivered_however_they_are_dated_and_readers_are_independent() {
    let feed = LiveFeed::start(rss_of(&[("a", Some(D1)), ("b", Some(D2))])).await;
    let d = Dirs::new();
    let url = feed.url();
    let seen = d.unseen("alice", &[&url]);
    assert_eq!(d.ack(&token(&seen)), (2, 0));
    // Today the feed gained an item it dates 2001 and one with no date at all.
    feed.set(rss_of(&[
        ("a", Some(D1)),
        ("b", Some(D2)),
        ("backdated", Some("Mon, 01 Jan 2001 00:00:00 GMT")),
        ("undated", None),
    ]));
    let new = d.unseen("alice", &[&url]);
    assert_eq!(titles(&new), ["backdated", "undated"]);
    // Another reader has acknowledged nothing: it sees everything.
    let bob = d.unseen("bob", &[&url]);
    assert_eq!(titles(&bob).len(), 4);
    // And alice's acknowledgement did not move bob.
    assert_eq!(d.ack(&token(&new)), (2, 0));
    assert_eq!(titles(&d.unseen("bob", &[&url])).len(), 4);
    assert!(titles(&d.unseen("alice", &[&url])).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cleared_cache_forgets_no_reader() {
    let feed = LiveFeed::start(rss_of(&[("a", Some(D1)), ("b", Some(D2))])).await;
    let d = Dirs::new();
    let url = feed.url();
    let out = d.unseen("digest", &[&url]);
    assert_eq!(d.ack(&token(&out)), (2, 0));
    let (code, cleared) = d.json(&["cache", "clear"]);
    assert_eq!(code, 0);
    assert!(cleared["removed"].as_u64().unwrap() >= 1, "{cleared}");
    let hits = feed.srv.count();
    let after = d.unseen("digest", &[&url]);
    // The feed was read again from its origin (nothing cached), and nothing came back.
    assert_eq!(feed.srv.count(), hits + 1);
    assert!(titles(&after).is_empty(), "{after}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_altered_expired_or_foreign_token_is_refused_and_records_nothing() {
    let feed = LiveFeed::start(rss_of(&[("a", Some(D1)), ("b", Some(D2))])).await;
    let d = Dirs::new();
    let url = feed.url();
    let t = token(&d.unseen("digest", &[&url]));
    let refused = |args: &[&str], reason: &str| {
        let (code, err) = d.json(args);
        assert_eq!(code, 2, "{err}");
        assert_eq!(err["code"], "USAGE_ERROR", "{err}");
        assert_eq!(err["details"]["reason"], reason, "{err}");
    };
    // One character changed, anywhere.
    for at in [6, t.len() / 2, t.len() - 2] {
        let mut b = t.clone().into_bytes();
        b[at] = if b[at] == b'A' { b'B' } else { b'A' };
        refused(&["ack", &String::from_utf8(b).unwrap()], "altered");
    }
    refused(&["ack", "hello"], "not_a_token");
    // One good token beside a bad one: nothing is recorded.
    refused(&["ack", &t, "rss1.x.y"], "altered");
    // A token of another state directory (its own key).
    let other = Dirs::new();
    let foreign = token(&other.unseen("digest", &[&url]));
    refused(&["ack", &foreign], "altered");
    // Past its lifetime (7 days).
    let (code, err) = run_json(d.rss().args(["ack", &t]).env(
        "RSS_TEST_WALL_CLOCK_SKEW_MS",
        (8 * 86_400_000u64).to_string(),
    ));
    assert_eq!(
        (code, &err["details"]["reason"]),
        (2, &Value::from("expired"))
    );
    // Nothing recorded by any of them: every item still comes.
    assert_eq!(titles(&d.unseen("digest", &[&url])).len(), 2);
    let (_, listed) = d.json(&["readers"]);
    assert!(listed["readers"][0]["feeds"].as_array().unwrap().is_empty());
    // And the good token still works.
    assert_eq!(d.ack(&t), (2, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_processes_acknowledging_at_once_are_all_recorded() {
    let items: Vec<(String, Option<&str>)> =
        (0..6).map(|i| (format!("story{i}"), Some(D1))).collect();
    let refs: Vec<(&str, Option<&str>)> = items.iter().map(|(t, d)| (t.as_str(), *d)).collect();
    let feed = LiveFeed::start(rss_of(&refs)).await;
    let d = Dirs::new();
    let url = feed.url();
    // Four deliveries of one reader and one feed, each of its own item.
    let tokens: Vec<String> = (0..4)
        .map(|i| {
            let out = d.unseen("digest", &["--query", &format!("story{i}"), &url]);
            assert_eq!(titles(&out), [format!("story{i}")]);
            token(&out)
        })
        .collect();
    let children: Vec<std::process::Child> = tokens
        .iter()
        .map(|t| {
            d.rss()
                .args(["ack", t])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success());
        assert_eq!(json(&out.stdout)["acknowledged"], 1);
    }
    let (_, listed) = d.json(&["readers"]);
    assert_eq!(listed["readers"][0]["feeds"][0]["ids"], 4, "{listed}");
    let rest = d.unseen("digest", &[&url]);
    assert_eq!(titles(&rest), ["story4", "story5"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limit_counts_after_unseen_so_the_next_newest_come_next() {
    let feed = LiveFeed::start(rss_of(&[
        ("one", Some(D1)),
        ("two", Some(D2)),
        ("three", Some(D3)),
        ("four", Some(D4)),
        ("five", Some(D5)),
    ]))
    .await;
    let d = Dirs::new();
    let url = feed.url();
    let first = d.unseen("digest", &["--limit", "2", &url]);
    assert_eq!(titles(&first), ["five", "four"]);
    assert_eq!(d.ack(&token(&first)), (2, 0));
    let next = d.unseen("digest", &["--limit", "2", &url]);
    assert_eq!(titles(&next), ["three", "two"]);
    assert_eq!(next["truncation"]["items_omitted_as_seen"], 2);
    assert_eq!(next["truncation"]["items_omitted_by_limit"], 1);
    // --since and --query come first: an old item is not "unseen" once cut by --since.
    let since = d.unseen("digest", &["--since", "2026-06-03", &url]);
    assert_eq!(titles(&since), ["three"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledging_an_item_marks_its_duplicates_in_other_feeds() {
    // Two feeds carry one story (the same address); b has one of its own too.
    let story =
        "<item><title>Shared</title><link>https://news.example/shared?utm_source=x</link></item>";
    let a = format!("<rss><channel><title>A</title>{story}</channel></rss>");
    let b = format!(
        "<rss><channel><title>B</title><item><title>Own</title><link>https://b.example/own</link></item>{}</channel></rss>",
        story.replace("?utm_source=x", "")
    );
    let srv = TestServer::with_routes(vec![("/a", Reply::xml(a)), ("/b", Reply::xml(b))]).await;
    let d = Dirs::new();
    let (ua, ub) = (srv.url("/a"), srv.url("/b"));
    let out = d.unseen("digest", &["--dedupe", "drop", &ua, &ub]);
    // b's copy is dropped as a duplicate of a's: the output has two items.
    assert_eq!(titles(&out), ["Shared", "Own"]);
    assert_eq!(out["delivery"]["items"], 2);
    // Acknowledging records three: b's copy through its group.
    assert_eq!(d.ack(&token(&out)), (3, 0));
    let b_alone = d.unseen("digest", &[&ub]);
    assert!(titles(&b_alone).is_empty(), "{b_alone}");
}

/// A feed of `n` stories of `site`, each with its own title and link and the body every
/// item of it carries: "Read more…".
pub fn teasers(site: &str, n: usize) -> String {
    let mut body = format!("<rss version=\"2.0\"><channel><title>{site}</title>");
    for i in 0..n {
        body.push_str(&format!(
            "<item><title>{site} story {i}: {}</title><link>https://{site}.example/{i}</link>\
             <pubDate>Mon, 01 Jun 2026 10:{:02}:00 GMT</pubDate>\
             <description>Read more…</description></item>",
            "what happened today and why it matters ".repeat(3),
            59 - i
        ));
    }
    body.push_str("</channel></rss>");
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_35_a_shared_teaser_body_hides_no_story_that_was_never_shown() {
    let srv = TestServer::with_routes(vec![
        ("/a", Reply::xml(teasers("alpha", 6))),
        ("/b", Reply::xml(teasers("beta", 6))),
    ])
    .await;
    let d = Dirs::new();
    let (ua, ub) = (srv.url("/a"), srv.url("/b"));
    // Two newest of each feed: four stories, none the same as another.
    let out = d.unseen("digest", &["--dedupe", "drop", "--limit", "2", &ua, &ub]);
    assert_eq!(out["total_items"], 4, "{}", out["duplicates"]);
    assert!(out["duplicates"].as_array().unwrap().is_empty());
    // The acknowledgement marks what was delivered, nothing more.
    assert_eq!(d.ack(&token(&out)), (4, 0));
    let rest = d.unseen("digest", &["--dedupe", "drop", &ua, &ub]);
    assert_eq!(rest["total_items"], 8, "{}", rest["duplicates"]);
    assert_eq!(rest["truncation"]["items_omitted_as_seen"], 4);
    assert_eq!(d.ack(&token(&rest)), (8, 0));
    assert_eq!(d.unseen("digest", &[&ua, &ub])["total_items"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marks_are_bounded_by_count_and_by_age_sparing_the_latest_document() {
    let d = Dirs::new();
    let dir = tempfile::tempdir().unwrap();
    // Count: a feed of more items than a reader keeps marks for.
    let n = rss::ops::MAX_MARKS_PER_FEED + 50;
    let big = dir.path().join("big.xml");
    let items: Vec<String> = (0..n).map(|i| format!("i{i}")).collect();
    let refs: Vec<(&str, Option<&str>)> = items.iter().map(|t| (t.as_str(), None)).collect();
    std::fs::write(&big, rss_of(&refs)).unwrap();
    let big = big.to_str().unwrap();
    let out = d.unseen("digest", &["--content", "none", big]);
    assert_eq!(out["total_items"], n);
    assert_eq!(d.ack(&token(&out)), (n as u64, 0));
    let (_, listed) = d.json(&["readers"]);
    assert_eq!(
        listed["readers"][0]["feeds"][0]["ids"],
        rss::ops::MAX_MARKS_PER_FEED
    );
    let again = d.unseen("digest", &["--content", "none", big]);
    assert_eq!(again["total_items"], 50, "the bound, no more");

    // Age: a mark whose item left the feed goes after 180 days; one still there stays.
    let small = dir.path().join("small.xml");
    std::fs::write(&small, rss_of(&[("a", None), ("b", None), ("c", None)])).unwrap();
    let small = small.to_str().unwrap();
    let t = token(&d.unseen("aging", &[small]));
    assert_eq!(d.ack(&t), (3, 0));
    std::fs::write(small, rss_of(&[("b", None), ("c", None), ("d", None)])).unwrap();
    let later = (rss::ops::MARK_MAX_AGE.as_millis() as u64 + 86_400_000).to_string();
    let run_later = |args: &[&str]| {
        run_json(
            d.rss()
                .args(args)
                .env("RSS_TEST_WALL_CLOCK_SKEW_MS", &later),
        )
    };
    let (code, new) = run_later(&["fetch", "--reader", "aging", "--unseen", small]);
    assert_eq!(code, 0);
    assert_eq!(titles(&new), ["d"]);
    let (code, acked) = run_later(&["ack", &token(&new)]);
    assert_eq!((code, &acked["acknowledged"]), (0, &Value::from(1)));
    let (_, listed) = run_later(&["readers"]);
    let aging = listed["readers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["reader"] == "aging")
        .unwrap()
        .clone();
    // a went (gone from the feed, and old); b and c stayed (still in it), and d.
    assert_eq!(aging["feeds"][0]["ids"], 3, "{aging}");
    let (_, none) = run_later(&["fetch", "--reader", "aging", "--unseen", small]);
    assert!(titles(&none).is_empty(), "{none}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_output_ends_with_the_exact_ack_command_and_it_works() {
    let feed = LiveFeed::start(rss_of(&[("a", Some(D1)), ("b", Some(D2))])).await;
    let d = Dirs::new();
    let url = feed.url();
    let state = d.state.path().to_str().unwrap().to_owned();
    let out = d
        .rss()
        .env_remove("RSS_STATE_DIR")
        .args([
            "--state-dir",
            &state,
            "fetch",
            "--reader",
            "digest",
            "--unseen",
        ])
        .args(["--format", "text", &url])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let last = text.trim_end().lines().last().unwrap().trim().to_owned();
    assert!(
        last.starts_with(&format!("rss --state-dir {state} ack rss1.")),
        "{text}"
    );
    assert!(text.contains("acknowledge them"), "{text}");
    // The command, as printed, records the two items.
    let words: Vec<&str> = last.split(' ').collect();
    let (code, acked) = run_json(d.rss().env_remove("RSS_STATE_DIR").args(&words[1..]));
    assert_eq!(
        (code, &acked["acknowledged"]),
        (0, &Value::from(2)),
        "{acked}"
    );
    let again = d
        .rss()
        .args([
            "fetch", "--reader", "digest", "--unseen", "--format", "text", &url,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(again.stdout).unwrap();
    assert!(
        text.trim_end().ends_with("Nothing new for reader digest."),
        "{text}"
    );
}

#[test]
fn readers_need_a_valid_name_and_ndjson_a_summary_record() {
    let d = Dirs::new();
    let feed = fixture_path("rss20.xml");
    let feed = feed.to_str().unwrap();
    for (args, what) in [
        (vec!["fetch", "--unseen", feed], "--reader"),
        (
            vec!["fetch", "--reader", "a b", "--unseen", feed],
            "reader name",
        ),
        (
            vec!["fetch", "--reader", &"x".repeat(65), feed],
            "reader name",
        ),
        (
            vec!["fetch", "--reader", "ok", "--format", "ndjson", feed],
            "--ndjson-records",
        ),
        (vec!["ack"], "required"),
    ] {
        let out = d.rss().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(what), "{args:?}: {err}");
    }
    // With --ndjson-records the summary carries the delivery.
    let out = d
        .rss()
        .args(["fetch", "--reader", "ok", "--unseen", "--format", "ndjson"])
        .args(["--ndjson-records", feed])
        .output()
        .unwrap();
    let last = String::from_utf8(out.stdout).unwrap();
    let summary = json(last.trim_end().lines().last().unwrap().as_bytes());
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["delivery"]["items"], 3);
    // Nothing was written to the cache directory for readers.
    assert!(!d.cache.path().join("readers").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_lists_marks_and_pending_deliveries_and_forgets() {
    let feed = LiveFeed::start(rss_of(&[("a", Some(D1)), ("b", Some(D2))])).await;
    let d = Dirs::new();
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.xml");
    std::fs::write(&other, rss_of(&[("x", None)])).unwrap();
    let other = other.to_str().unwrap();
    let url = feed.url();
    let both = d.unseen("digest", &[&url, other]);
    assert_eq!(d.ack(&token(&both)), (3, 0));
    let _pending = d.unseen("digest", &[&url]);
    let _ = d.unseen("triage", &[&url]);
    let (code, listed) = d.json(&["readers"]);
    assert_eq!(code, 0);
    assert!(listed["store"].as_str().unwrap().starts_with("file:"));
    let r = &listed["readers"];
    assert_eq!(r.as_array().unwrap().len(), 2, "{listed}");
    assert_eq!(r[0]["reader"], "digest");
    assert!(r[0]["scope"].is_null());
    let feeds = r[0]["feeds"].as_array().unwrap();
    assert_eq!(feeds.len(), 2);
    let web = feeds
        .iter()
        .find(|f| f["feed_url"] == url.as_str())
        .unwrap();
    assert_eq!(web["ids"], 2);
    assert!(web["oldest_mark"].as_str().unwrap().ends_with('Z'));
    // The second fetch of digest found nothing new: no delivery waits. triage's does.
    assert!(r[0]["pending_deliveries"].as_array().unwrap().is_empty());
    assert_eq!(r[1]["pending_deliveries"][0]["items"], 2);
    // The schemas describe what was printed.
    let (_, schema) = d.json(&["schema", "--command", "readers"]);
    let v = jsonschema::validator_for(&schema).unwrap();
    assert!(v.is_valid(&listed));
    // Forget one feed, then the whole reader.
    let (_, f) = d.json(&["readers", "forget", "digest", other]);
    assert_eq!(
        (f["feeds"].as_u64(), f["deliveries"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(titles(&d.unseen("digest", &[&url, other])), ["x"]);
    let (_, f) = d.json(&["readers", "forget", "digest"]);
    assert_eq!(f["feeds"], 1, "{f}");
    assert!(f["deliveries"].as_u64().unwrap() >= 1);
    let (_, schema) = d.json(&["schema", "--command", "readers-forget"]);
    assert!(jsonschema::validator_for(&schema).unwrap().is_valid(&f));
    assert_eq!(titles(&d.unseen("digest", &[&url])).len(), 2);
    // A forgotten reader's token is refused.
    let (code, err) = d.json(&["ack", &token(&both)]);
    assert_eq!(
        (code, &err["details"]["reason"]),
        (2, &Value::from("unknown"))
    );
    let (_, schema) = d.json(&["schema", "--command", "ack"]);
    assert!(schema["properties"]["acknowledged"].is_object());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_shares_its_readers_through_redis() {
    let Ok(store) = std::env::var("RSS_TEST_REDIS") else {
        eprintln!("skipped: RSS_TEST_REDIS is not set (.ci/run starts a Redis server and sets it)");
        return;
    };
    let feed = LiveFeed::start(rss_of(&[("a", Some(D1)), ("b", Some(D2))])).await;
    let url = feed.url();
    // Two machines: each its own cache and state directory, one Redis.
    let (one, two) = (Dirs::new(), Dirs::new());
    let reader = format!(
        "fleet-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    );
    let on = |d: &Dirs, args: &[&str]| run_json(d.rss().env("RSS_GATE_STORE", &store).args(args));
    let (code, out) = on(&one, &["fetch", "--reader", &reader, "--unseen", &url]);
    assert_eq!((code, titles(&out).len()), (0, 2), "{out}");
    let (code, acked) = on(&two, &["ack", &token(&out)]);
    assert_eq!(
        (code, &acked["acknowledged"]),
        (0, &Value::from(2)),
        "{acked}"
    );
    let (_, after) = on(&one, &["fetch", "--reader", &reader, "--unseen", &url]);
    assert!(titles(&after).is_empty(), "{after}");
    let (_, listed) = on(&two, &["readers"]);
    assert!(listed["store"].as_str().unwrap().starts_with("redis://"));
    assert!(
        listed["readers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["reader"] == reader.as_str() && r["feeds"][0]["ids"] == 2),
        "{listed}"
    );
    // Nothing of it is in either state directory, and a file store's token is refused.
    assert!(
        !one.state
            .path()
            .join("readers")
            .join(format!("_~{reader}"))
            .exists()
    );
    let local = token(&one.unseen(&reader, &[&url]));
    let (code, err) = on(&one, &["ack", &local]);
    assert_eq!(
        (code, &err["details"]["reason"]),
        (2, &Value::from("altered"))
    );
    let (code, _) = on(&one, &["readers", "forget", &reader]);
    assert_eq!(code, 0);
}
