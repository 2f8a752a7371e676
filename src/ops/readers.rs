//! Readers: a fetch for a reader and its delivery, acknowledging deliveries, and listing
//! and forgetting readers. Both front ends call these; `crate::readers` keeps the records.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::{Context, FetchOptions, format_ms};
use crate::error::{Error, Result};
use crate::inputs::Input;
use crate::model::{
    AckOutput, Delivery, FetchOutput, ForgetOutput, PendingDelivery, ReaderFeedInfo, ReaderInfo,
    ReadersOutput, SCHEMA_VERSION,
};
use crate::readers::{
    Claim, Commit, DeliveredFeed, DeliveryRecord, ReaderId, Readers, Refusal, Scope,
    TOKEN_LIFETIME, View, WalkFeed, random_id,
};

/// A fetch's reader, as asked (`--reader NAME [--unseen]`, MCP `reader` and `unseen`).
#[derive(Debug, Clone)]
pub struct ReaderRequest {
    /// The reader.
    pub reader: ReaderId,
    /// Leave out what it has acknowledged.
    pub unseen: bool,
}

/// Who acknowledges a delivery.
#[derive(Debug, Clone, Copy)]
pub enum Caller<'a> {
    /// The machine's own user (`rss ack`): any reader's token.
    Operator,
    /// An MCP client: only tokens of its own readers (those of its bearer token's scope,
    /// `None` without one).
    Client(Option<&'a Scope>),
}

impl Context {
    fn readers(&self) -> Result<&Readers> {
        self.readers
            .as_deref()
            .map_err(|why| Error::usage(why.clone()))
    }
}

/// The view of `req` for a run over `inputs`: the reader's marks as they stand now, or, for
/// a later page of a walk (`walk`: its first delivery), as its first page saw them.
pub async fn open_view(
    ctx: &Context,
    req: &ReaderRequest,
    inputs: &[Input],
    walk: Option<&str>,
) -> Result<Arc<View>> {
    let readers = ctx.readers()?;
    // Each feed as the output names it.
    let feeds: Vec<String> = inputs
        .iter()
        .map(|i| crate::error::echo(&i.feed_url))
        .collect();
    let marks = readers.seen(&req.reader, &feeds).await?;
    let mut seen: HashMap<String, Arc<HashSet<u64>>> = feeds
        .iter()
        .zip(marks)
        .map(|(f, m)| (f.clone(), Arc::new(m)))
        .collect();
    if let Some(walk) = walk {
        let (first, _) = readers.delivery(&req.reader, walk).await?;
        let snapshot = first.and_then(|d| d.walk).ok_or_else(|| {
            Error::usage(
                "cursor refused: the first page of this walk is no longer kept for the reader \
                 (forgotten, or pushed out by newer deliveries); call again without cursor",
            )
        })?;
        for w in snapshot {
            let ids = w.seen.iter().filter_map(|id| crate::feed::id_key(id));
            seen.insert(w.feed_url, Arc::new(ids.collect()));
        }
    }
    Ok(Arc::new(View::new(
        req.reader.clone(),
        seen,
        req.unseen,
        walk.map(str::to_owned),
    )))
}

/// What acknowledging `out` marks, per feed: its items (oldest first, so the newest are
/// the last to go) and every other item of their duplicate groups.
fn marked_by(out: &FetchOutput) -> Vec<(String, Vec<String>)> {
    let here: HashSet<(&str, &str)> = out
        .feeds
        .iter()
        .flat_map(|f| f.items.iter().map(|i| (f.feed_url.as_str(), i.id.as_str())))
        .collect();
    let items = out.feeds.iter().flat_map(|f| {
        f.items
            .iter()
            .rev()
            .map(|i| (f.feed_url.as_str(), i.id.as_str()))
    });
    let groups = out
        .duplicates
        .iter()
        .filter(|g| {
            g.items
                .iter()
                .any(|i| here.contains(&(i.feed_url.as_str(), i.id.as_str())))
        })
        .flat_map(|g| g.items.iter().map(|i| (i.feed_url.as_str(), i.id.as_str())));
    let mut order: Vec<(String, Vec<String>)> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    let mut taken: HashSet<(&str, &str)> = HashSet::with_capacity(here.len());
    for (feed, id) in items.chain(groups) {
        if !taken.insert((feed, id)) {
            continue;
        }
        let i = *at.entry(feed).or_insert_with(|| {
            order.push((feed.to_owned(), Vec::new()));
            order.len() - 1
        });
        order[i].1.push(id.to_owned());
    }
    order
}

/// A delivery drawn before the output it is made of is cut: its id, lifetime and token are
/// known first, so what it adds to a result is counted in the result's budget.
#[derive(Debug, Clone)]
pub struct Prepared {
    id: String,
    issued_ms: u64,
    expires_ms: u64,
    token: String,
    walk: String,
}

