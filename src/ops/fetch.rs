//! `fetch_feeds`: a batch of feeds through the cache, the gate and the parser.

use crate::model::WarningCode;
use chrono::Utc;
use tokio::time::Instant;
use url::Url;

use super::cached::{CachedGet, Got};
use super::{Context, FetchOptions, compute};
use crate::cache::freshness::{Basis, Declared};
use crate::cache::{Entry, Kind};
use crate::date;
use crate::error::Error;
use crate::feed::{self, Built};
use crate::http::{ACCEPT_FEEDS, Lineage};
use crate::inputs::{Input, Source};
use crate::model::{
    FeedMeta, FeedResult, FeedStatus, FetchOutput, SCHEMA_VERSION, Truncation, Warning,
};
use crate::payload::Payload;
use crate::schedule::{Job, run_batch};

/// One feed's result with its warnings and selection counts.
struct FeedOutcome {
    feed: FeedResult,
    warnings: Vec<Warning>,
    built: Built,
    /// The chain the feed was read through: its items' pages are requests it led to.
    lineage: Lineage,
    /// The schedule the feed's body declares, when it was read and declares one.
    declared: Option<Declared>,
}

fn blank(feed_url: &str) -> FeedResult {
    FeedResult {
        feed_url: crate::error::echo(feed_url),
        final_url: None,
        status: FeedStatus::Error,
        from_cache: false,
        meta: FeedMeta::default(),
        item_count: 0,
        content_tokens_est_total: 0,
        items: Vec::new(),
        error: None,
        attempts: 0,
        gate_wait_ms: 0,
        cached_at: None,
        cache_age_seconds: None,
        fresh_until: None,
        fresh_by: None,
    }
}

impl FeedOutcome {
    fn failed(feed_url: &str, err: &Error) -> FeedOutcome {
        let mut feed = blank(feed_url);
        feed.error = Some(err.to_object(Some(feed_url)));
        FeedOutcome {
            feed,
            warnings: Vec::new(),
            built: Built::default(),
            lineage: Lineage::none(),
            declared: None,
        }
    }

    fn warn(&mut self, code: WarningCode, message: impl Into<String>) {
        self.warnings.push(Warning::new(
            Some(self.feed.feed_url.clone()),
            code,
            message.into(),
        ));
    }
}

