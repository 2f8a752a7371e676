//! Article extraction side by side on the readability test pages: every candidate crate's
//! raw output, scored by token F1 against each page's expected article text, with
//! precision, recall and pages per second. Asserts nothing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The corpus: `../shared/corpora/readability-pages/pages` from the repository's root, or
/// the first argument.
fn corpus() -> PathBuf {
    std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/corpora/readability-pages/pages")
    })
}

/// The page URL the readability test suite gives every page.
const PAGE_URL: &str = "http://fakehost/test/page.html";

struct Page {
    name: String,
    source: String,
    expected: Vec<String>,
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Precision, recall and F1 of `got` against `want`, as bags of words.
fn score(got: &[String], want: &[String]) -> (f64, f64, f64) {
    let mut bag: HashMap<&str, i64> = HashMap::new();
    for w in want {
        *bag.entry(w).or_default() += 1;
    }
    let mut common = 0i64;
    for w in got {
        if let Some(n) = bag.get_mut(w.as_str())
            && *n > 0
        {
            *n -= 1;
            common += 1;
        }
    }
    if got.is_empty() || want.is_empty() {
        let both = got.is_empty() && want.is_empty();
        return if both { (1.0, 1.0, 1.0) } else { (0.0, 0.0, 0.0) };
    }
    let p = common as f64 / got.len() as f64;
    let r = common as f64 / want.len() as f64;
    let f = if p + r == 0.0 { 0.0 } else { 2.0 * p * r / (p + r) };
    (p, r, f)
}

fn load() -> Vec<Page> {
    let dir = corpus();
    let mut pages = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    names.sort();
    for p in names {
        let meta: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p.join("expected-metadata.json")).unwrap())
                .unwrap();
        if meta["readerable"] != true {
            continue;
        }
        let source = String::from_utf8_lossy(&std::fs::read(p.join("source.html")).unwrap())
            .into_owned();
        let expected = std::fs::read_to_string(p.join("expected.html")).unwrap();
        pages.push(Page {
            name: p.file_name().unwrap().to_string_lossy().into_owned(),
            expected: words(&rss::internals::html_to_plain(&expected)),
            source,
        });
    }
    pages
}

type Extract = fn(&str) -> String;

fn dom_smoothie(html: &str) -> String {
    let mut r = match dom_smoothie::Readability::new(html, Some(PAGE_URL), None) {
        Ok(r) => r,
        Err(_) => return String::new(),
    };
    r.parse().map(|a| a.content.to_string()).unwrap_or_default()
}

fn trafilatura(html: &str) -> String {
    let opts = trafilatura::Options::default()
        .with_url(url::Url::parse(PAGE_URL).unwrap());
    trafilatura::extract(html, &opts)
        .map(|r| r.content_html)
        .unwrap_or_default()
}

fn trafilatura_fallback(html: &str) -> String {
    let opts = trafilatura::Options::default()
        .with_url(url::Url::parse(PAGE_URL).unwrap())
        .with_fallback(true);
    trafilatura::extract(html, &opts)
        .map(|r| r.content_html)
        .unwrap_or_default()
}

fn rs_trafilatura(html: &str) -> String {
    let opts = rs_trafilatura::Options {
        url: Some(PAGE_URL.to_owned()),
        ..rs_trafilatura::Options::default()
    };
    match rs_trafilatura::extract_with_options(html, &opts) {
        Ok(r) => r.content_html.unwrap_or(r.content_text),
        Err(_) => String::new(),
    }
}

fn readable_readability(html: &str) -> String {
    let (node, _) = readable_readability::Readability::new()
        .base_url(url::Url::parse(PAGE_URL).ok())
        .parse(html);
    node.to_string()
}

fn rss_article(html: &str) -> String {
    rss::internals::article_content(html, PAGE_URL, rss::ContentFormat::Html).unwrap_or_default()
}

fn rss_article_text(html: &str) -> String {
    rss::internals::article_content(html, PAGE_URL, rss::ContentFormat::Text).unwrap_or_default()
}