impl Prepared {
    /// The token the delivery will carry if it has items.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// When the token will expire (RFC 3339).
    pub fn expires_at(&self) -> Option<String> {
        format_ms(self.expires_ms)
    }

    /// The walk of pages its output belongs to: the walk's first delivery (this one, for a
    /// first page), which a page's `next_cursor` names.
    pub fn walk(&self) -> &str {
        &self.walk
    }
}

/// Draws the delivery `view`'s output will be: its id, lifetime and token.
pub async fn prepare(ctx: &Context, view: &View) -> Result<Prepared> {
    let readers = ctx.readers()?;
    let now = readers.now_ms().await?;
    let id = random_id();
    let expires_ms = now.saturating_add(TOKEN_LIFETIME.as_millis() as u64);
    let token = readers.key().await?.encode(&Claim {
        reader: view.reader().clone(),
        delivery: id.clone(),
        expires_ms,
    });
    Ok(Prepared {
        walk: view.walk().unwrap_or(&id).to_owned(),
        id,
        issued_ms: now,
        expires_ms,
        token,
    })
}

/// Makes `out` (a whole run) a delivery to `view`'s reader ([`deliver_prepared`]).
pub async fn deliver(ctx: &Context, view: &View, out: &mut FetchOutput) -> Result<()> {
    let prepared = prepare(ctx, view).await?;
    deliver_prepared(ctx, view, prepared, out).await
}

/// Makes `out` (a whole run, or one page of it, whose cursor names `prepared`'s walk) the
/// delivery `prepared` to `view`'s reader: stores what acknowledging it marks and sets
/// `out.delivery` with its token. The first page of a walk keeps the reader's view for the
/// pages after it.
pub async fn deliver_prepared(
    ctx: &Context,
    view: &View,
    prepared: Prepared,
    out: &mut FetchOutput,
) -> Result<()> {
    let readers = ctx.readers()?;
    let reader = view.reader();
    let items: usize = out.feeds.iter().map(|f| f.items.len()).sum();
    if items == 0 {
        out.delivery = Some(Delivery {
            reader: reader.name().to_owned(),
            token: None,
            items: 0,
            expires_at: None,
        });
        return Ok(());
    }
    let Prepared {
        id,
        issued_ms,
        expires_ms,
        token,
        ..
    } = prepared;
    let feeds: Vec<DeliveredFeed> = marked_by(out)
        .into_iter()
        .map(|(feed_url, ids)| {
            let marked: HashSet<u64> = ids.iter().filter_map(|i| crate::feed::id_key(i)).collect();
            let others = view
                .take_present(&feed_url)
                .into_iter()
                .filter(|id| crate::feed::id_key(id).is_none_or(|k| !marked.contains(&k)))
                .collect();
            DeliveredFeed {
                feed_url,
                ids,
                others,
            }
        })
        .collect();
    let walk = (out.next_cursor.is_some() && view.walk().is_none()).then(|| {
        view.reads()
            .into_iter()
            .map(|(feed_url, read)| WalkFeed {
                feed_url,
                seen: read.seen,
            })
            .collect()
    });
    let record = DeliveryRecord {
        v: 1,
        id,
        issued_ms,
        expires_ms,
        items,
        marks: feeds.iter().map(|f| f.ids.len()).sum(),
        feeds,
        walk,
        acked_ms: None,
    };
    readers.add_delivery(reader, &record).await?;
    out.delivery = Some(Delivery {
        reader: reader.name().to_owned(),
        token: Some(token),
        items,
        expires_at: format_ms(expires_ms),
    });
    Ok(())
}

