//! `--format text`: what a person reads. Failures come in plain words with what to do.

use std::io::{self, Write};

use crate::model::{ArticleOutput, ErrorObject, FeedStatus, FetchOutput};
use crate::text::counted;

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
            p.dim(&format!(
                "({status}, {}{cache})",
                counted(feed.item_count, "item")
            ))
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
        "{}, {}, {} failed, fetched {}",
        counted(result.feeds.len(), "feed"),
        counted(result.total_items, "item"),
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
        by.push(counted(a.word_count, "word"));
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
        "{}, {} failed, fetched {}",
        counted(result.articles.len(), "page"),
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

/// One failure in plain words, with what to do about it (in the CLI's words).
pub fn advice(e: &ErrorObject) -> String {
    super::hint::advise(e, super::hint::Caller::Cli)
}
