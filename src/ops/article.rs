//! `fetch_articles`: pages through the cache and the gate, each reduced to its readable
//! article; robots.txt consulted first when asked (the MCP server always asks).

use chrono::Utc;
use tokio::time::Instant;
use url::Url;

use super::cached::{CachedGet, Fetched, Got};
use super::extract::{CallShare, Extracting, on_page_thread};
use super::{CacheMode, Context};
use crate::article;
use crate::cache::{Entry, Kind};
use crate::date;
use crate::error::Error;
use crate::feed::{self, RenderOptions, estimate_tokens, truncate_chars};
use crate::http::Lineage;
use crate::inputs::{Input, Source};
use crate::model::{
    ArticleOutput, ArticleResult, FeedStatus, PageWarning, SCHEMA_VERSION, WarningCode,
};
use crate::payload::Payload;
use crate::schedule::{Job, run_batch};

/// What the `Accept` header asks for when fetching a page to read.
const ACCEPT_ARTICLE: &str = "text/html, application/xhtml+xml;q=0.9, */*;q=0.5";

/// Options of `fetch_articles`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ArticleOptions {
    /// `--content` and `--max-content-chars`.
    pub render: RenderOptions,
    /// How the cache is used.
    pub cache: CacheMode,
    /// Serve a cached copy when the origin fails.
    pub stale_if_error: bool,
    /// Read the page host's robots.txt first and honour it (the MCP server; the CLI with
    /// `--respect-robots`).
    pub respect_robots: bool,
    /// The call's deadline, as for [`super::FetchOptions::deadline`].
    pub deadline: Option<Instant>,
    /// When the call began (set by the operation that reads the pages): the robots.txt
    /// files this process read before it are asked again under `--refresh`, `--no-cache`
    /// and revalidation.
    pub(crate) started: Option<Instant>,
}

impl ArticleOptions {
    /// These options for a call beginning now, unless its beginning is already known.
    pub(crate) fn for_call(&self) -> ArticleOptions {
        ArticleOptions {
            started: Some(self.started.unwrap_or_else(Instant::now)),
            ..*self
        }
    }
}

/// One page's result with its warnings.
pub(crate) struct PageOutcome {
    pub result: ArticleResult,
    pub warnings: Vec<PageWarning>,
}

pub(crate) fn blank(url: &str, format: feed::ContentFormat) -> ArticleResult {
    ArticleResult {
        url: crate::error::echo(url),
        final_url: None,
        status: FeedStatus::Error,
        from_cache: false,
        title: None,
        authors: Vec::new(),
        published: None,
        site_name: None,
        language: None,
        canonical_url: None,
        excerpt: None,
        lead_image: None,
        content: None,
        content_format: format.as_str().to_owned(),
        content_tokens_est: 0,
        content_hash: None,
        content_truncated: false,
        word_count: 0,
        next_offset: None,
        error: None,
        attempts: 0,
        gate_wait_ms: 0,
        cached_at: None,
        cache_age_seconds: None,
        fresh_until: None,
    }
}

impl PageOutcome {
    fn failed(url: &str, err: &Error, opts: &ArticleOptions) -> PageOutcome {
        let mut result = blank(url, opts.render.format);
        result.error = Some(err.to_page_object(Some(url)));
        PageOutcome {
            result,
            warnings: Vec::new(),
        }
    }

    fn warn(&mut self, code: WarningCode, message: impl Into<String>) {
        self.warnings.push(PageWarning {
            url: Some(self.result.url.clone()),
            code,
            message: message.into(),
        });
    }
}

