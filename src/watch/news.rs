//! What a foreground watch (`rss watch`) prints of its events: each item once, as it
//! appears — not those present at the start unless asked — and, for a reader, only what
//! it has not acknowledged, each batch a delivery whose token `rss ack` takes (reading
//! moves no mark).

use std::collections::{HashMap, HashSet};

use super::Event;
use crate::error::Result;
use crate::model::{
    FeedResult, FeedStatus, FetchOutput, Item, NdjsonItem, SCHEMA_VERSION, Truncation, WatchRecord,
};
use crate::ops::{Context, ReaderRequest};

/// The items a watch has printed or passed over, per feed.
pub struct News {
    initial: bool,
    reader: Option<ReaderRequest>,
    /// Per feed (as subscribed), the ids known: printed, or present when the watch began.
    known: HashMap<String, HashSet<String>>,
}

impl News {
    /// News for a watch that prints the items present at the start too (`initial`), for
    /// `reader` if any (only what it has not acknowledged).
    pub fn new(initial: bool, reader: Option<ReaderRequest>) -> News {
        News {
            initial,
            reader,
            known: HashMap::new(),
        }
    }

    /// The lines `event` makes: its new items, then (for a reader, when there are any)
    /// their delivery.
    pub async fn on(&mut self, ctx: &Context, event: &Event) -> Result<Vec<WatchRecord>> {
        let (uri, items, first) = match event {
            Event::Read {
                uri,
                items: Some(items),
            } => (uri, items, true),
            Event::Changed {
                uri,
                items: Some(items),
            } => (uri, items, false),
            _ => return Ok(Vec::new()),
        };
        let known = self.known.entry(uri.to_string()).or_default();
        let fresh: Vec<Item> = items
            .iter()
            .filter(|i| !known.contains(&i.id))
            .cloned()
            .collect();
        known.extend(items.iter().map(|i| i.id.clone()));
        if first && !self.initial {
            return Ok(Vec::new());
        }
        let feed_url = crate::error::echo(&crate::inputs::classify(uri).feed_url);
        let Some(req) = &self.reader else {
            return Ok(lines(&feed_url, fresh));
        };
        let input = crate::inputs::classify(uri);
        let view = crate::ops::open_view(ctx, req, std::slice::from_ref(&input), None).await?;
        let seen = view.seen_of(&feed_url);
        let (hidden, unseen): (Vec<Item>, Vec<Item>) =
            fresh.into_iter().partition(|i| seen.hides(&i.id));
        if unseen.is_empty() {
            return Ok(Vec::new());
        }
        view.note(
            &feed_url,
            items.iter().map(|i| i.id.clone()).collect(),
            hidden.into_iter().map(|i| i.id).collect(),
        );
        let mut out = output_of(&feed_url, unseen);
        crate::ops::deliver(ctx, &view, &mut out).await?;
        let items = out.feeds.pop().map(|f| f.items).unwrap_or_default();
        let mut records = lines(&feed_url, items);
        records.extend(out.delivery.map(WatchRecord::Delivery));
        Ok(records)
    }
}

fn lines(feed_url: &str, items: Vec<Item>) -> Vec<WatchRecord> {
    items
        .into_iter()
        .map(|item| {
            WatchRecord::Item(Box::new(NdjsonItem {
                feed_url: feed_url.to_owned(),
                item,
            }))
        })
        .collect()
}

/// A fetch output holding `items` of `feed_url` alone: what a delivery is made of.
fn output_of(feed_url: &str, items: Vec<Item>) -> FetchOutput {
    FetchOutput {
        schema_version: SCHEMA_VERSION.to_owned(),
        fetched_at: crate::date::format(&chrono::Utc::now()),
        total_items: items.len(),
        total_content_tokens_est: items.iter().map(|i| i.content_tokens_est).sum(),
        feeds: vec![FeedResult {
            feed_url: feed_url.to_owned(),
            final_url: None,
            status: FeedStatus::Ok,
            from_cache: false,
            meta: Default::default(),
            item_count: items.len(),
            content_tokens_est_total: items.iter().map(|i| i.content_tokens_est).sum(),
            items,
            error: None,
            attempts: 0,
            gate_wait_ms: 0,
            cached_at: None,
            cache_age_seconds: None,
            fresh_until: None,
            fresh_by: None,
        }],
        errors: Vec::new(),
        warnings: Vec::new(),
        truncation: Truncation::default(),
        duplicates: Vec::new(),
        next_cursor: None,
        delivery: None,
    }
}