fn rss_article_markdown(html: &str) -> String {
    rss::internals::article_content(html, PAGE_URL, rss::ContentFormat::Markdown)
        .unwrap_or_default()
}

fn main() {
    let pages = load();
    println!("{} readerable pages", pages.len());
    let candidates: Vec<(&str, Extract)> = vec![
        ("dom_smoothie 0.19", dom_smoothie),
        ("trafilatura 0.6", trafilatura),
        ("trafilatura 0.6 +fallback", trafilatura_fallback),
        ("rs-trafilatura 0.2", rs_trafilatura),
        ("readable-readability 0.4", readable_readability),
        ("rss article (--content html)", rss_article),
        ("rss article (--content text)", rss_article_text),
        ("rss article (--content markdown)", rss_article_markdown),
    ];
    let only = std::env::args().nth(2);
    if let Some(name) = only.as_deref().and_then(|o| o.strip_prefix("diff:")) {
        let page = pages.iter().find(|p| p.name == name).expect("a page of that name");
        let theirs = words(&rss::internals::html_to_plain(&dom_smoothie(&page.source)));
        let ours = words(&rss_article_text(&page.source));
        let bag = |v: &[String]| {
            let mut m: HashMap<String, i64> = HashMap::new();
            for w in v {
                *m.entry(w.clone()).or_default() += 1;
            }
            m
        };
        let (t, o) = (bag(&theirs), bag(&ours));
        let mut missing: Vec<_> = t.iter().filter(|(w, n)| o.get(*w).copied().unwrap_or(0) < **n).map(|(w, n)| (w.clone(), n - o.get(w).copied().unwrap_or(0))).collect();
        let mut extra: Vec<_> = o.iter().filter(|(w, n)| t.get(*w).copied().unwrap_or(0) < **n).map(|(w, n)| (w.clone(), n - t.get(w).copied().unwrap_or(0))).collect();
        missing.sort_by(|a, b| b.1.cmp(&a.1));
        extra.sort_by(|a, b| b.1.cmp(&a.1));
        std::fs::write("/tmp/theirs.html", dom_smoothie(&page.source)).unwrap();
        std::fs::write("/tmp/ours.txt", rss_article_text(&page.source)).unwrap();
        std::fs::write("/tmp/ours.md", rss_article_markdown(&page.source)).unwrap();
        println!("theirs {} words, ours {}", theirs.len(), ours.len());
        println!("missing from ours: {:?}", &missing[..missing.len().min(40)]);
        println!("extra in ours: {:?}", &extra[..extra.len().min(40)]);
        return;
    }
    for (name, extract) in candidates {
        let (mut fs, mut ps, mut rs) = (0.0, 0.0, 0.0);
        let mut took = Duration::ZERO;
        let mut worst: Vec<(f64, &str)> = Vec::new();
        for page in &pages {
            let started = Instant::now();
            let html = std::panic::catch_unwind(|| extract(&page.source)).unwrap_or_default();
            took += started.elapsed();
            // Text and markdown are scored as they are (a `<` in them is no tag).
            let got = if name.contains("text") || name.contains("markdown") {
                words(&html)
            } else {
                words(&rss::internals::html_to_plain(&html))
            };
            let (p, r, f) = score(&got, &page.expected);
            fs += f;
            ps += p;
            rs += r;
            worst.push((f, &page.name));
        }
        let n = pages.len() as f64;
        worst.sort_by(|a, b| a.0.total_cmp(&b.0));
        println!(
            "{name:<28} F1 {:.3}  precision {:.3}  recall {:.3}  {:>6.1} pages/s",
            fs / n,
            ps / n,
            rs / n,
            n / took.as_secs_f64()
        );
        if only.as_deref() == Some(name) || only.as_deref() == Some("worst") {
            for (f, name) in worst.iter().take(8) {
                println!("    {f:.3} {name}");
            }
        }
    }
}
