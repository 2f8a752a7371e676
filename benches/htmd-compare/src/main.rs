//! Prints, for every body in `tests/fixtures/render/`, the markdown `rss` returns beside
//! htmd's, then the time each takes on a large body. Asserts nothing.

use std::path::Path;
use std::time::Instant;

use rss::{ContentFormat, RenderOptions, Selection};

/// `html` as the body of a one-item RSS feed, through the whole `rss` pipeline.
fn rss_markdown(html: &str) -> String {
    let mut escaped = String::with_capacity(html.len() + 64);
    for c in html.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            _ => escaped.push(c),
        }
    }
    let doc = format!(
        "<rss version=\"2.0\"><channel><title>t</title><item><title>i</title><description>{escaped}</description></item></channel></rss>"
    );
    let base = url::Url::parse("https://example.com/blog/post/").unwrap();
    let p = rss::internals::process(
        base.as_str(),
        doc.into_bytes().into(),
        Some("application/rss+xml"),
        Some(&base),
        &Selection::default(),
        &RenderOptions {
            format: ContentFormat::Markdown,
            max_content_chars: None,
        },
    )
    .expect("parses");
    p.built.items[0].content.clone().unwrap_or_default()
}

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/render");
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.to_string_lossy();
            n.ends_with(".html") && !n.ends_with(".sanitized.html")
        })
        .collect();
    inputs.sort();
    for input in &inputs {
        let html = std::fs::read_to_string(input).unwrap();
        let name = input.file_stem().unwrap().to_string_lossy();
        println!("=================== {name}");
        println!("--- rss");
        println!("{}", rss_markdown(&html));
        println!("--- htmd");
        println!("{}", htmd::convert(&html).unwrap_or_else(|e| format!("ERROR {e}")));
    }
    // Time: every fixture body converted 200 times by each (the rss side includes its
    // feed parse, which only makes it look slower).
    let bodies: Vec<String> = inputs
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let bytes: usize = bodies.iter().map(String::len).sum::<usize>() * 200;
    let t = Instant::now();
    for _ in 0..200 {
        for b in &bodies {
            std::hint::black_box(rss_markdown(b));
        }
    }
    let rss_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    for _ in 0..200 {
        for b in &bodies {
            std::hint::black_box(htmd::convert(b).ok());
        }
    }
    let htmd_s = t.elapsed().as_secs_f64();
    println!(
        "\n{} bodies x 200 ({:.1} MB): rss {:.0} ms ({:.1} MB/s, feed parse included), htmd {:.0} ms ({:.1} MB/s)",
        bodies.len(),
        bytes as f64 / 1e6,
        rss_s * 1e3,
        bytes as f64 / 1e6 / rss_s,
        htmd_s * 1e3,
        bytes as f64 / 1e6 / htmd_s
    );
}
