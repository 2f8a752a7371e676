//! Article extraction side by side, scored with the article-extraction benchmark's own metric
//! (`score.rs`) on `shared/corpora/article-benchmark/` (181 news and blog pages with their
//! full text): every candidate crate fed the same page, `rss`'s extraction in process in each
//! rendering, `rss article` as a whole process over loopback, and, when installed
//! (`tools/setup.sh`), Python trafilatura and Readability.js. Prints each candidate's F1,
//! precision, recall, pages empty and median time, then the pages where they disagree most,
//! then the same score and the metadata agreement on `readability-pages/` (a regression
//! check: Readability's own tests). Asserts nothing.
//!
//!     cargo build --release && cargo run --release --manifest-path benches/extract-compare/Cargo.toml
//!
//! Flags: `--only WORD,…` (candidates whose name holds a word), `--runs N` (whole-process runs
//! per page, default 3), `--no-process`, `--no-outside`, `--dump DIR` (each candidate's text
//! per page), `--page ID` (one page's score per candidate), `--diag` (diagnostic columns),
//! `--half 0|1` (half the pages, by their id's first hex digit: develop on one, judge on
//! the other). `$RSS_BIN_BEFORE` names a second build whose whole-process runs alternate with
//! the first's, page by page, in the same run.

mod outside;
mod process;
mod readability;
mod score;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use score::Counts;

/// One candidate's output for one page.
pub struct Output {
    /// The text it extracted (empty: nothing).
    pub text: String,
    /// How long the extraction (or the whole process) took.
    pub took: Duration,
}

/// The corpora: `$RSS_CORPORA`, else the first `shared/corpora` beside an ancestor of this
/// crate (the repository sits beside `shared/`).
pub fn corpora() -> PathBuf {
    if let Some(d) = std::env::var_os("RSS_CORPORA") {
        return PathBuf::from(d);
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .map(|a| a.join("shared/corpora"))
        .find(|p| p.is_dir())
        .unwrap_or_else(|| panic!("no shared/corpora above {}", here.display()))
}

struct Page {
    id: String,
    url: String,
    path: PathBuf,
    bytes: Vec<u8>,
    /// The page decoded as UTF-8, as the benchmark feeds every extractor.
    html: String,
    truth: Vec<String>,
}

fn load(dir: &Path) -> Vec<Page> {
    let truth: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("ground-truth.json")).expect("truth"))
            .expect("truth json");
    let mut pages: Vec<Page> = truth
        .as_object()
        .expect("an object")
        .iter()
        .map(|(id, v)| {
            let path = dir.join("html").join(format!("{id}.html"));
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            Page {
                id: id.clone(),
                url: v["url"]
                    .as_str()
                    .unwrap_or("http://example.com/")
                    .to_owned(),
                html: String::from_utf8_lossy(&bytes).into_owned(),
                path,
                bytes,
                truth: score::tokens(v["articleBody"].as_str().unwrap_or("")),
            }
        })
        .collect();
    pages.sort_by(|a, b| a.id.cmp(&b.id));
    pages
}

/// An in-process candidate: the page's HTML and URL to its text.
pub type Extract = fn(&str, &str) -> String;

pub fn dom_smoothie(html: &str, url: &str) -> String {
    let cfg = dom_smoothie::Config {
        text_mode: dom_smoothie::TextMode::Formatted,
        ..Default::default()
    };
    dom_smoothie::Readability::new(html, Some(url), Some(cfg))
        .ok()
        .and_then(|mut r| r.parse().ok())
        .map(|a| a.text_content.to_string())
        .unwrap_or_default()
}

pub fn trafilatura(html: &str, url: &str) -> String {
    let mut opts = trafilatura::Options::default().with_fallback(true);
    if let Ok(u) = url::Url::parse(url) {
        opts = opts.with_url(u);
    }
    trafilatura::extract(html, &opts)
        .map(|r| r.content_text)
        .unwrap_or_default()
}

fn rs_trafilatura(html: &str, url: &str) -> String {
    let opts = rs_trafilatura::Options {
        url: Some(url.to_owned()),
        ..rs_trafilatura::Options::default()
    };
    rs_trafilatura::extract_with_options(html, &opts)
        .map(|r| r.content_text)
        .unwrap_or_default()
}

pub fn rss_text(html: &str, url: &str) -> String {
    rss::internals::article_content(html, url, rss::ContentFormat::Text).unwrap_or_default()
}

