//! Issue 31: token estimates are fair to every script. The estimate (`content_tokens_est`,
//! and what budgets count) is compared with a real tokenizer (o200k, from tiktoken-rs) on
//! the corpora's pages and on JSON results; each must be within 30 %.

use crate::helpers::*;

/// The corpora beside the repository (`../shared/corpora`), or `RSS_TEST_CORPORA`.
fn corpora() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("RSS_TEST_CORPORA")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora")
        });
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipped: no corpora at {} (set RSS_TEST_CORPORA)",
            dir.display()
        );
        None
    }
}

#[test]
fn token_estimates_are_within_30_percent_of_a_real_tokenizer_in_every_script() {
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let mut texts: Vec<(String, String)> = Vec::new();
    if let Some(dir) = corpora() {
        let pages = dir.join("readability-pages/pages");
        for e in std::fs::read_dir(&pages).unwrap() {
            let p = e.unwrap().path();
            let Ok(html) = std::fs::read_to_string(p.join("expected.html")) else {
                continue;
            };
            let text = rss::internals::html_to_plain(&html);
            if text.len() >= 200 {
                texts.push((p.file_name().unwrap().to_string_lossy().into_owned(), text));
            }
        }
        assert!(texts.len() > 100, "{} pages", texts.len());
        let truth =
            std::fs::read_to_string(dir.join("article-benchmark/ground-truth.json")).unwrap();
        let truth: serde_json::Value = serde_json::from_str(&truth).unwrap();
        for (key, page) in truth.as_object().unwrap() {
            if let Some(body) = page["articleBody"].as_str().filter(|b| b.len() >= 200) {
                texts.push((format!("article-benchmark {}", &key[..12]), body.to_owned()));
            }
        }
    }
    for name in ["rss20.xml", "atom10.xml", "jsonfeed11.json"] {
        let out = rss_cmd()
            .args(["fetch", "--no-cache"])
            .arg(fixture_path(name))
            .output()
            .unwrap();
        texts.push((
            format!("{name} as JSON"),
            String::from_utf8(out.stdout).unwrap(),
        ));
    }
    let (mut worst, mut worst_name) = (1.0f64, String::new());
    let (mut sum_est, mut sum_real) = (0usize, 0usize);
    for (name, text) in &texts {
        let real = bpe.encode_ordinary(text).len();
        let est = rss::internals::estimate_tokens(text);
        let ratio = est as f64 / real as f64;
        if (ratio - 1.0).abs() > (worst - 1.0).abs() {
            (worst, worst_name) = (ratio, name.clone());
        }
        sum_est += est;
        sum_real += real;
        assert!(
            (0.7..=1.3).contains(&ratio),
            "{name}: estimated {est} tokens, the tokenizer counts {real}"
        );
    }
    eprintln!(
        "{} texts: estimated {sum_est} tokens in all, the tokenizer {sum_real}; the farthest is {worst_name} at {worst:.2}",
        texts.len()
    );
}