/// Fetches `inputs` for `req`'s reader (`rss fetch --reader NAME [--unseen]`): with
/// `--unseen` what it has acknowledged is left out, and the whole output is one delivery.
pub async fn fetch_unseen(
    ctx: &Context,
    inputs: Vec<Input>,
    opts: &FetchOptions,
    req: &ReaderRequest,
    on_progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<FetchOutput> {
    let view = open_view(ctx, req, &inputs, None).await?;
    let opts = FetchOptions {
        unseen: Some(view.clone()),
        ..opts.clone()
    };
    let mut out = super::fetch_feeds(ctx, inputs, &opts, on_progress).await;
    deliver(ctx, &view, &mut out).await?;
    Ok(out)
}

fn refused(reason: &'static str, message: impl Into<String>) -> Error {
    Error::TokenRefused {
        reason,
        message: format!("{}; nothing was recorded", message.into()),
    }
}

/// Acknowledges the deliveries `tokens` stand for: records their items as seen for their
/// readers. Every token is checked first; one that is altered, from another store, expired,
/// unknown or (for an MCP client) another client's is a `USAGE_ERROR`, and nothing is
/// recorded. A token acknowledged before records nothing new and counts as
/// `already_acknowledged`.
pub async fn ack(ctx: &Context, tokens: &[String], caller: Caller<'_>) -> Result<AckOutput> {
    if tokens.is_empty() {
        return Err(Error::usage("give a delivery token to acknowledge"));
    }
    let readers = ctx.readers()?;
    let key = readers.key().await?;
    let mut found: Vec<(Claim, DeliveryRecord)> = Vec::new();
    for token in tokens {
        let claim = key.decode(token).map_err(|r| match r {
            Refusal::NotAToken => refused(
                "not_a_token",
                format!(
                    "{:?} is not a delivery token (they start with rss1.)",
                    crate::error::echo(token)
                ),
            ),
            Refusal::Forged => refused(
                "altered",
                format!(
                    "the token was altered, or was given by another state directory or store than {}",
                    readers.describe()
                ),
            ),
        })?;
        if let Caller::Client(scope) = caller
            && claim.reader.scope() != scope
        {
            return Err(refused(
                "other_client",
                "the token belongs to another client's reader",
            ));
        }
        let (record, now) = readers.delivery(&claim.reader, &claim.delivery).await?;
        if claim.expires_ms <= now {
            return Err(refused(
                "expired",
                format!(
                    "the token expired at {} ({} days after its delivery); fetch again: its items come again",
                    format_ms(claim.expires_ms).unwrap_or_default(),
                    TOKEN_LIFETIME.as_secs() / 86_400
                ),
            ));
        }
        let record = record.ok_or_else(|| {
            refused(
                "unknown",
                format!(
                    "reader {:?} has no such delivery any more (forgotten, or pushed out by newer deliveries); fetch again",
                    claim.reader.name()
                ),
            )
        })?;
        found.push((claim, record));
    }
    let mut out = AckOutput::default();
    // Each reader's deliveries (each once) committed together, then recorded.
    let mut by_reader: Vec<(ReaderId, Vec<DeliveryRecord>)> = Vec::new();
    for (claim, record) in found {
        let i = match by_reader.iter().position(|(r, _)| *r == claim.reader) {
            Some(i) => i,
            None => {
                by_reader.push((claim.reader, Vec::new()));
                by_reader.len() - 1
            }
        };
        let mine = &mut by_reader[i].1;
        if mine.iter().any(|d| d.id == record.id) {
            out.already_acknowledged += record.marks;
        } else {
            mine.push(record);
        }
    }
    for (reader, records) in by_reader {
        let stood = readers.commit(&reader, &records).await?;
        if stood.contains(&Commit::Gone) {
            return Err(refused(
                "unknown",
                format!(
                    "reader {:?} has no such delivery any more (forgotten, or pushed out by newer deliveries); fetch again",
                    reader.name()
                ),
            ));
        }
        for (record, stood) in records.iter().zip(stood) {
            if stood == Commit::Done {
                out.already_acknowledged += record.marks;
                continue;
            }
            let (new, already) = readers.apply(&reader, &record.id).await?;
            out.acknowledged += new;
            out.already_acknowledged += already;
        }
        readers.settle_all(&reader).await?;
    }
    Ok(out)
}

/// Every reader of the store with its marks and pending deliveries (`rss readers`).
pub async fn readers_list(ctx: &Context) -> Result<ReadersOutput> {
    let readers = ctx.readers()?;
    let (listed, now) = readers.list().await?;
    Ok(ReadersOutput {
        schema_version: SCHEMA_VERSION.to_owned(),
        store: readers.describe(),
        readers: listed
            .into_iter()
            .map(|l| ReaderInfo {
                reader: l.reader.name().to_owned(),
                scope: l.reader.scope().map(|s| s.as_str().to_owned()),
                feeds: l
                    .marks
                    .iter()
                    .map(|m| {
                        let (oldest, newest) = m.span();
                        ReaderFeedInfo {
                            feed_url: m.feed_url.clone(),
                            ids: m.marks.len(),
                            oldest_mark: oldest.and_then(format_ms),
                            newest_mark: newest.and_then(format_ms),
                        }
                    })
                    .collect(),
                pending_deliveries: l
                    .index
                    .pending(now)
                    .map(|d| PendingDelivery {
                        delivered_at: format_ms(d.issued_ms).unwrap_or_default(),
                        expires_at: format_ms(d.expires_ms).unwrap_or_default(),
                        items: d.items,
                    })
                    .collect(),
            })
            .collect(),
    })
}

/// Forgets `reader`'s marks in `feed`, or everything of `reader` (`rss readers forget`).
pub async fn readers_forget(
    ctx: &Context,
    reader: &ReaderId,
    feed: Option<&str>,
) -> Result<ForgetOutput> {
    let (feeds, deliveries) = ctx.readers()?.forget(reader, feed).await?;
    Ok(ForgetOutput { feeds, deliveries })
}
