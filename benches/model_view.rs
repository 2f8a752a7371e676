//! What a model gets per token (issue 31): one news feed (`tests/fixtures/news.xml`) as
//! the CLI's JSON contract, as the compact JSON view the MCP server sends, and as a compact
//! text rendering with the same facts (every item's id, title, url, date and body, the
//! feed's status), each measured in characters and in tokens of a real tokenizer (o200k),
//! for a `content_format: none` listing and a markdown one. Prints figures; asserts nothing.
//!
//! Run: `cargo bench --bench model_view`

use std::process::Command;

use serde_json::Value;

/// The fixture fetched by the `rss` binary with `--content FORMAT`, as its JSON.
fn fetch(format: &str) -> Value {
    let bin = env!("CARGO_BIN_EXE_rss");
    let feed = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/news.xml");
    let out = Command::new(bin)
        .args(["fetch", "--no-cache", "--content", format, feed])
        .env_remove("RSS_CACHE_DIR")
        .output()
        .expect("rss fetch");
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// The same facts as plain lines: per feed its title, status, address and metadata; per
/// item its title, id, date, url, authors, categories and enclosures, then its summary and
/// body; then what was left out.
fn as_text(v: &Value) -> String {
    let text = |v: &Value, k: &str| v[k].as_str().unwrap_or("").to_owned();
    let list = |v: &Value, k: &str| {
        v[k].as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    let mut s = String::new();
    for f in v["feeds"].as_array().into_iter().flatten() {
        s.push_str(&format!(
            "# {} ({}) {}\n{} | {} | {} | updated {}\n",
            text(f, "title"),
            text(f, "status"),
            text(f, "feed_url"),
            text(f, "site_url"),
            text(f, "description"),
            text(f, "language"),
            text(f, "updated"),
        ));
        for i in f["items"].as_array().into_iter().flatten() {
            s.push_str(&format!(
                "\n## {} [{}] {}\n{}\nby {}; {}\n",
                text(i, "title"),
                text(i, "id"),
                text(i, "published"),
                text(i, "url"),
                list(i, "authors"),
                list(i, "categories"),
            ));
            for e in i["enclosures"].as_array().into_iter().flatten() {
                s.push_str(&format!(
                    "enclosure {} ({})\n",
                    text(e, "url"),
                    text(e, "type")
                ));
            }
            for field in ["summary", "content"] {
                if let Some(t) = i[field].as_str() {
                    s.push_str(t);
                    s.push('\n');
                }
            }
        }
    }
    s.push_str(&format!(
        "\n{} items; left out: {}\n",
        v["total_items"], v["truncation"]
    ));
    s
}

fn main() {
    let bpe = tiktoken_rs::o200k_base().expect("o200k");
    println!("news.xml, 8 items: characters and o200k tokens per item (the estimate beside)");
    for format in ["none", "markdown"] {
        let full = fetch(format);
        let n = full["total_items"].as_u64().unwrap_or(1).max(1) as usize;
        let mut compact = full.clone();
        rss::internals::compact(&mut compact);
        let views = [
            ("CLI contract JSON", serde_json::to_string(&full).unwrap()),
            ("MCP compact JSON", serde_json::to_string(&compact).unwrap()),
            ("compact text", as_text(&compact)),
        ];
        for (name, text) in views {
            let tokens = bpe.encode_ordinary(&text).len();
            println!(
                "  content_format {format:<8} {name:<18} {:>5} chars/item  {:>4} tokens/item  (estimate {:>4})",
                text.chars().count() / n,
                tokens / n,
                rss::internals::estimate_tokens(&text) / n
            );
        }
    }
}
