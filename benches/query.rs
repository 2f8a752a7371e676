//! `--query` against a long body (issue 35): one item whose body is 4 MB of one repeated
//! word, matched by one word, by a 500-word phrase (1,001 characters, within the query's
//! stated limits) that fails only at its last word, and by no query at all, through the whole
//! per-feed pipeline. A phrase is matched in time linear in the body whatever its length, so
//! the three columns should stay close. Prints figures; asserts nothing.
//!
//! Run: `cargo bench --bench query`

use std::time::{Duration, Instant};

use rss::ops::FetchRequest;
use rss::{ContentFormat, RenderOptions, Selection};

const BODY_BYTES: usize = 4 << 20;

fn feed() -> Vec<u8> {
    let words = "a ".repeat(BODY_BYTES / 2);
    format!(
        "<rss version=\"2.0\"><channel><title>Long</title><item><title>One long item</title>\
         <link>https://long.example/1</link><description>{words}</description></item>\
         </channel></rss>"
    )
    .into_bytes()
}

fn selection(query: Option<String>) -> Selection {
    FetchRequest {
        query,
        ..FetchRequest::default()
    }
    .options()
    .expect("the query parses")
    .selection
}

fn run(body: &[u8], selection: &Selection) -> usize {
    rss::internals::process(
        "https://long.example/feed.xml",
        body.to_vec().into(),
        Some("application/rss+xml"),
        None,
        selection,
        &RenderOptions {
            format: ContentFormat::None,
            max_content_chars: None,
        },
    )
    .expect("the feed parses")
    .built
    .items
    .len()
}

fn best_of(runs: usize, mut f: impl FnMut() -> usize) -> (Duration, usize) {
    let mut best = Duration::MAX;
    let mut last = 0;
    for _ in 0..runs {
        let t = Instant::now();
        last = f();
        best = best.min(t.elapsed());
    }
    (best, last)
}

fn main() {
    let body = feed();
    let phrase = format!("\"{} b\"", ["a"; 499].join(" "));
    let cases = [
        ("no query", None),
        ("one word (a)", Some("a".to_owned())),
        (
            "a 500-word phrase failing at its last word",
            Some(phrase.clone()),
        ),
    ];
    println!(
        "one item, {:.1} MB body of one repeated word; phrase query of {} characters",
        body.len() as f64 / 1e6,
        phrase.chars().count()
    );
    for (name, query) in cases {
        let sel = selection(query);
        let (d, items) = best_of(3, || run(&body, &sel));
        println!(
            "  {name:<45} {:>7.0} ms  ({items} item kept)",
            d.as_secs_f64() * 1e3
        );
    }
}
