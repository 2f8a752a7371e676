//! One feed's body to its contract items: parse, identify, select, render.

use crate::model::WarningCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::{DateTime, Utc};
use url::Url;

use super::{RawFeed, RawItem, RenderOptions, Selection, content, ids, parse, parse_into, select};
use crate::date;
use crate::error::Result;
use crate::model::{FeedMeta, IdSource, Item, Truncation};
use crate::payload::Payload;

/// The selected, identified and rendered items of one feed.
#[derive(Debug, Default)]
pub struct Built {
    /// The items, newest first.
    pub items: Vec<Item>,
    /// Non-fatal findings: (code, message).
    pub warnings: Vec<(WarningCode, String)>,
    /// Items left out by `--limit`.
    pub omitted_by_limit: usize,
    /// Items left out by `--since`.
    pub omitted_by_since: usize,
    /// Items left out by `--query`.
    pub omitted_by_query: usize,
    /// Items whose content was cut.
    pub content_truncated: usize,
    /// Items left out as already seen by the reader (`--unseen`).
    pub omitted_as_seen: usize,
    /// With a reader's view (`Selection::seen`): the id of every item of the document, in
    /// feed order; empty otherwise.
    pub present: Vec<String>,
    /// With a reader's view: the ids left out as seen, in feed order.
    pub seen: Vec<String>,
}

/// A feed parsed, selected and rendered: everything a fetch reports about its body.
#[derive(Debug, Default)]
pub struct Processed {
    /// What the feed says about itself.
    pub meta: FeedMeta,
    /// The items and what selection left out; `built.warnings` holds every warning.
    pub built: Built,
    /// Which rule `meta.declared_ttl_seconds` came from (`<ttl>` or `sy:*`).
    pub declared_by: Option<crate::model::FreshBy>,
}

/// Parses `body` (read from `doc_url`, with this `Content-Type`), then selects,
/// identifies and renders its items: the whole per-feed pipeline, off any I/O.
///
/// With no `--limit`, no item needs the others to be chosen, so items are identified,
/// filtered and rendered (on rayon's threads) while the rest of the body is still being
/// parsed, and each parsed item is freed as soon as it is rendered; the result is then
/// ordered. With a limit, every item is read first and only the chosen ones are rendered.
pub fn process(
    feed_url: &str,
    body: Payload,
    content_type: Option<&str>,
    doc_url: Option<&Url>,
    selection: &Selection,
    render: &RenderOptions,
) -> Result<Processed> {
    let big = parallel(body.len());
    let (mut raw, mut built) = if selection.limit.is_some() || !big {
        let mut raw = parse(body, content_type, doc_url)?;
        let items = std::mem::take(&mut raw.items);
        (raw, build(feed_url, items, selection, render, big))
    } else {
        eager(feed_url, body, content_type, doc_url, selection, render)?
    };
    let mut warnings = std::mem::take(&mut raw.warnings);
    warnings.append(&mut built.warnings);
    built.warnings = warnings;
    Ok(Processed {
        declared_by: raw.ttl_rule,
        meta: FeedMeta {
            format: Some(raw.format.to_owned()),
            title: raw.title,
            site_url: raw.site_url,
            description: raw.description,
            updated: raw.updated.as_ref().map(date::format),
            language: raw.language,
            icon: raw.icon,
            authors: raw.authors,
            categories: raw.categories,
            declared_ttl_seconds: raw.ttl_seconds,
            podcast: raw.podcast,
            skip_hours: raw.skip_hours,
            skip_days: raw
                .skip_days
                .iter()
                .filter_map(|d| super::channel::WEEKDAYS.get(*d as usize))
                .map(|d| (*d).to_owned())
                .collect(),
        },
        built,
    })
}

/// Bodies from this size on are parsed and rendered on all cores; a smaller one (most
/// feeds) on the one thread it was given: handing a few milliseconds of work to a thread
/// pool costs wake-ups, and rayon's idle threads spin before they sleep.
pub const PARALLEL_FROM_BYTES: usize = 256 * 1024;

/// Whether a body of `len` bytes is worth the parallel pipeline.
pub fn parallel(len: usize) -> bool {
    len >= PARALLEL_FROM_BYTES
}

/// Items rendered in one rayon task.
const BATCH: usize = 64;

/// One rendered item with what orders it: its date and its place in the feed.
type Ranked = (Option<DateTime<Utc>>, usize, Item, bool);

