//! `--unseen` against the same fetch without it (issue 29): 200 feeds of 200 items each (local
//! files, so nothing but `rss` is measured), for a reader holding 40,000 marks (200 per feed,
//! of items that have since left the feeds, so both runs print the same 40,000 items). Runs
//! alternate; best and median of each are printed side by side, with `rss ack` of a 40,000-item
//! delivery: the first (every feed's marks a new file) and then ones that replace the files
//! (best and median of `ACK_RUNS`, each of a new day's documents), beside the same with the
//! binary `RSS_BIN_BEFORE` names when it is set (another build, the runs alternating).
//! Asserts nothing.
//!
//! Run: `cargo bench --bench readers`.

mod origin;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use origin::rss_bin::rss_blocking;

const FEEDS: usize = 200;
const ITEMS: usize = 200;
const RUNS: usize = 7;
const ACK_RUNS: usize = 5;

/// Feed `k`'s document of `ITEMS` items numbered from `first`.
fn document(k: usize, first: usize) -> String {
    let mut body = format!("<rss version=\"2.0\"><channel><title>Feed {k}</title>");
    for i in first..first + ITEMS {
        body.push_str(&format!(
            "<item><title>Story {i} of feed {k}</title><link>https://feed{k}.example/{i}</link>\
             <guid>tag:feed{k}.example,2026:{i}</guid>\
             <pubDate>Mon, 01 Jun 2026 {:02}:{:02}:00 GMT</pubDate>\
             <description>&lt;p&gt;{}&lt;/p&gt;</description></item>",
            (i / 60) % 24,
            i % 60,
            "A sentence of the story, with a few words in it. ".repeat(6)
        ));
    }
    body.push_str("</channel></rss>");
    body
}

fn write_feeds(dir: &Path, first: usize) -> Vec<String> {
    (0..FEEDS)
        .map(|k| {
            let p = dir.join(format!("feed{k}.xml"));
            std::fs::write(&p, document(k, first)).unwrap();
            p.display().to_string()
        })
        .collect()
}

fn rss(state: &Path, cache: &Path) -> Command {
    let mut cmd = rss_blocking();
    cmd.env("RSS_STATE_DIR", state).env("RSS_CACHE_DIR", cache);
    cmd
}

/// `rss_blocking`'s command with another binary.
fn rss_with(bin: Option<&Path>, state: &Path, cache: &Path) -> Command {
    let mut cmd = rss(state, cache);
    if let Some(bin) = bin {
        let mut other = Command::new(bin);
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => other.env(k, v),
                None => other.env_remove(k),
            };
        }
        cmd = other;
    }
    cmd
}

/// Runs `cmd` with stdout thrown away; its wall time.
fn timed(mut cmd: Command) -> Duration {
    let started = Instant::now();
    let st = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "{cmd:?}");
    started.elapsed()
}

fn stats(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (ms(v[0]), ms(v[v.len() / 2]))
}

/// Fetches `feeds` for `reader` and acknowledges the delivery; how long the ack took.
fn deliver_and_ack(state: &Path, cache: &Path, reader: &str, feeds: &[String]) -> Duration {
    deliver_and_ack_with(None, state, cache, reader, feeds)
}

fn deliver_and_ack_with(
    bin: Option<&Path>,
    state: &Path,
    cache: &Path,
    reader: &str,
    feeds: &[String],
) -> Duration {
    let out = rss_with(bin, state, cache)
        .args(["fetch", "--content", "none", "--reader", reader, "--unseen"])
        .args(feeds)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let token = v["delivery"]["token"].as_str().unwrap().to_owned();
    let mut ack = rss_with(bin, state, cache);
    ack.args(["ack", &token]);
    timed(ack)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let (feeds_dir, state, cache): (PathBuf, PathBuf, PathBuf) = (
        dir.path().join("feeds"),
        dir.path().join("state"),
        dir.path().join("cache"),
    );
    std::fs::create_dir_all(&feeds_dir).unwrap();
    // Yesterday's documents, delivered and acknowledged: 40,000 marks.
    let feeds = write_feeds(&feeds_dir, 0);
    let ack_time = deliver_and_ack(&state, &cache, "bench", &feeds);
    // Today's: 200 new items in each feed, none of them marked.
    write_feeds(&feeds_dir, ITEMS);
    let (mut plain, mut unseen) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let mut a = rss(&state, &cache);
        a.arg("fetch").args(&feeds);
        plain.push(timed(a));
        let mut b = rss(&state, &cache);
        b.args(["fetch", "--reader", "bench", "--unseen"])
            .args(&feeds);
        unseen.push(timed(b));
    }
    // Acknowledgements on a state directory of their own per binary, runs alternating.
    let before = std::env::var_os("RSS_BIN_BEFORE").map(PathBuf::from);
    let bins: Vec<Option<&Path>> = std::iter::once(None)
        .chain(before.as_deref().map(Some))
        .collect();
    let ack_dir = dir.path().join("acks");
    let mut series: Vec<(Duration, Vec<Duration>)> = vec![(Duration::ZERO, Vec::new()); bins.len()];
    for day in 0..=ACK_RUNS {
        for (b, bin) in bins.iter().enumerate() {
            let base = ack_dir.join(b.to_string());
            let feeds_b = base.join("feeds");
            std::fs::create_dir_all(&feeds_b).unwrap();
            let feeds_b = write_feeds(&feeds_b, ITEMS * day);
            let took = deliver_and_ack_with(
                *bin,
                &base.join("state"),
                &base.join("cache"),
                "bench",
                &feeds_b,
            );
            if day == 0 {
                series[b].0 = took;
            } else {
                series[b].1.push(took);
            }
        }
    }
    let (pb, pm) = stats(plain);
    let (ub, um) = stats(unseen);
    println!(
        "{FEEDS} feeds x {ITEMS} items (local files), reader with {} marks, none in today's documents; best / median of {RUNS}:",
        FEEDS * ITEMS
    );
    println!("  rss fetch FEEDS                          {pb:7.1} ms / {pm:7.1} ms");
    println!(
        "  rss fetch --reader bench --unseen FEEDS  {ub:7.1} ms / {um:7.1} ms  ({:.2}x / {:.2}x)",
        ub / pb,
        um / pm
    );
    println!(
        "  rss ack of the {}-item delivery that made the marks: {:.1} ms",
        FEEDS * ITEMS,
        ack_time.as_secs_f64() * 1000.0
    );
    for ((first, later), bin) in series.into_iter().zip(&bins) {
        let (ab, am) = stats(later);
        println!(
            "  {}: rss ack of a first {n}-item delivery (200 new marks files) {:.1} ms; of a later one (200 files replaced), best / median of {ACK_RUNS}: {ab:.1} ms / {am:.1} ms",
            bin.map_or("this build".to_owned(), |b| format!(
                "RSS_BIN_BEFORE {}",
                b.display()
            )),
            first.as_secs_f64() * 1000.0,
            n = FEEDS * ITEMS
        );
    }
}