/// Markdown's words: the text of its rendering, its syntax left out (link addresses, and
/// images, whose alt text is an attribute of the markup, not the article's words).
fn rss_markdown(html: &str, url: &str) -> String {
    let md = rss::internals::article_content(html, url, rss::ContentFormat::Markdown)
        .unwrap_or_default();
    let mut out = String::new();
    let mut image = 0usize;
    for ev in pulldown_cmark::Parser::new(&md) {
        use pulldown_cmark::{Event, Tag, TagEnd};
        match ev {
            Event::Start(Tag::Image { .. }) => image += 1,
            Event::End(TagEnd::Image) => image = image.saturating_sub(1),
            Event::Text(_) | Event::Code(_) if image > 0 => {}
            Event::Text(t) | Event::Code(t) => out.push_str(&t),
            Event::SoftBreak | Event::HardBreak => out.push(' '),
            Event::End(TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::Item) => out.push('\n'),
            _ => {}
        }
    }
    out
}

fn rss_html(html: &str, url: &str) -> String {
    let h =
        rss::internals::article_content(html, url, rss::ContentFormat::Html).unwrap_or_default();
    rss::internals::html_to_plain(&h)
}

fn dom_smoothie_html(html: &str, url: &str) -> String {
    dom_smoothie::Readability::new(html, Some(url), None)
        .ok()
        .and_then(|mut r| r.parse().ok())
        .map(|a| rss::internals::html_to_plain(&a.content))
        .unwrap_or_default()
}

fn trafilatura_opts(url: &str, fallback: bool) -> trafilatura::Options {
    let mut opts = trafilatura::Options::default().with_fallback(fallback);
    if let Ok(u) = url::Url::parse(url) {
        opts = opts.with_url(u);
    }
    opts
}

fn trafilatura_html(html: &str, url: &str) -> String {
    trafilatura::extract(html, &trafilatura_opts(url, true))
        .map(|r| rss::internals::html_to_plain(&r.content_html))
        .unwrap_or_default()
}

fn trafilatura_bare(html: &str, url: &str) -> String {
    trafilatura::extract(html, &trafilatura_opts(url, false))
        .map(|r| r.content_text)
        .unwrap_or_default()
}

/// trafilatura with dom_smoothie's article as its Readability candidate.
fn trafilatura_ds(html: &str, url: &str) -> String {
    let ds = dom_smoothie::Readability::new(html, Some(url), None)
        .ok()
        .and_then(|mut r| r.parse().ok())
        .map(|a| a.content.to_string());
    let mut opts = trafilatura_opts(url, true);
    let mut c = trafilatura::FallbackCandidates::default();
    c.readability_html = ds;
    opts = opts.with_fallback_candidates(c);
    trafilatura::extract(html, &opts)
        .map(|r| r.content_text)
        .unwrap_or_default()
}

fn whole_page(html: &str, _url: &str) -> String {
    rss::internals::html_to_plain(html)
}

/// The rss columns in process, and the crates: fed the same decoded page.
fn in_process() -> Vec<(&'static str, Extract)> {
    vec![
        ("rss article --content text", rss_text),
        ("rss --content markdown (words)", rss_markdown),
        ("rss --content html (words)", rss_html),
        ("dom_smoothie 0.19 (text, formatted)", dom_smoothie),
        ("trafilatura 0.6 (fallback on)", trafilatura),
        ("rs-trafilatura 0.2", rs_trafilatura),
        ("all the page's text (floor)", whole_page),
    ]
}

/// Diagnostic columns (`--diag`): the crates' HTML as words, trafilatura without its
/// fallback, and with dom_smoothie's article as its Readability candidate (the crate's own
/// way of combining the two, which measured below `rss`'s).
fn diagnostics() -> Vec<(&'static str, Extract)> {
    vec![
        ("diag dom_smoothie html", dom_smoothie_html),
        ("diag trafilatura html", trafilatura_html),
        ("diag trafilatura no fallback", trafilatura_bare),
        ("diag trafilatura + dom_smoothie candidate", trafilatura_ds),
    ]
}

struct Args {
    only: Vec<String>,
    runs: usize,
    process: bool,
    outside: bool,
    dump: Option<PathBuf>,
    page: Option<String>,
    diag: bool,
    half: Option<usize>,
}

fn args() -> Args {
    let mut a = Args {
        only: Vec::new(),
        runs: 3,
        process: true,
        outside: true,
        dump: None,
        page: None,
        diag: false,
        half: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--only" => {
                a.only = it
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .map(str::to_lowercase)
                    .collect()
            }
            "--runs" => a.runs = it.next().and_then(|n| n.parse().ok()).unwrap_or(3),
            "--no-process" => a.process = false,
            "--no-outside" => a.outside = false,
            "--dump" => a.dump = it.next().map(PathBuf::from),
            "--page" => a.page = it.next(),
            "--diag" => a.diag = true,
            "--half" => a.half = it.next().and_then(|n| n.parse().ok()).filter(|h| *h < 2),
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

impl Args {
    fn wants(&self, name: &str) -> bool {
        let n = name.to_lowercase();
        self.only.is_empty() || self.only.iter().any(|w| n.contains(w.as_str()))
    }
}

/// A candidate's outputs over the corpus, scored.
struct Column {
    name: String,
    outputs: Vec<Output>,
    counts: Vec<Counts>,
}

fn median(v: Vec<Duration>) -> Duration {
    quantile(v, 0.5)
}

/// The `q` quantile of `v` (nearest rank).
fn quantile(mut v: Vec<Duration>, q: f64) -> Duration {
    v.sort();
    let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len().max(1)) - 1;
    v.get(i).copied().unwrap_or_default()
}

