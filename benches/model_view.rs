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

/// The same facts as plain lines: per feed its title and status, per item its id, title,
/// date, url, then its summary and body.
fn as_text(v: &Value) -> String {
    let mut s = String::new();
    for f in v["feeds"].as_array().into_iter().flatten() {
        s.push_str(&format!(
            "# {} ({}) {}\n",
            f["title"].as_str().unwrap_or(""),
            f["status"].as_str().unwrap_or(""),
            f["feed_url"].as_str().unwrap_or("")
        ));
        for i in f["items"].as_array().into_iter().flatten() {
            s.push_str(&format!(
                "\n## {} [{}] {}\n{}\n",
                i["title"].as_str().unwrap_or(""),
                i["id"].as_str().unwrap_or(""),
                i["published"].as_str().unwrap_or(""),
                i["url"].as_str().unwrap_or("")
            ));
            for field in ["summary", "content"] {
                if let Some(t) = i[field].as_str() {
                    s.push_str(t);
                    s.push('\n');
                }
            }
        }
    }
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
