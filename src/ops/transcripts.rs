//! Podcast episodes' transcripts (`podcast:transcript`) read as text, for `rss fetch
//! --transcripts`, MCP `fetch_feed` with `transcripts: true` and `get_item` with
//! `transcript: true`. A transcript is fetched like an article page: the same cached GET
//! through the gate (`Context::cached_get`), robots.txt under the same rule, a place in the
//! process's window of pages in flight, the body caps and the call's deadline; it is read on
//! a work thread, its text bounded (`feed::transcript::MAX_CHARS`, and `--max-content-chars`).

use futures::StreamExt;
use tokio::time::Instant;
use url::Url;

use super::cached::Got;
use super::{ArticleOptions, Context};
use crate::error::{Error, Result};
use crate::feed::transcript::{self, Format};
use crate::feed::truncate_chars;
use crate::http::Lineage;
use crate::inputs::Source;
use crate::model::{Item, PodcastEpisode, TranscriptLink, TranscriptText, Warning};
use crate::payload::Payload;

/// What the `Accept` header asks for when fetching a transcript.
const ACCEPT_TRANSCRIPT: &str =
    "application/json, text/vtt, application/x-subrip;q=0.9, text/html;q=0.8, */*;q=0.5";

/// Transcripts read at once in one call (each still waits for its host's turn).
const AT_ONCE: usize = 8;

/// The transcript of `ep` worth reading: the first of the best format its declared type
/// names (JSON and WebVTT name speakers), else the first whose type is unknown.
pub(crate) fn choose(ep: &PodcastEpisode) -> Option<&TranscriptLink> {
    ep.transcripts
        .iter()
        .enumerate()
        .min_by_key(|(i, t)| {
            let rank = t
                .mime_type
                .as_deref()
                .and_then(transcript::format_of_type)
                .map_or(9, Format::rank);
            (rank, *i)
        })
        .map(|(_, t)| t)
}

/// A transcript's body is not a transcript when it is audio, video, an image or a PDF.
fn refuse(content_type: Option<&str>, _first: &[u8]) -> Option<String> {
    let m = content_type?.split(';').next()?.trim().to_ascii_lowercase();
    let media = m.starts_with("audio/")
        || m.starts_with("video/")
        || m.starts_with("image/")
        || m == "application/pdf";
    media.then_some(m)
}

fn failed(url: &str, err: &Error) -> TranscriptText {
    let mut error = err.to_object(Some(url));
    // An error status is the transcript's page's, not a feed's.
    if matches!(
        err.code(),
        crate::error::ErrorCode::FeedFetchFailed | crate::error::ErrorCode::FeedGone
    ) {
        error.code = crate::error::ErrorCode::PageFetchFailed.as_str().to_owned();
    }
    TranscriptText {
        url: crate::error::echo(url),
        format: None,
        text: None,
        error: Some(error),
    }
}

/// The body read as text in the format the link, the server or the body itself names.
fn read_body(
    url: &str,
    link: &TranscriptLink,
    body: Payload,
    content_type: Option<&str>,
    max_chars: Option<usize>,
) -> Result<TranscriptText> {
    let text = crate::feed::decode::to_utf8(body, content_type);
    let format = link
        .mime_type
        .as_deref()
        .and_then(transcript::format_of_type)
        .or_else(|| content_type.and_then(transcript::format_of_type))
        .or_else(|| transcript::sniff(&text))
        .ok_or_else(|| Error::UnsupportedContent {
            url: url.to_owned(),
            content_type: content_type.unwrap_or("text/plain").to_owned(),
        })?;
    let mut out = transcript::to_plain_text(&text, format);
    if let Some(max) = max_chars
        && truncate_chars(&mut out, max)
    {
        out.push_str(&format!("\n[cut at {max} characters]"));
    }
    Ok(TranscriptText {
        url: crate::error::echo(url),
        format: Some(format.as_str().to_owned()),
        text: Some(out),
        error: None,
    })
}