/// Reads every input as an article (in request order in the output), pacing each host
/// through the gate. `on_progress(done, total)` is called as pages finish.
pub async fn fetch_articles(
    ctx: &Context,
    inputs: Vec<Input>,
    opts: &ArticleOptions,
    on_progress: &(dyn Fn(usize, usize) + Sync),
) -> ArticleOutput {
    let fetched_at = date::format(&Utc::now());
    let opts = &opts.for_call();
    let deadline = super::deadline::gate_deadline(ctx, opts.deadline);
    let outcomes = read_batch(ctx, inputs, opts, deadline, on_progress).await;
    let mut out = ArticleOutput {
        schema_version: SCHEMA_VERSION.to_owned(),
        fetched_at,
        total_content_tokens_est: 0,
        articles: Vec::with_capacity(outcomes.len()),
        errors: Vec::new(),
        warnings: ctx
            .standing_warnings()
            .into_iter()
            .map(PageWarning::from)
            .collect(),
    };
    for o in outcomes {
        out.total_content_tokens_est += o.result.content_tokens_est;
        if let Some(e) = &o.result.error {
            out.errors.push(e.clone());
        }
        out.warnings.extend(o.warnings);
        out.articles.push(o.result);
    }
    out
}

/// Reads a batch of pages, one queue per host, within `deadline`; results in input order.
pub(crate) async fn read_batch(
    ctx: &Context,
    inputs: Vec<Input>,
    opts: &ArticleOptions,
    deadline: Instant,
    on_progress: &(dyn Fn(usize, usize) + Sync),
) -> Vec<PageOutcome> {
    let jobs: Vec<Job<Input>> = inputs
        .into_iter()
        .map(|input| Job {
            host: match &input.source {
                Source::Http(url) => ctx.client.key_of(url),
                _ => None,
            },
            // Every page of a host is under way at once: the gate spaces their sends and the
            // window bounds their bodies, so one page read slowly holds up no other page
            // of its host.
            permits: match &input.source {
                Source::Http(_) => Some(usize::MAX),
                _ => None,
            },
            payload: input,
        })
        .collect();
    let share = CallShare::default();
    // Pages the caller named: nothing led to them.
    let named = Lineage::none();
    run_batch(
        jobs,
        ctx.config.gate.host_concurrency,
        |input| read_cut(ctx, input, &named, opts, deadline, &share),
        on_progress,
    )
    .await
}

/// [`read_one`] in the process's window of pages in flight, within the call's deadline
/// (`opts.deadline`): past it, a page still being read is `EXTRACTION_TIMEOUT`
/// (`cut_by: "call"`), one still waiting for its host `RATE_LIMITED` with its host's wait.
/// `led_by` is what led to the page (the chain its feed was read through; empty for a
/// page the caller named).
pub(crate) async fn read_cut(
    ctx: &Context,
    input: Input,
    led_by: &Lineage,
    opts: &ArticleOptions,
    deadline: Instant,
    share: &CallShare,
) -> PageOutcome {
    let extracting = Extracting::default();
    let name = input.feed_url.clone();
    let page = match &input.source {
        Source::Http(u) => Some(u.clone()),
        _ => None,
    };
    let work = async {
        let _place = match share.enter(&extracting, &name, opts.deadline).await {
            Ok(place) => place,
            Err(e) => return PageOutcome::failed(&name, &e, opts),
        };
        read_one(ctx, input, led_by, opts, deadline, &extracting).await
    };
    super::deadline::within(opts.deadline, work, || {
        // Read when the deadline comes: a page being read, or waiting behind its call's
        // other pages, says so; one waiting for its host gets that host's wait.
        let err = extracting.cut(&name).unwrap_or_else(|| match &page {
            Some(u) => super::deadline::cut_off(ctx, u),
            None => Error::internal("a local read outlived the call's deadline"),
        });
        PageOutcome::failed(&name, &err, opts)
    })
    .await
}

