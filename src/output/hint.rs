//! What to do about an error, in the words of whoever called: the one place an error's
//! hint is written. The CLI names commands and flags, the MCP server tools and their
//! arguments. Messages themselves name no command, flag or tool.

use serde_json::Value;

use crate::model::ErrorObject;

/// Who reads the hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// A person or script at the command line.
    Cli,
    /// A model through an MCP tool.
    Mcp,
}

/// The arguments both front ends take, as MCP names them and as the CLI's flags. A message
/// written in shared code names an argument in backticks by its MCP name; the CLI's words
/// replace it with the flag ([`cli_words`]).
const ARGUMENTS: &[(&str, &str)] = &[
    ("since", "--since"),
    ("limit", "--limit"),
    ("query", "--query"),
    ("content_format", "--content"),
    ("max_content_chars", "--max-content-chars"),
    ("cache_policy", "--cache-policy"),
    ("max_age_seconds", "--max-age"),
    ("dedupe", "--dedupe"),
];

/// `message` in the CLI's words: each backticked MCP argument name becomes its flag.
pub fn cli_words(message: &str) -> String {
    let mut out = message.to_owned();
    for (arg, flag) in ARGUMENTS {
        out = out.replace(&format!("`{arg}`"), &format!("`{flag}`"));
    }
    out
}

/// What to do about `e`, for `caller`; `None` when the message says enough.
pub fn hint(e: &ErrorObject, caller: Caller) -> Option<String> {
    let d = &e.details;
    let num = |k: &str| d.get(k).and_then(Value::as_u64);
    let text = |k: &str| d.get(k).and_then(Value::as_str);
    let cli = caller == Caller::Cli;
    let url = e.feed_url.as_deref().unwrap_or("URL");
    let discover = |what: &str| {
        if cli {
            format!("`rss discover {url}` {what}")
        } else {
            format!("discover_feeds with site_url {url:?} {what}")
        }
    };
    Some(match e.code.as_str() {
        "RATE_LIMITED" if cli => {
            let host = text("host").unwrap_or("the host");
            let host = host
                .strip_suffix(":443")
                .or_else(|| host.strip_suffix(":80"))
                .unwrap_or(host);
            let wait = num("retry_after_seconds").unwrap_or(0);
            let at = chrono::Local::now() + chrono::Duration::seconds(wait as i64);
            format!(
                "{host} asked us to wait {wait} s: try again after {}, or pass --max-gate-wait {}",
                at.format("%H:%M:%S"),
                wait.saturating_add(5).max(60)
            )
        }
        "NETWORK_ERROR" if cli => "check the address and the connection, then try again".into(),
        "NETWORK_ERROR" => "retrying later may work".into(),
        "FEED_FETCH_FAILED" => match num("http_status") {
            Some(404 | 410) => {
                let site = if cli { "SITE" } else { "the site's address" };
                if cli {
                    format!(
                        "the feed is gone from that address; `rss discover {site}` finds where it went"
                    )
                } else {
                    format!(
                        "the feed is gone from that address; discover_feeds with {site} as site_url finds where it went"
                    )
                }
            }
            Some(401 | 403) => "the server refuses us; it may need a login".into(),
            Some(s) if s >= 500 => "the server failed; try again later".into(),
            _ => return None,
        },
        "FEED_GONE" => "the publisher took this feed down for good: take it off the list".into(),
        "FEED_PARSE_FAILED" => match text("content_type") {
            Some(t) if t.contains("html") => discover("lists the feeds the page advertises"),
            _ => format!(
                "if it is a web page, {}",
                discover("lists the feeds it advertises")
            ),
        },
        "RESPONSE_TOO_LARGE" if num("limit_bytes").is_some() => {
            if cli {
                "pass a larger --max-body-bytes to accept it".into()
            } else {
                "the server's --max-body-bytes refuses bodies this large".into()
            }
        }
        "RESPONSE_TOO_LARGE" => {
            let asks: Vec<String> = [
                "suggested_limit",
                "suggested_max_content_chars",
                "suggested_max_response_tokens",
            ]
            .iter()
            .filter_map(|k| num(k).map(|n| format!("{}: {n}", &k["suggested_".len()..])))
            .collect();
            if asks.is_empty() {
                return None;
            }
            format!("call again with {}", asks.join(" or "))
        }
        "INVALID_URL" if d.get("private_network").is_some() => {
            if cli {
                "drop --deny-private-networks to read it".into()
            } else {
                "this server reads public addresses only".into()
            }
        }
        "INVALID_URL" if cli => "give an http(s) URL or a path to a file".into(),
        "INVALID_URL" => "give an http(s) URL".into(),
        "NOT_AN_ARTICLE" if cli => format!("`rss fetch {url}` reads it as a feed"),
        "NOT_AN_ARTICLE" => format!("read it with fetch_feed (url {url:?})"),
        "UNSUPPORTED_CONTENT" => "open it with a tool for that type".into(),
        "NO_READABLE_CONTENT" => format!(
            "an index page or a login wall; {}",
            discover("finds its feeds")
        ),
        "EXTRACTION_TIMEOUT" if text("cut_by") == Some("call") => {
            if cli {
                "read fewer pages at once".into()
            } else {
                "call again with a longer timeout_seconds or fewer urls".into()
            }
        }
        "EXTRACTION_TIMEOUT" => "the page is too heavy to read as an article".into(),
        "ROBOTS_DISALLOWED" => "the site asks robots not to read it".into(),
        "PAGE_FETCH_FAILED" => match num("http_status") {
            Some(404 | 410) => "the page is gone".into(),
            Some(s) if s >= 500 => "the server failed; try again later".into(),
            _ => return None,
        },
        "IO_ERROR" if cli => "check the path and its permissions".into(),
        "NOT_FOUND" => {
            let feed = text("feed_url").unwrap_or(url);
            if cli {
                format!("`rss fetch {feed}` lists the current ids")
            } else {
                format!("fetch_feed with url {feed:?} lists the current ids")
            }
        }
        _ => return None,
    })
}

