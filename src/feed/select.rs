//! `--since`, newest-first ordering and `--limit`.

use chrono::{DateTime, Duration as ChronoDuration, NaiveDate, Utc};

use super::RawItem;
#[cfg(test)]
use super::date;
use crate::error::{Error, Result};
use crate::model::IdSource;

/// Which items to return.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Keep items dated at or after this (published, else updated). Undated items stay.
    pub since: Option<DateTime<Utc>>,
    /// Keep at most this many items per feed, newest first.
    pub limit: Option<usize>,
}

/// Parses `--since`: a duration back from `now` (`30m`, `2h`, `7d`, `1w`, `45s`), a date
/// (`2026-06-01`, midnight UTC) or an RFC 3339 time.
pub fn parse_since(s: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
    let t = s.trim();
    let bad = || {
        Error::usage(format!(
            "--since {s:?} is not a duration (30m, 2h, 7d, 1w), a date (2026-06-01) or an RFC 3339 time"
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
    pub omitted_by_limit: usize,
}

/// Filters by `since`, orders newest first (undated after dated, in feed order), limits.
pub(super) fn apply(items: Vec<(RawItem, String, IdSource)>, sel: &Selection) -> Selected {
    let before = items.len();
    let mut items: Vec<_> = match sel.since {
        Some(since) => items
            .into_iter()
            .filter(|(it, _, _)| it.date().is_none_or(|d| d >= since))
            .collect(),
        None => items,
    };
    let omitted_by_since = before - items.len();
    // A stable sort keeps feed order among equal dates and among undated items.
    items.sort_by(|(a, _, _), (b, _, _)| match (a.date(), b.date()) {
        (Some(x), Some(y)) => y.cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
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
        omitted_by_limit,
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
        };
        let s = apply(items, &sel);
        let order: Vec<_> = s.items.iter().map(|(_, id, _)| id.as_str()).collect();
        assert_eq!(order, vec!["new", "upd"]);
        assert_eq!(s.omitted_by_since, 1);
        assert_eq!(s.omitted_by_limit, 1);
    }
}
