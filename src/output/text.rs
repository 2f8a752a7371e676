//! `--format text`: what a person reads. Failures come in plain words with what to do.

use std::io::{self, Write};

use crate::model::{ArticleOutput, ErrorObject, FeedStatus, FetchOutput};

struct Paint(bool);

impl Paint {
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_owned()
        }
    }
    fn bold(&self, s: &str) -> String {
        self.wrap("1", s)
    }
    fn dim(&self, s: &str) -> String {
        self.wrap("2", s)
    }
    fn red(&self, s: &str) -> String {
        self.wrap("31", s)
    }
    fn yellow(&self, s: &str) -> String {
        self.wrap("33", s)
    }
}

/// Writes the result for a person: per feed a line, its items, and failures in plain words
/// with what to do; colours only when `color`.
pub fn write_text(out: &mut dyn Write, result: &FetchOutput, color: bool) -> io::Result<()> {
    let p = Paint(color);
    for feed in &result.feeds {
        let title = feed.meta.title.as_deref().unwrap_or(&feed.feed_url);
        let status = match feed.status {
            FeedStatus::Ok => "ok",
            FeedStatus::NotModified => "not modified",
            FeedStatus::Stale => "stale",
            FeedStatus::Error => "error",
        };
        let cache = if feed.from_cache { ", from cache" } else { "" };
        writeln!(
            out,
            "{}  {}",
            p.bold(title),
            p.dim(&format!("({status}, {} items{cache})", feed.item_count))
        )?;
        if feed.meta.title.is_some() {
            writeln!(out, "{}", p.dim(&feed.feed_url))?;
        }
        if let Some(e) = &feed.error {
            writeln!(out, "  {} {}", p.red("failed:"), advice(e))?;
        }
        for item in &feed.items {
            let when = item
                .published
                .as_deref()
                .or(item.updated.as_deref())
                .map(|d| d.get(..10).unwrap_or(d).to_owned())
                .unwrap_or_else(|| "----------".to_owned());
            writeln!(
                out,
                "  {}  {}",
                p.dim(&when),
                item.title.as_deref().unwrap_or("(untitled)")
            )?;
            if let Some(u) = &item.url {
                writeln!(out, "              {}", p.dim(u))?;
            }
        }
        writeln!(out)?;
    }
    let warnings = result.warnings.iter();
    write_warnings(
        out,
        &p,
        warnings.map(|w| (w.feed_url.as_deref(), w.code, &*w.message)),
    )?;
    let failed = result.errors.len();
    writeln!(
        out,
        "{} feeds, {} items, {} failed, fetched {}",
        result.feeds.len(),
        result.total_items,
        failed,
        result.fetched_at
    )?;
    Ok(())
}

/// Writes articles for a person: per page its title, byline and date, then the article.
pub fn write_article_text(
    out: &mut dyn Write,
    result: &ArticleOutput,
    color: bool,
) -> io::Result<()> {
    let p = Paint(color);
    for a in &result.articles {
        writeln!(out, "{}", p.bold(a.title.as_deref().unwrap_or(&a.url)))?;
        let mut by = Vec::new();
        if !a.authors.is_empty() {
            by.push(a.authors.join(", "));
        }
        if let Some(d) = &a.published {
            by.push(d.get(..10).unwrap_or(d).to_owned());
        }
        if let Some(s) = &a.site_name {
            by.push(s.clone());
        }
        by.push(format!("{} words", a.word_count));
        writeln!(out, "{}", p.dim(&format!("{} — {}", a.url, by.join(" · "))))?;
        if let Some(e) = &a.error {
            let e = ErrorObject {
                feed_url: e.url.clone(),
                code: e.code.clone(),
                message: e.message.clone(),
                details: e.details.clone(),
            };
            writeln!(out, "  {} {}", p.red("failed:"), advice(&e))?;
        }
        if let Some(c) = &a.content {
            writeln!(out, "\n{}", c.trim_end())?;
        }
        writeln!(out)?;
    }
    let warnings = result.warnings.iter();
    write_warnings(
        out,
        &p,
        warnings.map(|w| (w.url.as_deref(), w.code, &*w.message)),
    )?;
    writeln!(
        out,
        "{} pages, {} failed, fetched {}",
        result.articles.len(),
        result.errors.len(),
        result.fetched_at
    )
}

