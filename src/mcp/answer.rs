//! What a tool call answers, as a model gets it: one short line saying what came back,
//! then the result itself as JSON in its compact view (`structuredContent` holds the same
//! value), every error's message carrying its hint in the server's words.

use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde_json::Value;

use crate::error::Error;
use crate::model::{ArticleOutput, FetchOutput};
use crate::output::compact::compact_value;
use crate::output::hint::advise_all;
use crate::text::counted;

/// A result: the summary line, then `out` as compact JSON (also `structuredContent`);
/// `failed` marks it as an error result (every feed or page of the call failed).
pub fn result<T: Serialize>(summary: String, out: &T, failed: bool) -> CallToolResult {
    let mut v = compact_value(out);
    advise_all(&mut v);
    let json = serde_json::to_string(&v).unwrap_or_default();
    // A summary may quote what the caller gave (a site URL with its password): masked here,
    // once for every tool, as the JSON beside it already is.
    let summary = crate::redact::text(&summary).into_owned();
    let blocks = vec![ContentBlock::text(summary), ContentBlock::text(json)];
    let mut r = if failed {
        CallToolResult::error(blocks)
    } else {
        CallToolResult::success(blocks)
    };
    r.structured_content = Some(v);
    r
}

/// A result whose every field is its answer (`ack_delivery`'s two counts, zero or not):
/// the summary line, then `out` as JSON, not compacted.
pub fn whole<T: Serialize>(summary: String, out: &T) -> CallToolResult {
    let v = serde_json::to_value(out).unwrap_or(Value::Null);
    let json = v.to_string();
    let mut r =
        CallToolResult::success(vec![ContentBlock::text(summary), ContentBlock::text(json)]);
    r.structured_content = Some(v);
    r
}

/// An error result: the error object as JSON, its message with its hint; a suggested
/// `max_response_tokens` above the server's `cap` is not suggested.
pub fn error(e: &Error, url: Option<&str>, cap: usize) -> CallToolResult {
    let mut obj = e.to_object(url);
    if obj
        .details
        .get("suggested_max_response_tokens")
        .and_then(Value::as_u64)
        .is_some_and(|n| n > cap as u64)
    {
        obj.details
            .insert("suggested_max_response_tokens".to_owned(), Value::Null);
    }
    let mut v = compact_value(&obj);
    advise_all(&mut v);
    CallToolResult::error(vec![ContentBlock::text(v.to_string())])
}

/// One line saying what a fetch returned: feeds, failures by code, items, pages.
pub fn fetch_summary(out: &FetchOutput, feeds_asked: usize) -> String {
    let failed: Vec<&str> = out.errors.iter().map(|e| e.code.as_str()).collect();
    let ok = feeds_asked.saturating_sub(failed.len());
    let mut s = format!(
        "{}: {ok} ok, {} failed",
        counted(feeds_asked, "feed"),
        failed.len()
    );
    if !failed.is_empty() {
        let mut codes = failed.clone();
        codes.dedup();
        s.push_str(&format!(" ({})", codes.join(", ")));
    }
    s.push_str(&format!(
        "; {} (~{} content tokens).",
        counted(out.total_items, "item"),
        out.total_content_tokens_est
    ));
    if let Some(wait) = out
        .errors
        .iter()
        .filter_map(|e| e.details.get("retry_after_seconds").and_then(Value::as_u64))
        .max()
    {
        s.push_str(&format!(" RATE_LIMITED feeds: retry after {wait} s."));
    }
    let t = &out.truncation;
    if let Some(q) = &t.query
        && out.total_items == 0
        && out.next_cursor.is_none()
    {
        s.push_str(&format!(
            " The query {q:?} matched none of the {} it looked at (words are all required \
             unless joined by OR).",
            counted(t.items_omitted_by_query, "item")
        ));
    }
    if out.next_cursor.is_some() {
        s.push_str(&format!(
            " {} on later pages: call again with the same arguments and cursor = next_cursor.",
            counted(t.items_on_later_pages, "more item")
        ));
    }
    match &out.delivery {
        Some(d) if d.token.is_some() => s.push_str(&delivered(&d.reader)),
        Some(d) => s.push_str(&format!(" Nothing new for reader {:?}.", d.reader)),
        None => {}
    }
    s
}

/// What a fetch's summary says of a delivery to `reader` with items.
pub fn delivered(reader: &str) -> String {
    format!(" Delivered to reader {reader:?}: once handled, call ack_delivery with delivery_token.")
}

/// One line saying what an article call returned.
pub fn article_summary(out: &ArticleOutput) -> String {
    let failed = out.errors.len();
    let cut: Vec<&str> = out
        .articles
        .iter()
        .filter(|a| a.next_offset.is_some())
        .map(|a| a.url.as_str())
        .collect();
    let mut s = format!(
        "{}: {} read, {failed} failed; ~{} content tokens.",
        counted(out.articles.len(), "page"),
        out.articles.len() - failed,
        out.total_content_tokens_est
    );
    match cut.len() {
        0 => {}
        1 => s.push_str(
            " Cut at the token budget: call again with its `url` and `offset` = next_offset for the rest.",
        ),
        n => s.push_str(&format!(
            " {n} cut at the token budget: for each, call again with its `url` and `offset` = its next_offset."
        )),
    }
    s
}

/// Tokens kept for what the summary line adds once the page is cut (its counts and
/// page note).
pub const SUMMARY_TOKENS: usize = 64;