fn main() {
    let a = args();
    let dir = corpora().join("article-benchmark");
    let mut pages = load(&dir);
    if let Some(h) = a.half {
        // A held-out half: pages whose id's first hex digit is even (0) or odd (1).
        pages.retain(|p| {
            u8::from_str_radix(&p.id[..1], 16).is_ok_and(|d| usize::from(d % 2) == h)
        });
    }
    println!("{} pages of {}", pages.len(), dir.display());
    let mut columns: Vec<(String, Vec<Output>)> = Vec::new();
    let diag = if a.diag { diagnostics() } else { Vec::new() };
    for (name, extract) in in_process().into_iter().chain(diag) {
        if !a.wants(name) {
            continue;
        }
        let outputs = pages
            .iter()
            .map(|p| {
                let started = Instant::now();
                let text =
                    std::panic::catch_unwind(|| extract(&p.html, &p.url)).unwrap_or_default();
                Output {
                    text,
                    took: started.elapsed(),
                }
            })
            .collect();
        columns.push((name.to_owned(), outputs));
    }
    if a.outside {
        let list: Vec<(PathBuf, String)> = pages
            .iter()
            .map(|p| (p.path.clone(), p.url.clone()))
            .collect();
        for (name, cmd) in outside::commands() {
            if !a.wants(name) {
                continue;
            }
            match cmd.and_then(|c| outside::run(c, &list)) {
                Ok(outputs) => columns.push((name.to_owned(), outputs)),
                Err(e) => println!("skipped {name}: {e}"),
            }
        }
    }
    let process_name = "rss article --content text (whole process)";
    if a.process && a.wants(process_name) {
        // Each page's runs of the two builds alternate, so both see the same load.
        let bins: Vec<(String, Result<PathBuf, String>)> = std::iter::once((process_name.to_owned(), process::binary()))
            .chain(process::before().map(|b| ("rss before (whole process, $RSS_BIN_BEFORE)".to_owned(), b)))
            .collect();
        let mut ok = Vec::new();
        for (name, bin) in bins {
            match bin {
                Ok(bin) => ok.push((name, bin)),
                Err(e) => println!("skipped {name}: {e}"),
            }
        }
        let bodies = pages.iter().map(|p| p.bytes.clone()).collect();
        let paths: Vec<&Path> = ok.iter().map(|(_, b)| b.as_path()).collect();
        for ((name, _), outputs) in ok.iter().zip(process::run(&paths, bodies, a.runs)) {
            columns.push((name.clone(), outputs));
        }
        no_article(&ok, a.runs);
    }
    let columns: Vec<Column> = columns
        .into_iter()
        .map(|(name, outputs)| {
            let counts = outputs
                .iter()
                .zip(&pages)
                .map(|(o, p)| Counts::of(&score::tokens(&o.text), &p.truth))
                .collect();
            Column {
                name,
                outputs,
                counts,
            }
        })
        .collect();
    if let Some(d) = &a.dump {
        dump(d, &pages, &columns);
    }
    if let Some(id) = &a.page {
        one_page(id, &pages, &columns);
        return;
    }
    println!(
        "\n{:<44} {:>6} {:>9} {:>7} {:>6} {:>10} {:>8}",
        "candidate", "F1", "precision", "recall", "empty", "median ms", "p95 ms"
    );
    for c in &columns {
        let (f, p, r) = score::corpus(&c.counts);
        let empty = c
            .outputs
            .iter()
            .filter(|o| score::tokens(&o.text).is_empty())
            .count();
        let times: Vec<Duration> = c.outputs.iter().map(|o| o.took).collect();
        let ms = median(times.clone()).as_secs_f64() * 1000.0;
        let p95 = quantile(times, 0.95).as_secs_f64() * 1000.0;
        println!(
            "{:<44} {f:>6.3} {p:>9.3} {r:>7.3} {empty:>6} {ms:>10.1} {p95:>8.1}",
            c.name
        );
    }
    disagreements(&pages, &columns);
    readability::report(&corpora().join("readability-pages/pages"), &a);
}