/// One line per warning: `warning CODE whom: message` (`run` for a run-level one).
fn write_warnings<'a>(
    out: &mut dyn Write,
    p: &Paint,
    warnings: impl Iterator<Item = (Option<&'a str>, crate::model::WarningCode, &'a str)>,
) -> io::Result<()> {
    for (whom, code, message) in warnings {
        let whom = whom.unwrap_or("run");
        writeln!(
            out,
            "{} {whom}: {message}",
            p.yellow(&format!("warning {code}"))
        )?;
    }
    Ok(())
}

/// One failure in plain words, with what to do about it.
pub fn advice(e: &ErrorObject) -> String {
    let d = &e.details;
    let num = |k: &str| d.get(k).and_then(serde_json::Value::as_u64);
    let text = |k: &str| d.get(k).and_then(serde_json::Value::as_str);
    match e.code.as_str() {
        "RATE_LIMITED" => {
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
        "NETWORK_ERROR" => format!(
            "{} — check the address and the connection, then try again",
            e.message
        ),
        "FEED_FETCH_FAILED" => match num("http_status") {
            Some(404 | 410) => format!(
                "{} — the feed is gone from that address; `rss discover SITE` finds where it went",
                e.message
            ),
            Some(401 | 403) => {
                format!("{} — the server refuses us; it may need a login", e.message)
            }
            Some(s) if s >= 500 => format!("{} — the server failed; try again later", e.message),
            _ => e.message.clone(),
        },
        "FEED_PARSE_FAILED" => format!(
            "{} — if this is a web page, `rss discover URL` lists the feeds it advertises",
            e.message
        ),
        "RESPONSE_TOO_LARGE" => match num("limit_bytes") {
            Some(_) => format!(
                "{} — pass a larger --max-body-bytes to accept it",
                e.message
            ),
            None => format!(
                "{} — ask for fewer items (--limit) or less content (--max-content-chars)",
                e.message
            ),
        },
        "INVALID_URL" => format!("{} — give an http(s) URL or a path to a file", e.message),
        "NOT_AN_ARTICLE" => format!("{} — `rss fetch URL` reads it as a feed", e.message),
        "UNSUPPORTED_CONTENT" => format!("{} — open it with a tool for that type", e.message),
        "NO_READABLE_CONTENT" => format!(
            "{} — an index page or a login wall; `rss discover URL` finds its feeds",
            e.message
        ),
        "ROBOTS_DISALLOWED" => format!("{} — the site asks robots not to read it", e.message),
        "PAGE_FETCH_FAILED" => match num("http_status") {
            Some(404 | 410) => format!("{} — the page is gone", e.message),
            Some(s) if s >= 500 => format!("{} — the server failed; try again later", e.message),
            _ => e.message.clone(),
        },
        "IO_ERROR" => format!("{} — check the path and its permissions", e.message),
        _ => e.message.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_limit_says_when_to_come_back_and_which_flag_helps() {
        let e = ErrorObject {
            feed_url: Some("https://example.com/feed".into()),
            code: "RATE_LIMITED".into(),
            message: "rate limited".into(),
            details: serde_json::json!({"host": "example.com:443", "retry_after_seconds": 42})
                .as_object()
                .cloned()
                .unwrap(),
        };
        let a = advice(&e);
        assert!(
            a.starts_with("example.com asked us to wait 42 s: try again after "),
            "{a}"
        );
        assert!(a.ends_with("or pass --max-gate-wait 60"), "{a}");
    }
}