/// Fetches every input (in request order in the output), pacing each host through the
/// gate. `on_progress(done, total)` is called as feeds finish.
pub async fn fetch_feeds(
    ctx: &Context,
    inputs: Vec<Input>,
    opts: &FetchOptions,
    on_progress: &(dyn Fn(usize, usize) + Sync),
) -> FetchOutput {
    let fetched_at = date::format(&Utc::now());
    let deadline = super::deadline::gate_deadline(ctx, opts.deadline);
    let jobs: Vec<Job<(usize, Input)>> = inputs
        .into_iter()
        .enumerate()
        .map(|(index, input)| Job {
            host: match &input.source {
                Source::Http(url) => ctx.client.key_of(url),
                _ => None,
            },
            permits: match &input.source {
                Source::Http(url) => ctx.client.rule_permits(url),
                _ => None,
            },
            payload: (index, input),
        })
        .collect();
    // With `--articles`, an item's page is read as soon as its feed is in, beside the
    // other feeds: the gate queues each page on its host like any send, so a strict
    // host's pages never hold up another host's feeds.
    let (tx, mut rx) =
        tokio::sync::mpsc::unbounded_channel::<(usize, usize, Input, std::sync::Arc<Lineage>)>();
    // With `--dedupe drop`, a page is not read for an item certain to be dropped.
    let claims = super::dedupe::Claims::default();
    let claims = &claims;
    let feeds = async move {
        let outcomes = run_batch(
            jobs,
            ctx.config.gate.host_concurrency,
            |(index, input)| {
                let tx = &tx;
                async move {
                    let o = super::deadline::input_within(
                        ctx,
                        opts.deadline,
                        input,
                        |input| fetch_one(ctx, input, opts, deadline),
                        FeedOutcome::failed,
                    )
                    .await;
                    if opts.articles.is_some() {
                        let doomed = match opts.dedupe {
                            super::Dedupe::Drop => claims.claim(index, &o.feed.items),
                            _ => Vec::new(),
                        };
                        let lineage = std::sync::Arc::new(o.lineage.clone());
                        for (i, item) in o.feed.items.iter().enumerate() {
                            if doomed.contains(&i) {
                                continue;
                            }
                            let page = item
                                .url
                                .as_deref()
                                .map_or_else(crate::inputs::no_link, crate::inputs::classify_link);
                            let _ = tx.send((index, i, page, lineage.clone()));
                        }
                    }
                    o
                }
            },
            on_progress,
        )
        .await;
        drop(tx);
        outcomes
    };
    let pages = async {
        let Some(aopts) = opts.articles.map(|a| a.for_call()) else {
            return Vec::new();
        };
        let share = super::extract::CallShare::default();
        let share = &share;
        let mut running = futures::stream::FuturesUnordered::new();
        let mut done = Vec::new();
        let mut open = true;
        loop {
            tokio::select! {
                msg = rx.recv(), if open => match msg {
                    Some((f, i, input, led_by)) => running.push(async move {
                        (f, i, super::article::read_cut(ctx, input, &led_by, &aopts, deadline, share).await)
                    }),
                    None => open = false,
                },
                Some(r) = futures::StreamExt::next(&mut running), if !running.is_empty() => done.push(r),
                else => break,
            }
        }
        done
    };
    let (mut outcomes, pages) = tokio::join!(feeds, pages);
    let mut page_warnings = Vec::new();
    if let Some(topts) = &opts.transcripts {
        let items = outcomes
            .iter_mut()
            .flat_map(|o| {
                let led_by = &o.lineage;
                o.feed.items.iter_mut().map(move |i| (i, led_by))
            })
            .collect();
        page_warnings.extend(super::transcripts::attach(ctx, items, topts, deadline).await);
    }
    for (f, i, page) in pages {
        if let Some(item) = outcomes.get_mut(f).and_then(|o| o.feed.items.get_mut(i)) {
            item.article = Some(Box::new(page.result));
        }
        page_warnings.extend(page.warnings.into_iter().map(|w| Warning {
            feed_url: w.url,
            code: w.code,
            message: w.message,
        }));
    }
    let mut out = assemble(ctx, fetched_at, outcomes, opts);
    super::dedupe::apply(&mut out, opts.dedupe);
    out.warnings.extend(page_warnings);
    out
}

fn assemble(
    ctx: &Context,
    fetched_at: String,
    outcomes: Vec<FeedOutcome>,
    opts: &FetchOptions,
) -> FetchOutput {
    let mut out = FetchOutput {
        schema_version: SCHEMA_VERSION.to_owned(),
        fetched_at,
        total_items: 0,
        total_content_tokens_est: 0,
        feeds: Vec::with_capacity(outcomes.len()),
        errors: Vec::new(),
        warnings: ctx.standing_warnings(),
        duplicates: Vec::new(),
        next_cursor: None,
        delivery: None,
        truncation: Truncation {
            limit: opts.selection.limit,
            since: opts.selection.since.as_ref().map(date::format),
            query: opts.selection.query.as_ref().map(|q| q.text.clone()),
            max_content_chars: opts.render.max_content_chars,
            ..Truncation::default()
        },
    };
    for o in outcomes {
        feed::add_truncation(&mut out.truncation, &o.built);
        out.total_items += o.feed.item_count;
        out.total_content_tokens_est += o.feed.content_tokens_est_total;
        if let Some(e) = &o.feed.error {
            out.errors.push(e.clone());
        }
        out.warnings.extend(o.warnings);
        out.feeds.push(o.feed);
    }
    out
}

async fn fetch_one(
    ctx: &Context,
    input: Input,
    opts: &FetchOptions,
    deadline: Instant,
) -> FeedOutcome {
    let feed_url = input.feed_url;
    match input.source {
        Source::Invalid(err) => FeedOutcome::failed(&feed_url, &err),
        Source::File(path) => match ctx.read_local(&feed_url, &path).await {
            Ok(body) => {
                let mut o = from_body(&feed_url, body, None, None, opts).await;
                // Its items' links are a document's, not the caller's own.
                let file = Url::from_file_path(std::path::absolute(&path).unwrap_or(path))
                    .unwrap_or_else(|_| Url::parse("file:///").expect("a valid URL"));
                o.lineage = Lineage::none().then(&file);
                o
            }
            Err(e) => FeedOutcome::failed(&feed_url, &e),
        },
        Source::Http(url) => fetch_http(ctx, &feed_url, url, opts, deadline).await,
    }
}