/// The no-limit pipeline: parse, and render batches of items as they are read.
fn eager(
    feed_url: &str,
    body: Payload,
    content_type: Option<&str>,
    doc_url: Option<&Url>,
    selection: &Selection,
    render: &RenderOptions,
) -> Result<(RawFeed, Built)> {
    let done: Mutex<Vec<Ranked>> = Mutex::new(Vec::new());
    let (mut omitted_by_since, mut omitted_by_query) = (0usize, 0usize);
    let (mut present, mut seen) = (Vec::new(), Vec::new());
    // Batches handed out and not yet rendered: past `most_pending`, the parser renders one
    // itself instead of reading on, so the body's chunks are freed about as fast as its items
    // are rendered (a parser that ran ahead held every parsed body and every rendered one at
    // once: the peak was both).
    let pending = AtomicUsize::new(0);
    let most_pending = 2 * rayon::current_num_threads().max(1);
    let parsed = rayon::scope(|scope| {
        let mut batch: Vec<(usize, RawItem, String, IdSource)> = Vec::with_capacity(BATCH);
        let mut index = 0usize;
        let flush = |batch: Vec<(usize, RawItem, String, IdSource)>| {
            let done = &done;
            let pending = &pending;
            pending.fetch_add(1, Ordering::AcqRel);
            scope.spawn(move |_| {
                let rendered: Vec<Ranked> = batch
                    .into_iter()
                    .map(|(i, raw, id, src)| {
                        let date = raw.date();
                        let (item, fell_back) = content::render_one(raw, id, src, render);
                        (date, i, item, fell_back)
                    })
                    .collect();
                done.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend(rendered);
                pending.fetch_sub(1, Ordering::AcqRel);
            });
            // Bounded: every pass either renders a batch here or lets the threads that hold
            // the others go on, and there are at most `most_pending` + 1 of them.
            while pending.load(Ordering::Acquire) > most_pending {
                if rayon::yield_now() != Some(rayon::Yield::Executed) {
                    std::thread::yield_now();
                }
            }
        };
        let result = parse_into(body, content_type, doc_url, &mut |item| {
            let i = index;
            index += 1;
            // A reader's view needs every id of the document, selected or not.
            let early = selection.seen.as_ref().map(|_| {
                let (id, source) = ids::for_item(feed_url, &item, i);
                present.push(id.clone());
                (id, source)
            });
            match selection.judge(&item) {
                select::Verdict::Keep => {}
                select::Verdict::Since => return omitted_by_since += 1,
                select::Verdict::Query => return omitted_by_query += 1,
            }
            let (id, source) = early.unwrap_or_else(|| ids::for_item(feed_url, &item, i));
            if selection.seen.as_ref().is_some_and(|s| s.hides(&id)) {
                return seen.push(id);
            }
            batch.push((i, item, id, source));
            if batch.len() == BATCH {
                flush(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)));
            }
        });
        if !batch.is_empty() {
            flush(batch);
        }
        result
    });
    let raw = parsed?;
    let mut ranked = done.into_inner().unwrap_or_else(|e| e.into_inner());
    ranked.sort_by(|(da, ia, ..), (db, ib, ..)| select::newest_first((*da, *ia), (*db, *ib)));
    let rendered = ranked
        .into_iter()
        .map(|(_, _, item, fell_back)| (item, fell_back));
    let mut built = finish(rendered, 0, omitted_by_since);
    built.omitted_by_query = omitted_by_query;
    built.omitted_as_seen = seen.len();
    built.present = present;
    built.seen = seen;
    Ok((raw, built))
}

/// Selects (`--since`, sort, `--limit`), identifies and renders the items of `feed`.
pub(crate) fn build(
    feed_url: &str,
    items: Vec<RawItem>,
    selection: &Selection,
    render: &RenderOptions,
    parallel: bool,
) -> Built {
    let identified: Vec<(RawItem, String, crate::model::IdSource)> = items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let (id, source) = ids::for_item(feed_url, &item, i);
            (item, id, source)
        })
        .collect();
    let present = match selection.seen {
        Some(_) => identified.iter().map(|(_, id, _)| id.clone()).collect(),
        None => Vec::new(),
    };
    let selected = select::apply(identified, selection);
    let rendered = content::render_all(selected.items, render, parallel);
    let mut built = finish(
        rendered.into_iter(),
        selected.omitted_by_limit,
        selected.omitted_by_since,
    );
    built.omitted_by_query = selected.omitted_by_query;
    built.omitted_as_seen = selected.seen.len();
    built.present = present;
    built.seen = selected.seen;
    built
}

/// The rendered items, in order, with their counts and warnings.
fn finish(
    rendered: impl Iterator<Item = (Item, bool)>,
    omitted_by_limit: usize,
    omitted_by_since: usize,
) -> Built {
    let mut built = Built {
        omitted_by_limit,
        omitted_by_since,
        ..Built::default()
    };
    let mut fallbacks = 0;
    for (item, fell_back) in rendered {
        if item.content_truncated {
            built.content_truncated += 1;
        }
        if fell_back {
            fallbacks += 1;
        }
        built.items.push(item);
    }
    if fallbacks > 0 {
        built.warnings.push((
            WarningCode::ContentExtractionFallback,
            format!(
                "{fallbacks} item bodies could not be converted and are given as stripped text"
            ),
        ));
    }
    if !built.items.is_empty()
        && built
            .items
            .iter()
            .all(|i| i.published.is_none() && i.updated.is_none())
    {
        built.warnings.push((
            WarningCode::UndatedItems,
            "no returned item has a date; order is the feed's own and no date cutoff can filter them"
                .into(),
        ));
    }
    built
}

/// The item of `items` whose id, guid or URL is `key`, rendered.
pub(crate) fn find_item(
    feed_url: &str,
    items: Vec<RawItem>,
    key: &str,
    render: &RenderOptions,
) -> Option<(Item, bool)> {
    let key = key.trim();
    let key_url = Url::parse(key).ok().map(String::from);
    items.into_iter().enumerate().find_map(|(i, item)| {
        let (id, source) = ids::for_item(feed_url, &item, i);
        let hit = id == key
            || item.guid.as_deref() == Some(key)
            || item.url.as_deref() == Some(key)
            || (key_url.is_some() && item.url == key_url);
        hit.then(|| content::render_all(vec![(item, id, source)], render, false).pop())
            .flatten()
    })
}

/// Adds this feed's selection counts to the run's truncation report.
pub(crate) fn add_truncation(t: &mut Truncation, built: &Built) {
    t.items_omitted_by_limit += built.omitted_by_limit;
    t.items_omitted_by_since += built.omitted_by_since;
    t.items_omitted_by_query += built.omitted_by_query;
    t.items_omitted_as_seen += built.omitted_as_seen;
    t.items_content_truncated += built.content_truncated;
}