/// `e`'s message with its hint, for `caller`: `message — hint`. The CLI's has its flags'
/// names; a rate limit at the CLI is said in its own words.
pub fn advise(e: &ErrorObject, caller: Caller) -> String {
    let message = match caller {
        Caller::Cli => cli_words(&e.message),
        Caller::Mcp => e.message.clone(),
    };
    match hint(e, caller) {
        Some(h) if caller == Caller::Cli && e.code == "RATE_LIMITED" => h,
        Some(h) => format!("{message} — {h}"),
        None => message,
    }
}

/// Adds its hint, in the CLI's words, to the message of every error of a fetch (for its
/// JSON and NDJSON; `--format text` says the hint itself).
pub fn advise_fetch(out: &mut crate::model::FetchOutput) {
    let add = |e: &mut ErrorObject| e.message = advise(e, Caller::Cli);
    out.errors.iter_mut().for_each(add);
    out.feeds
        .iter_mut()
        .filter_map(|f| f.error.as_mut())
        .for_each(add);
}

/// Like [`advise_fetch`], for the pages of `rss article`.
pub fn advise_articles(out: &mut crate::model::ArticleOutput) {
    let add = |e: &mut crate::model::PageError| {
        let obj = ErrorObject {
            feed_url: e.url.clone(),
            code: e.code.clone(),
            message: e.message.clone(),
            details: e.details.clone(),
        };
        e.message = advise(&obj, Caller::Cli);
    };
    out.errors.iter_mut().for_each(add);
    out.articles
        .iter_mut()
        .filter_map(|a| a.error.as_mut())
        .for_each(add);
}

/// Adds its hint to the message of every error object in `v` (a result as the MCP server
/// sends it: `errors[]`, `feeds[].error`, `articles[].error`, or an error object itself).
pub fn advise_all(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map.get("code").is_some_and(Value::is_string)
                && map.get("message").is_some_and(Value::is_string)
                && let Ok(obj) = serde_json::from_value::<ErrorObject>(with_url(map))
            {
                map.insert(
                    "message".to_owned(),
                    Value::String(advise(&obj, Caller::Mcp)),
                );
                return;
            }
            map.values_mut().for_each(advise_all);
        }
        Value::Array(items) => items.iter_mut().for_each(advise_all),
        _ => {}
    }
}

/// An error object (a feed's or a page's, whose URL is `url`) in the shape
/// [`ErrorObject`] reads.
fn with_url(map: &serde_json::Map<String, Value>) -> Value {
    let mut m = map.clone();
    if !m.contains_key("feed_url") {
        let url = m.shift_remove("url").unwrap_or(Value::Null);
        m.insert("feed_url".to_owned(), url);
    }
    m.entry("details")
        .or_insert_with(|| Value::Object(Default::default()));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(code: &str, details: Value) -> ErrorObject {
        ErrorObject {
            feed_url: Some("https://example.com/feed".into()),
            code: code.into(),
            message: "m".into(),
            details: details.as_object().cloned().unwrap(),
        }
    }

    #[test]
    fn a_rate_limit_says_when_to_come_back_and_which_flag_helps() {
        let e = obj(
            "RATE_LIMITED",
            serde_json::json!({"host": "example.com:443", "retry_after_seconds": 42}),
        );
        let a = advise(&e, Caller::Cli);
        assert!(
            a.starts_with("example.com asked us to wait 42 s: try again after "),
            "{a}"
        );
        assert!(a.ends_with("or pass --max-gate-wait 60"), "{a}");
    }

    #[test]
    fn each_caller_hears_its_own_words() {
        let html = obj(
            "FEED_PARSE_FAILED",
            serde_json::json!({"content_type": "text/html"}),
        );
        let mcp = advise(&html, Caller::Mcp);
        assert!(mcp.contains("discover_feeds"), "{mcp}");
        assert!(!mcp.contains("rss "), "{mcp}");
        assert!(advise(&html, Caller::Cli).contains("`rss discover https://example.com/feed`"));
        for code in [
            "NOT_FOUND",
            "NOT_AN_ARTICLE",
            "NO_READABLE_CONTENT",
            "INVALID_URL",
        ] {
            let e = obj(code, serde_json::json!({}));
            let m = advise(&e, Caller::Mcp);
            assert!(!m.contains("rss ") && !m.contains("--"), "{code}: {m}");
        }
        let big = obj(
            "RESPONSE_TOO_LARGE",
            serde_json::json!({"suggested_limit": null, "suggested_max_content_chars": 800}),
        );
        assert_eq!(
            hint(&big, Caller::Mcp).unwrap(),
            "call again with max_content_chars: 800"
        );
        assert_eq!(
            cli_words("`since` \"today\" is not a duration; `max_content_chars` too"),
            "`--since` \"today\" is not a duration; `--max-content-chars` too"
        );
    }
}