/// Parses and renders a body off the async threads.
async fn from_body(
    feed_url: &str,
    body: Payload,
    content_type: Option<String>,
    doc_url: Option<Url>,
    opts: &FetchOptions,
) -> FeedOutcome {
    let url = feed_url.to_owned();
    let mut selection = opts.selection.clone();
    let named = crate::error::echo(feed_url);
    if let Some(view) = &opts.unseen {
        selection.seen = Some(view.seen_of(&named));
    }
    let render = opts.render;
    let big = feed::parallel(body.len());
    let work = move || {
        feed::process(
            &url,
            body,
            content_type.as_deref(),
            doc_url.as_ref(),
            &selection,
            &render,
        )
    };
    // A large body is parsed and rendered on every core; a small one on one work thread.
    let parsed = if big {
        compute(work).await
    } else {
        super::blocking(work).await
    }
    .and_then(|r| r);
    match parsed {
        Err(e) => FeedOutcome::failed(feed_url, &e),
        Ok(mut p) => {
            if let Some(view) = &opts.unseen {
                let present = std::mem::take(&mut p.built.present);
                view.note(&named, present, std::mem::take(&mut p.built.seen));
            }
            let items = std::mem::take(&mut p.built.items);
            let warnings = std::mem::take(&mut p.built.warnings);
            let feed = FeedResult {
                status: FeedStatus::Ok,
                meta: p.meta,
                item_count: items.len(),
                content_tokens_est_total: items.iter().map(|i| i.content_tokens_est).sum(),
                items,
                ..blank(feed_url)
            };
            let declared = feed
                .meta
                .declared_ttl_seconds
                .zip(p.declared_by)
                .map(|(seconds, by)| Declared { seconds, by });
            let mut o = FeedOutcome {
                feed,
                warnings: Vec::new(),
                built: p.built,
                lineage: Lineage::none(),
                declared,
            };
            for (code, msg) in warnings {
                o.warn(code, msg);
            }
            o
        }
    }
}

/// Serves a cached entry's body as `status`.
async fn from_entry(
    feed_url: &str,
    entry: Entry,
    status: FeedStatus,
    opts: &FetchOptions,
) -> FeedOutcome {
    let doc_url = Url::parse(&entry.meta.final_url).ok();
    let cached_at = entry.meta.fetched_at.clone();
    let age = entry.meta.age(Utc::now()).map(|d| d.as_secs());
    let mut o = from_body(
        feed_url,
        entry.body,
        entry.meta.content_type.clone(),
        doc_url,
        opts,
    )
    .await;
    if o.feed.status == FeedStatus::Ok {
        o.feed.status = status;
        o.feed.from_cache = true;
        o.feed.final_url = Some(entry.meta.final_url);
        o.feed.cached_at = Some(cached_at);
        o.feed.cache_age_seconds = age;
    }
    o
}