/// Pages with no article (a line of text, a list of links, a login wall), each build's
/// whole-process median over them.
fn no_article(bins: &[(String, PathBuf)], runs: usize) {
    let links: String = (0..40)
        .map(|i| format!("<li><a href=\"/story/{i}\">Story number {i}</a></li>"))
        .collect();
    let pages = vec![
        "<html><head><title>Hello</title></head><body><p>hi</p></body></html>".to_owned(),
        format!("<html><head><title>Index</title></head><body><ul>{links}</ul></body></html>"),
        "<html lang=en><head><title>Sign in</title></head><body><form><p>Sign in to read \
         this story.</p><input name=user><input type=password name=pw><button>Sign in</button>\
         </form></body></html>"
            .to_owned(),
    ];
    let bodies = pages.into_iter().map(String::into_bytes).collect();
    let paths: Vec<&Path> = bins.iter().map(|(_, b)| b.as_path()).collect();
    for ((name, _), outputs) in bins.iter().zip(process::run(&paths, bodies, runs.max(5))) {
        let ms = median(outputs.iter().map(|o| o.took).collect()).as_secs_f64() * 1000.0;
        let empty = outputs.iter().filter(|o| o.text.is_empty()).count();
        println!(
            "{name}: a page with no article (3 pages, {empty} answered with none): median {ms:.1} ms"
        );
    }
}

/// The pages where the extractors' own F1s spread the most (the floor and rss's other
/// renderings left out), and where rss falls furthest below the best of them.
fn disagreements(pages: &[Page], columns: &[Column]) {
    let judged: Vec<&Column> = columns
        .iter()
        .filter(|c| {
            !c.name.contains("floor") && !c.name.contains("(words)") && !c.name.starts_with("diag")
        })
        .collect();
    if judged.len() < 2 {
        return;
    }
    let short: Vec<String> = judged.iter().map(|c| abbreviate(&c.name)).collect();
    let mut rows: Vec<(f64, usize)> = (0..pages.len())
        .map(|i| {
            let f: Vec<f64> = judged.iter().map(|c| c.counts[i].f1()).collect();
            let hi = f.iter().copied().fold(0.0, f64::max);
            let lo = f.iter().copied().fold(1.0, f64::min);
            (hi - lo, i)
        })
        .collect();
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!("\npages where the candidates disagree most (per-page F1):");
    println!("{:<10} {}", "page", short.join(" "));
    for &(_, i) in rows.iter().take(15) {
        let cells: Vec<String> = judged
            .iter()
            .zip(&short)
            .map(|(c, s)| format!("{:>w$.2}", c.counts[i].f1(), w = s.len()))
            .collect();
        println!("{:<10} {}", &pages[i].id[..8], cells.join(" "));
    }
    if let Some(ours) = judged
        .iter()
        .position(|c| c.name == "rss article --content text")
    {
        let mut behind: Vec<(f64, usize, usize)> = (0..pages.len())
            .map(|i| {
                let (best, who) = judged
                    .iter()
                    .enumerate()
                    .map(|(k, c)| (c.counts[i].f1(), k))
                    .fold((0.0, 0), |a, b| if b.0 > a.0 { b } else { a });
                (best - judged[ours].counts[i].f1(), i, who)
            })
            .filter(|r| r.0 > 0.02)
            .collect();
        behind.sort_by(|a, b| b.0.total_cmp(&a.0));
        println!(
            "\n{} pages where rss text is > 0.02 below the best candidate; the worst:",
            behind.len()
        );
        for &(gap, i, who) in behind.iter().take(10) {
            println!(
                "  {} -{gap:.2} (rss {:.2}, best {})",
                &pages[i].id[..8],
                judged[ours].counts[i].f1(),
                short[who]
            );
        }
    }
}

fn abbreviate(name: &str) -> String {
    let s: String = name
        .split(|c: char| c == ' ' || c == '(')
        .filter(|w| !w.is_empty())
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    if name.contains("whole process") {
        "rss process".into()
    } else {
        s
    }
}

fn one_page(id: &str, pages: &[Page], columns: &[Column]) {
    let Some(i) = pages.iter().position(|p| p.id.starts_with(id)) else {
        println!("no page {id}");
        return;
    };
    println!("{} {}", pages[i].id, pages[i].url);
    for c in columns {
        let k = &c.counts[i];
        println!(
            "  {:<44} F1 {:.3}  precision {:.3}  recall {:.3}  {} tokens",
            c.name,
            k.f1(),
            k.precision().unwrap_or(0.0),
            k.recall().unwrap_or(0.0),
            score::tokens(&c.outputs[i].text).len()
        );
    }
}

fn dump(dir: &Path, pages: &[Page], columns: &[Column]) {
    for c in columns {
        let slug: String = c
            .name
            .chars()
            .map(|ch| if ch.is_alphanumeric() { ch } else { '-' })
            .collect();
        let d = dir.join(slug);
        std::fs::create_dir_all(&d).expect("dump dir");
        for (o, p) in c.outputs.iter().zip(pages) {
            std::fs::write(d.join(format!("{}.txt", &p.id[..8])), &o.text).expect("dump");
        }
    }
}