pub(crate) async fn read_one(
    ctx: &Context,
    input: Input,
    led_by: &Lineage,
    opts: &ArticleOptions,
    deadline: Instant,
    extracting: &Extracting,
) -> PageOutcome {
    let url = input.feed_url;
    match input.source {
        Source::Invalid(err) => PageOutcome::failed(&url, &err, opts),
        Source::File(path) => match ctx.read_local(&url, &path).await {
            Ok(body) => {
                let _place = ctx.pages.enter().await;
                let file_url = Url::from_file_path(std::path::absolute(&path).unwrap_or(path))
                    .unwrap_or_else(|_| Url::parse("file:///").expect("a valid URL"));
                let page = Page {
                    body,
                    content_type: Some("text/html".to_owned()),
                    final_url: file_url,
                };
                from_body(&url, page, opts, extracting).await
            }
            Err(e) => PageOutcome::failed(&url, &e, opts),
        },
        Source::Http(page) => {
            let page = Read {
                url: &url,
                page,
                led_by,
            };
            read_http(ctx, page, opts, deadline, extracting).await
        }
    }
}

/// A page's body as it arrived.
struct Page {
    body: Payload,
    content_type: Option<String>,
    final_url: Url,
}

/// Reads a page's body as an article on a page thread.
async fn from_body(
    url: &str,
    page: Page,
    opts: &ArticleOptions,
    extracting: &Extracting,
) -> PageOutcome {
    let render = opts.render;
    let Page {
        body,
        content_type,
        final_url,
    } = page;
    let doc_url = final_url.clone();
    let read = on_page_thread(&final_url, extracting, move |stop| {
        article::read(
            body,
            content_type.as_deref(),
            &doc_url,
            RenderOptions {
                max_content_chars: None,
                ..render
            },
            stop,
        )
    })
    .await;
    let a = match read {
        Ok(a) => a,
        Err(e) => {
            let mut o = PageOutcome::failed(url, &e, opts);
            o.result.final_url = Some(final_url.to_string());
            return o;
        }
    };
    let mut content = a.content;
    let mut truncated = false;
    if let (Some(c), Some(max)) = (&mut content, opts.render.max_content_chars) {
        truncated = truncate_chars(c, max);
    }
    let next_offset = truncated.then_some(opts.render.max_content_chars).flatten();
    let result = ArticleResult {
        status: FeedStatus::Ok,
        final_url: Some(final_url.to_string()),
        title: a.meta.title,
        authors: a.meta.authors,
        published: a.meta.published,
        site_name: a.meta.site_name,
        language: a.meta.language,
        canonical_url: a.meta.canonical_url,
        excerpt: a.meta.excerpt,
        lead_image: a.meta.lead_image,
        content_tokens_est: content.as_deref().map_or(0, estimate_tokens),
        content,
        content_hash: Some(a.content_hash),
        content_truncated: truncated,
        next_offset,
        word_count: a.word_count,
        ..blank(url, opts.render.format)
    };
    PageOutcome {
        result,
        warnings: Vec::new(),
    }
}

/// Serves a cached page as `status`.
async fn from_entry(
    url: &str,
    entry: Entry,
    status: FeedStatus,
    opts: &ArticleOptions,
    extracting: &Extracting,
) -> PageOutcome {
    let final_url = Url::parse(&entry.meta.final_url).ok();
    let cached_at = entry.meta.fetched_at.clone();
    let age = entry.meta.age(Utc::now()).map(|d| d.as_secs());
    let Some(final_url) = final_url else {
        let err = Error::internal("a cached page has no valid final URL");
        return PageOutcome::failed(url, &err, opts);
    };
    let page = Page {
        body: entry.body,
        content_type: entry.meta.content_type.clone(),
        final_url,
    };
    let mut o = from_body(url, page, opts, extracting).await;
    if o.result.status == FeedStatus::Ok {
        o.result.status = status;
    }
    o.result.from_cache = true;
    o.result.cached_at = Some(cached_at);
    o.result.cache_age_seconds = age;
    o
}

/// A page to read over http(s).
pub(super) struct Read<'a> {
    /// The page as given (the cache key, and the name in the output).
    pub url: &'a str,
    pub page: Url,
    /// What led to it.
    pub led_by: &'a Lineage,
}

