//! `rss watch`: the watch's scheduler in the foreground, one NDJSON line per new item as it
//! appears, until a signal (exit 0, never a partial line) or `--duration`.

use std::io::Write;
use std::sync::Arc;

use super::args::WatchArgs;
use crate::config::{Config, parse_duration};
use crate::error::{Error, Result, exit};
use crate::feed::RenderOptions;
use crate::inputs::Source;
use crate::ops::{Context, ReaderId, ReaderRequest};
use crate::settings::Settings;
use crate::watch::{Event, News, Watcher};

pub(super) async fn watch(
    args: WatchArgs,
    (mut config, settings): (Config, Settings),
    stop: impl std::future::Future<Output = &'static str>,
) -> Result<u8> {
    let duration = args
        .duration
        .as_deref()
        .map(|s| {
            parse_duration(s).filter(|d| !d.is_zero()).ok_or_else(|| {
                Error::usage(format!(
                    "--duration {:?} is not a duration (90s, 30m, 2h)",
                    crate::error::echo(s)
                ))
            })
        })
        .transpose()?;
    let reader = args
        .reader
        .as_deref()
        .map(|name| ReaderId::new(name, None))
        .transpose()?
        .map(|reader| ReaderRequest {
            reader,
            unseen: true,
        });
    let limits = config.read_limits();
    let inputs =
        super::fetch::gather_inputs(&args.urls, &args.input, &args.opml, limits, "feeds").await?;
    let mut uris = Vec::with_capacity(inputs.len());
    for input in inputs {
        match input.source {
            Source::Http(url) => uris.push(url.to_string()),
            Source::Invalid(e) => return Err(e),
            Source::File(_) => {
                return Err(Error::usage(format!(
                    "rss watch watches feeds on the web: {} is not an http(s) URL",
                    crate::error::echo(&input.feed_url)
                )));
            }
        }
    }
    // The caps on subscriptions are a server's; this process listens to what it was given.
    config.watch.max_subscriptions = usize::MAX;
    config.watch.max_listener_subscriptions = usize::MAX;
    let render = RenderOptions {
        format: args.content,
        max_content_chars: args.max_content_chars,
    };
    let ctx = Arc::new(Context::with_settings(config, settings));
    let watcher = Watcher::of_context(ctx.clone(), render, true);
    let (mut listener, refused) = watcher.subscribe(&uris);
    if let Some((uri, why)) = refused.first() {
        return Err(Error::usage(format!(
            "cannot watch {}: {why}",
            crate::redact::text(uri)
        )));
    }
    let mut news = News::new(args.initial, reader);
    let until = async {
        match duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(until, stop);
    let code = loop {
        let event = tokio::select! {
            biased;
            signal = &mut stop => {
                tracing::info!("stopping on {signal}");
                break exit::OK;
            }
            () = &mut until => break exit::OK,
            e = listener.next() => match e {
                Some(e) => e,
                None => break exit::OK,
            },
        };
        if let Event::Failed { uri, error } = &event {
            tracing::warn!(
                "{}: {} ({}); trying again later",
                crate::redact::text(uri),
                error.message,
                error.code
            );
            continue;
        }
        let records = news.on(&ctx, &event).await?;
        if !print(&records)? {
            // Whoever read stdout went away: nothing left to watch for.
            break exit::OK;
        }
    };
    drop(listener);
    watcher.shut().await;
    Ok(code)
}

/// Writes `records` one whole line each, flushed: `false` when stdout is closed.
fn print(records: &[crate::model::WatchRecord]) -> Result<bool> {
    if records.is_empty() {
        return Ok(true);
    }
    let mut text = Vec::new();
    for r in records {
        serde_json::to_writer(&mut text, r).map_err(|e| Error::internal_from("serializing", e))?;
        text.push(b'\n');
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(&text).and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(Error::io("cannot write to", "stdout", e)),
    }
}