/// Reads one transcript; what went wrong is its `error`.
pub(crate) async fn read(
    ctx: &Context,
    link: &TranscriptLink,
    led_by: &Lineage,
    opts: &ArticleOptions,
    deadline: Instant,
) -> (TranscriptText, Vec<Warning>) {
    let url = link.url.as_str();
    let page = match crate::inputs::classify_link(url).source {
        Source::Http(u) => u,
        Source::Invalid(e) => return (failed(url, &e), Vec::new()),
        Source::File(_) => {
            let e = Error::usage("a transcript is read only from an http(s) address");
            return (failed(url, &e), Vec::new());
        }
    };
    let work = read_http(ctx, link, page.clone(), led_by, opts, deadline);
    super::deadline::within(opts.deadline, work, || {
        (
            failed(url, &super::deadline::cut_off(ctx, &page)),
            Vec::new(),
        )
    })
    .await
}

async fn read_http(
    ctx: &Context,
    link: &TranscriptLink,
    page: Url,
    led_by: &Lineage,
    opts: &ArticleOptions,
    deadline: Instant,
) -> (TranscriptText, Vec<Warning>) {
    let url = link.url.as_str();
    let read = super::article::Read { url, page, led_by };
    let f = match super::article::get_page(ctx, &read, opts, deadline, (ACCEPT_TRANSCRIPT, refuse))
        .await
    {
        Ok(f) => f,
        Err(e) => return (failed(url, &e), Vec::new()),
    };
    let _place = f.window;
    let warnings = f
        .warnings
        .into_iter()
        .map(|(code, msg)| Warning::new(Some(url.to_owned()), code, msg))
        .collect();
    let (body, content_type) = match f.got {
        Got::Fresh(resp) => (resp.body, resp.content_type),
        Got::Cached(entry, _) | Got::Stale(entry) => (entry.body, entry.meta.content_type),
        Got::Failed(e) => return (failed(url, &e), warnings),
    };
    let (owned_url, owned_link) = (url.to_owned(), link.clone());
    let max = opts.render.max_content_chars;
    let read = super::blocking(move || {
        read_body(&owned_url, &owned_link, body, content_type.as_deref(), max)
    })
    .await
    .and_then(|r| r);
    match read {
        Ok(t) => (t, warnings),
        Err(e) => (failed(url, &e), warnings),
    }
}

/// Reads the chosen transcript of every item that has one, and puts it in the item; a
/// transcript several items name is read once (as led by the first one's feed). Each item
/// comes with the chain its feed was read through.
pub(crate) async fn attach(
    ctx: &Context,
    mut items: Vec<(&mut Item, &Lineage)>,
    opts: &ArticleOptions,
    deadline: Instant,
) -> Vec<Warning> {
    let opts = &opts.for_call();
    let mut links: Vec<(Vec<usize>, TranscriptLink, Lineage)> = Vec::new();
    for (i, (item, led_by)) in items.iter().enumerate() {
        let Some(link) = item.podcast.as_deref().and_then(choose) else {
            continue;
        };
        match links.iter_mut().find(|(_, l, _)| l.url == link.url) {
            Some((at, _, _)) => at.push(i),
            None => links.push((vec![i], link.clone(), (*led_by).clone())),
        }
    }
    let mut read_all = futures::stream::iter(links)
        .map(|(at, link, led_by)| read_one(ctx, at, link, led_by, opts, deadline))
        .buffer_unordered(AT_ONCE);
    let mut warnings = Vec::new();
    while let Some((at, text, w)) = read_all.next().await {
        for i in at {
            if let Some((item, _)) = items.get_mut(i) {
                item.transcript = Some(Box::new(text.clone()));
            }
        }
        warnings.extend(w);
    }
    warnings
}

async fn read_one(
    ctx: &Context,
    at: Vec<usize>,
    link: TranscriptLink,
    led_by: Lineage,
    opts: &ArticleOptions,
    deadline: Instant,
) -> (Vec<usize>, TranscriptText, Vec<Warning>) {
    let (text, warnings) = read(ctx, &link, &led_by, opts, deadline).await;
    (at, text, warnings)
}

/// Reads `item`'s transcript (`get_item` with `transcript: true`), as led by the chain its
/// feed was read through; an item without one keeps `transcript: null`.
pub async fn read_item_transcript(
    ctx: &Context,
    item: &mut Item,
    feed_lineage: &Lineage,
    opts: &ArticleOptions,
) -> Vec<Warning> {
    let deadline = super::deadline::gate_deadline(ctx, opts.deadline);
    attach(ctx, vec![(item, feed_lineage)], opts, deadline).await
}