/// A page (an article, a transcript) got as every page is: robots.txt asked before a cached
/// copy is served, and again of every hop sent (the owner's rule for each hop's site decides
/// over the caller's choice), through the cache, with a place in the pages' window. `Err`:
/// robots.txt refused it.
pub(super) async fn get_page(
    ctx: &Context,
    read: &Read<'_>,
    opts: &ArticleOptions,
    deadline: Instant,
    (accept, refuse): (&'static str, crate::http::Refuse),
) -> Result<Fetched, Error> {
    let since = opts.started.unwrap_or_else(Instant::now);
    let robots =
        super::robots::RobotsGuard::new(ctx, opts.cache, since).by_default(opts.respect_robots);
    robots
        .allow(&read.page, &read.led_by.then(&read.page), deadline)
        .await?;
    Ok(ctx
        .cached_get(CachedGet {
            kind: Kind::Page,
            key: read.url,
            url: read.page.clone(),
            mode: opts.cache,
            stale_if_error: opts.stale_if_error,
            since: None,
            deadline,
            accept,
            refuse: Some(refuse),
            hops: robots
                .applies_anywhere()
                .then_some(&robots as &dyn crate::http::HopCheck),
            window: Some(ctx.pages.semaphore()),
            led_by: read.led_by.clone(),
        })
        .await)
}

async fn read_http(
    ctx: &Context,
    read: Read<'_>,
    opts: &ArticleOptions,
    deadline: Instant,
    extracting: &Extracting,
) -> PageOutcome {
    let url = read.url;
    let f = match get_page(
        ctx,
        &read,
        opts,
        deadline,
        (ACCEPT_ARTICLE, article::refuse),
    )
    .await
    {
        Ok(f) => f,
        Err(e) => return PageOutcome::failed(url, &e, opts),
    };
    // The page's place in the window, held until it is read.
    let _place = f.window;
    let mut o = match f.got {
        Got::Cached(entry, status) => from_entry(url, entry, status, opts, extracting).await,
        Got::Stale(entry) => from_entry(url, entry, FeedStatus::Stale, opts, extracting).await,
        Got::Fresh(resp) => {
            let page = Page {
                body: resp.body,
                content_type: resp.content_type,
                final_url: resp.final_url,
            };
            from_body(url, page, opts, extracting).await
        }
        Got::Failed(err) => PageOutcome::failed(url, &err, opts),
    };
    o.result.attempts = f.attempts;
    o.result.gate_wait_ms = f.gate_wait.as_millis() as u64;
    o.result.fresh_until = f.fresh_until_ms.and_then(super::format_ms);
    for (code, msg) in f.warnings {
        o.warn(code, msg);
    }
    tracing::info!(
        url,
        status = ?o.result.status,
        error = o.result.error.as_ref().map(|e| e.code.as_str()),
        attempts = o.result.attempts,
        gate_wait_ms = o.result.gate_wait_ms,
        words = o.result.word_count,
        "read"
    );
    o
}

/// Reads `item`'s page as an article (`get_item` with `article: true`); an item with no
/// page gets an error result saying so. `feed` is what [`super::show_item_traced`] said the
/// item's feed was read through: the page is a request it led to.
pub async fn read_item_article(
    ctx: &Context,
    item: &crate::model::Item,
    feed: &Lineage,
    opts: &ArticleOptions,
) -> (ArticleResult, Vec<crate::model::Warning>) {
    let page = item
        .url
        .as_deref()
        .map_or_else(crate::inputs::no_link, crate::inputs::classify_link);
    let opts = &opts.for_call();
    let o = read_cut(
        ctx,
        page,
        feed,
        opts,
        super::deadline::gate_deadline(ctx, opts.deadline),
        &CallShare::default(),
    )
    .await;
    let warnings = o
        .warnings
        .into_iter()
        .map(|w| crate::model::Warning::new(w.url, w.code, w.message))
        .collect();
    (o.result, warnings)
}
