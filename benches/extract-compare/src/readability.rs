//! The regression check on `readability-pages/` (Readability's own test pages, which any
//! Readability port scores near 1.0 on): the same shingle score for the in-process
//! candidates on the readerable pages, what `rss` does with the pages marked not readerable,
//! and how often `rss article`'s metadata agrees with each page's expected metadata.

use std::path::Path;

use crate::Args;
use crate::score::{self, Counts};

/// The URL the readability test suite gives every page.
const PAGE_URL: &str = "http://fakehost/test/page.html";

struct Page {
    name: String,
    html: String,
    expected: Vec<String>,
    meta: serde_json::Value,
}

fn load(dir: &Path) -> Vec<Page> {
    let mut names: Vec<_> = match std::fs::read_dir(dir) {
        Ok(d) => d.flatten().map(|e| e.path()).collect(),
        Err(_) => return Vec::new(),
    };
    names.sort();
    names
        .into_iter()
        .filter_map(|p| {
            let meta: serde_json::Value =
                serde_json::from_slice(&std::fs::read(p.join("expected-metadata.json")).ok()?)
                    .ok()?;
            let html =
                String::from_utf8_lossy(&std::fs::read(p.join("source.html")).ok()?).into_owned();
            let expected = std::fs::read_to_string(p.join("expected.html")).unwrap_or_default();
            Some(Page {
                name: p.file_name()?.to_string_lossy().into_owned(),
                html,
                expected: score::tokens(&rss::internals::html_to_plain(&expected)),
                meta,
            })
        })
        .collect()
}

fn norm(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Prints the regression check.
pub fn report(dir: &Path, a: &Args) {
    let pages = load(dir);
    if pages.is_empty() {
        println!("\nskipped readability-pages: nothing at {}", dir.display());
        return;
    }
    let (readerable, other): (Vec<&Page>, Vec<&Page>) =
        pages.iter().partition(|p| p.meta["readerable"] == true);
    println!(
        "\nreadability-pages (regression check): {} readerable pages",
        readerable.len()
    );
    let candidates: [(&str, crate::Extract); 3] = [
        ("rss article --content text", crate::rss_text),
        ("dom_smoothie 0.19 (text, formatted)", crate::dom_smoothie),
        ("trafilatura 0.6 (fallback on)", crate::trafilatura),
    ];
    for (name, extract) in candidates {
        if !a.wants(name) {
            continue;
        }
        let mut counts = Vec::new();
        let mut empty = Vec::new();
        for p in &readerable {
            let text = std::panic::catch_unwind(|| extract(&p.html, PAGE_URL)).unwrap_or_default();
            let t = score::tokens(&text);
            if t.is_empty() {
                empty.push(p.name.as_str());
            }
            counts.push(Counts::of(&t, &p.expected));
        }
        let (f, pr, r) = score::corpus(&counts);
        println!(
            "  {name:<40} F1 {f:.3}  precision {pr:.3}  recall {r:.3}  empty {} {:?}",
            empty.len(),
            empty
        );
        let mut worst: Vec<(f64, &str)> = counts
            .iter()
            .zip(&readerable)
            .map(|(c, p)| (c.f1(), p.name.as_str()))
            .collect();
        worst.sort_by(|a, b| a.0.total_cmp(&b.0));
        let w: Vec<String> = worst
            .iter()
            .take(5)
            .map(|(f, n)| format!("{n} {f:.2}"))
            .collect();
        println!("    lowest: {}", w.join(", "));
    }
    let refused: Vec<&str> = other
        .iter()
        .filter(|p| {
            rss::internals::article_content(&p.html, PAGE_URL, rss::ContentFormat::Text).is_err()
        })
        .map(|p| p.name.as_str())
        .collect();
    println!(
        "  not readerable: {} pages, rss refuses {} ({:?})",
        other.len(),
        refused.len(),
        refused
    );
    metadata(&readerable);
}

/// Agreement of `rss article`'s metadata with each page's expected metadata, per field.
fn metadata(pages: &[&Page]) {
    let mut rows = [
        ("title", 0usize, 0usize),
        ("authors (byline)", 0, 0),
        ("published (date)", 0, 0),
        ("site name", 0, 0),
        ("language", 0, 0),
    ];
    let mut images = 0;
    for p in pages {
        let got = rss::internals::article_meta(&p.html, PAGE_URL).unwrap_or_default();
        images += got.lead_image.is_some() as usize;
        let want = |k: &str| p.meta[k].as_str().map(norm).filter(|s| !s.is_empty());
        let checks = [
            (want("title"), got.title.as_deref().map(norm)),
            (want("byline"), Some(norm(&got.authors.join(", ")))),
            (
                want("publishedTime").map(|s| s.chars().take(10).collect()),
                got.published.map(|s| s.chars().take(10).collect()),
            ),
            (want("siteName"), got.site_name.as_deref().map(norm)),
            (want("lang"), got.language.as_deref().map(norm)),
        ];
        for (row, (w, g)) in rows.iter_mut().zip(checks) {
            if let Some(w) = w {
                row.2 += 1;
                let g = g.unwrap_or_default();
                // A byline may carry more than the names ("By A and B"): the names agreeing
                // is what counts.
                if g == w || (row.0.starts_with("authors") && !g.is_empty() && w.contains(&g)) {
                    row.1 += 1;
                }
            }
        }
    }
    println!("  metadata agreement with expected-metadata.json:");
    for (name, agree, of) in rows {
        println!("    {name:<18} {agree:>4} / {of}");
    }
    println!(
        "    lead image         {images:>4} pages have one (the expected metadata names none)"
    );
}
