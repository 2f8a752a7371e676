//! Which items a fetch returns: `--since`, `--query`, newest-first ordering and `--limit`,
//! decided here for both the streaming and the collecting pipeline.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use chrono::{DateTime, Duration as ChronoDuration, NaiveDate, Utc};

use super::query::Query;
use super::{Body, RawItem};
#[cfg(test)]
use crate::date;
use crate::error::{Error, Result};
use crate::model::IdSource;

/// Which items to return.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Keep items dated at or after this (published, else updated). Undated items stay.
    pub since: Option<DateTime<Utc>>,
    /// Keep at most this many items per feed, newest first.
    pub limit: Option<usize>,
    /// Keep only items that match (applied after `since`, before `limit`).
    pub query: Option<Query>,
    /// A reader's view of this feed (`--reader`): the ids it has acknowledged, left out
    /// after `query` and before `limit` when `--unseen` asks for that; with a view, every
    /// id of the document is reported too (`Built::present`).
    pub seen: Option<Seen>,
}

/// The ids a reader has acknowledged in one feed (as [`id_key`]s), and whether to leave them
/// out.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    ids: Arc<HashSet<u64>>,
    hide: bool,
}

/// An item's `id` (16 hex digits) as a number: sets of many ids hash and hold these, not
/// strings. `None` for anything else.
pub fn id_key(id: &str) -> Option<u64> {
    (id.len() == 16)
        .then(|| u64::from_str_radix(id, 16).ok())
        .flatten()
}

impl Seen {
    /// `ids` as seen; left out of the selection when `hide`.
    pub fn new(ids: Arc<HashSet<u64>>, hide: bool) -> Seen {
        Seen { ids, hide }
    }

    /// Whether the item `id` is left out as seen.
    pub(crate) fn hides(&self, id: &str) -> bool {
        self.hide && id_key(id).is_some_and(|k| self.ids.contains(&k))
    }
}

/// What selection says of one item before ordering and `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// The item stays.
    Keep,
    /// Older than `since`.
    Since,
    /// Does not match the query.
    Query,
}

impl Selection {
    /// Whether `item` passes `since` and then the query.
    pub(super) fn judge(&self, item: &RawItem) -> Verdict {
        if let Some(since) = self.since
            && item.date().is_some_and(|d| d < since)
        {
            return Verdict::Since;
        }
        if let Some(q) = &self.query {
            let plain = |b: &Option<Body>| match b {
                Some(Body::Html(h)) => super::render::to_plain(h),
                Some(Body::Text(t)) => t.clone(),
                None => String::new(),
            };
            let title = item.title.as_deref().unwrap_or("");
            let (summary, content) = (plain(&item.summary), plain(&item.content));
            if !q.matches(&[title, &summary, &content]) {
                return Verdict::Query;
            }
        }
        Verdict::Keep
    }
}

/// The order items are returned in: newest first (published, else updated), undated after
/// dated, and feed order (`index`) among equals.
pub(super) fn newest_first(
    (date_a, index_a): (Option<DateTime<Utc>>, usize),
    (date_b, index_b): (Option<DateTime<Utc>>, usize),
) -> Ordering {
    match (date_a, date_b) {
        (Some(x), Some(y)) => y.cmp(&x),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
    .then(index_a.cmp(&index_b))
}

/// Parses `--since`: a duration back from `now` (`30m`, `2h`, `7d`, `1w`, `45s`), a date
/// (`2026-06-01`, midnight UTC) or an RFC 3339 time.
pub fn parse_since(s: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
    let t = s.trim();
    let bad = || {
        Error::usage(format!(
            "`since` {:?} is not a duration (30m, 2h, 7d, 1w), a date (2026-06-01) or an RFC 3339 time",
            crate::error::echo(s)
        ))
    };
    if t.ends_with(|c: char| c.is_ascii_alphabetic()) && t.starts_with(|c: char| c.is_ascii_digit())
    {
        let d = crate::config::parse_duration(t).ok_or_else(bad)?;
        let d = ChronoDuration::from_std(d).map_err(|_| bad())?;
        return now.checked_sub_signed(d).ok_or_else(bad);
    }
    if let Ok(d) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).ok_or_else(bad)?.and_utc());
    }
    DateTime::parse_from_rfc3339(t)
        .map(|d| d.with_timezone(&Utc))
        .map_err(|_| bad())
}