async fn fetch_http(
    ctx: &Context,
    feed_url: &str,
    url: Url,
    opts: &FetchOptions,
    deadline: Instant,
) -> FeedOutcome {
    let cap = ctx.freshness_cap(&url);
    // A feed remembered as moved for good is asked for at its new address.
    let mut notes: Vec<(WarningCode, String)> = Vec::new();
    let moves = match &ctx.moves {
        Ok(m) => m.clone(),
        Err(e) => {
            notes.push((
                WarningCode::GateStoreUnavailable,
                format!("moved feeds are not remembered: {e}"),
            ));
            None
        }
    };
    let route = match &moves {
        Some(m) => match m.route(&url).await {
            Ok(r) => Some(r),
            Err(e) => {
                notes.push((
                    WarningCode::GateStoreUnavailable,
                    format!("moved feeds could not be looked up: {e}"),
                ));
                None
            }
        },
        None => None,
    };
    let send_to = route
        .as_ref()
        .map_or_else(|| url.clone(), |r| r.url.clone());
    if let Some(w) = route
        .as_ref()
        .and_then(|r| super::moved::moved_warning(feed_url, r))
    {
        notes.push(w);
    }
    let f = ctx
        .cached_get(CachedGet {
            kind: Kind::Feed,
            key: feed_url,
            url: send_to.clone(),
            mode: opts.cache,
            stale_if_error: opts.stale_if_error,
            since: opts.selection.since,
            deadline,
            accept: ACCEPT_FEEDS,
            refuse: None,
            hops: None,
            window: None,
            led_by: Lineage::none(),
        })
        .await;
    let served_cached = matches!(f.got, Got::Cached(..));
    let mut o = match f.got {
        Got::Cached(entry, status) => from_entry(feed_url, entry, status, opts).await,
        Got::Stale(entry) => from_entry(feed_url, entry, FeedStatus::Stale, opts).await,
        Got::Fresh(resp) => {
            let final_url = resp.final_url.to_string();
            let mut o = from_body(
                feed_url,
                resp.body,
                resp.content_type,
                Some(resp.final_url),
                opts,
            )
            .await;
            o.feed.final_url = Some(final_url);
            // A body that is not a feed came with a success status: say which.
            if let Some(e) = o
                .feed
                .error
                .as_mut()
                .filter(|e| e.code == "FEED_PARSE_FAILED")
            {
                e.details.insert("http_status".to_owned(), 200.into());
            }
            o
        }
        Got::Failed(err) => FeedOutcome::failed(feed_url, &err),
    };
    // The answer of the address asked continues (or ends) its run of permanent redirects.
    if let Some(m) = moves.as_ref().filter(|_| f.answered) {
        match m.observe(&send_to, f.moved_to.as_ref()).await {
            Ok(n) if n == super::moved::REMEMBER_AFTER => {
                if let Some(to) = &f.moved_to {
                    notes.push(super::moved::remembered_warning(feed_url, to));
                }
            }
            Ok(_) => {}
            Err(e) => notes.push((
                WarningCode::GateStoreUnavailable,
                format!("a moved feed could not be noted: {e}"),
            )),
        }
    }
    for (code, msg) in notes {
        o.warn(code, msg);
    }
    o.feed.attempts = f.attempts;
    o.feed.gate_wait_ms = f.gate_wait.as_millis() as u64;
    o.lineage = f.lineage;
    if let Some(basis) = f.basis {
        freshness(
            ctx,
            feed_url,
            &mut o,
            basis,
            (cap, opts.cache),
            served_cached,
        )
        .await;
    }
    for (code, msg) in f.warnings {
        o.warn(code, msg);
    }
    tracing::info!(
        feed_url,
        status = ?o.feed.status,
        error = o.feed.error.as_ref().map(|e| e.code.as_str()),
        attempts = o.feed.attempts,
        gate_wait_ms = o.feed.gate_wait_ms,
        items = o.feed.item_count,
        "fetched"
    );
    o
}

/// Sets `o`'s `fresh_until` and `fresh_by` from what served it (`basis`) and the schedule
/// its body declares, capped at `cap` (a copy served from the cache only while it is still
/// fresh); and records that schedule with the cached copy when it changed, so the next
/// fetch counts it before any request.
async fn freshness(
    ctx: &Context,
    feed_url: &str,
    o: &mut FeedOutcome,
    mut basis: Basis,
    (cap, mode): (std::time::Duration, super::CacheMode),
    served_cached: bool,
) {
    // A body that could not be read as a feed declares nothing.
    let declared = o.declared.filter(|_| o.feed.status != FeedStatus::Error);
    let stored = basis.declared;
    basis.declared = declared;
    let now = crate::cache::now_ms();
    if let Some((until, by)) = basis
        .until(cap)
        .filter(|(until, _)| !served_cached || now < *until)
    {
        o.feed.fresh_until = super::format_ms(until);
        o.feed.fresh_by = Some(by);
    }
    if stored == declared {
        return;
    }
    if let Some(cache) = ctx.cache_of(Kind::Feed, mode) {
        let url = feed_url.to_owned();
        let noted = super::blocking(move || cache.note_declared(&url, basis.received_ms, declared));
        match noted.await {
            Ok(Err(e)) => o.warn(WarningCode::CacheWriteFailed, e.to_string()),
            // The fleet's copy learns the schedule too (its metadata alone, while it holds
            // the same body), so another node counts it before any request.
            Ok(Ok(Some(entry))) => {
                if let Some(tier) = &ctx.shared_cache {
                    tier.annotate(Kind::Feed, &entry).await;
                }
            }
            _ => {}
        }
    }
}