pub(super) struct Selected {
    pub items: Vec<(RawItem, String, IdSource)>,
    pub omitted_by_since: usize,
    pub omitted_by_query: usize,
    pub omitted_by_limit: usize,
    /// The ids left out as seen, in feed order.
    pub seen: Vec<String>,
}

/// Judges each item ([`Selection::judge`]), leaves out the seen ones, orders the rest
/// ([`newest_first`]) and keeps the first `limit`.
pub(super) fn apply(items: Vec<(RawItem, String, IdSource)>, sel: &Selection) -> Selected {
    let (mut omitted_by_since, mut omitted_by_query) = (0, 0);
    let mut seen = Vec::new();
    let mut kept: Vec<(usize, (RawItem, String, IdSource))> = Vec::with_capacity(items.len());
    for (i, entry) in items.into_iter().enumerate() {
        match sel.judge(&entry.0) {
            Verdict::Keep if sel.seen.as_ref().is_some_and(|s| s.hides(&entry.1)) => {
                seen.push(entry.1)
            }
            Verdict::Keep => kept.push((i, entry)),
            Verdict::Since => omitted_by_since += 1,
            Verdict::Query => omitted_by_query += 1,
        }
    }
    kept.sort_by(|(ia, a), (ib, b)| newest_first((a.0.date(), *ia), (b.0.date(), *ib)));
    let mut items: Vec<_> = kept.into_iter().map(|(_, entry)| entry).collect();
    let mut omitted_by_limit = 0;
    if let Some(limit) = sel.limit
        && items.len() > limit
    {
        omitted_by_limit = items.len() - limit;
        items.truncate(limit);
    }
    Selected {
        items,
        omitted_by_since,
        omitted_by_query,
        omitted_by_limit,
        seen,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        date::parse("2026-06-10T12:00:00Z").unwrap()
    }

    #[test]
    fn since_reads_durations_dates_and_times() {
        assert_eq!(
            date::format(&parse_since("30m", now()).unwrap()),
            "2026-06-10T11:30:00Z"
        );
        assert_eq!(
            date::format(&parse_since("2h", now()).unwrap()),
            "2026-06-10T10:00:00Z"
        );
        assert_eq!(
            date::format(&parse_since("7d", now()).unwrap()),
            "2026-06-03T12:00:00Z"
        );
        assert_eq!(
            date::format(&parse_since("2026-06-01", now()).unwrap()),
            "2026-06-01T00:00:00Z"
        );
        assert_eq!(
            date::format(&parse_since("2026-06-01T10:00:00+02:00", now()).unwrap()),
            "2026-06-01T08:00:00Z"
        );
        for bad in [
            "yesterdayish",
            "",
            "5",
            "-2h",
            "2x",
            "99999999999999999999d",
        ] {
            assert_eq!(
                parse_since(bad, now()).unwrap_err().code().as_str(),
                "USAGE_ERROR",
                "{bad}"
            );
        }
    }

    fn item(
        title: &str,
        published: Option<&str>,
        updated: Option<&str>,
    ) -> (RawItem, String, IdSource) {
        let it = RawItem {
            title: Some(title.into()),
            published: published.and_then(date::parse),
            updated: updated.and_then(date::parse),
            ..RawItem::default()
        };
        (it, title.into(), IdSource::Link)
    }

    #[test]
    fn newest_first_with_undated_last_in_feed_order() {
        let items = vec![
            item("u1", None, None),
            item("old", Some("2026-01-01"), None),
            item("u2", None, None),
            item("new", Some("2026-06-01"), None),
            item("mid", None, Some("2026-03-01")),
        ];
        let s = apply(items, &Selection::default());
        let order: Vec<_> = s.items.iter().map(|(_, id, _)| id.as_str()).collect();
        assert_eq!(order, vec!["new", "mid", "old", "u1", "u2"]);
    }

    #[test]
    fn since_uses_updated_when_there_is_no_published_and_limit_counts() {
        let items = vec![
            item("old", Some("2026-01-01"), None),
            item("upd", None, Some("2026-06-09")),
            item("new", Some("2026-06-10"), None),
            item("undated", None, None),
        ];
        let sel = Selection {
            since: Some(parse_since("7d", now()).unwrap()),
            limit: Some(2),
            ..Selection::default()
        };
        let s = apply(items, &sel);
        let order: Vec<_> = s.items.iter().map(|(_, id, _)| id.as_str()).collect();
        assert_eq!(order, vec!["new", "upd"]);
        assert_eq!(s.omitted_by_since, 1);
        assert_eq!(s.omitted_by_limit, 1);
    }
}
