//! `rss fetch`: validated options, every input gathered, the batch run with a progress bar.

use std::io::IsTerminal;
use std::path::Path;

use tracing_indicatif::span_ext::IndicatifSpanExt;

use super::args::FetchArgs;
use super::emit_code;
use crate::config::{Config, parse_duration};
use crate::error::{Error, Result, exit};
use crate::inputs::{self, Input};
use crate::local::{self, ReadLimits};
use crate::model::FeedStatus;
use crate::ops::{self, Context, FetchOptions, FetchRequest};
use crate::output::{self, Format};

/// Validated fetch parameters, built from the arguments before any I/O.
fn fetch_options(args: &FetchArgs) -> Result<FetchOptions> {
    if args.ndjson_records && args.format != Format::Ndjson {
        return Err(Error::usage("--ndjson-records needs --format ndjson"));
    }
    let max_age = args
        .max_age
        .as_deref()
        .map(|s| {
            parse_duration(s).ok_or_else(|| {
                Error::usage(format!(
                    "--max-age {:?} is not a duration (90s, 30m, 2h, 7d)",
                    crate::error::echo(s)
                ))
            })
        })
        .transpose()?;
    FetchRequest {
        since: args.since.clone(),
        limit: args.limit,
        content: args.content,
        max_content_chars: args.max_content_chars,
        no_cache: args.no_cache,
        refresh: args.refresh,
        max_age,
        stale_if_error: args.stale_if_error,
    }
    .options()
}

/// Reads a URL list or OPML file within the local-read limits; a failure is `IO_ERROR`
/// (or `RESPONSE_TOO_LARGE`), not a usage error.
async fn read_text(path: &Path, limits: ReadLimits) -> Result<String> {
    let bytes = local::read_file(path, limits).await?;
    Ok(String::from_utf8_lossy(&bytes.into_vec()).into_owned())
}

async fn gather_inputs(args: &FetchArgs, limits: ReadLimits) -> Result<Vec<Input>> {
    let mut raw: Vec<String> = Vec::new();
    for u in &args.urls {
        if u == "-" {
            let bytes = local::read_stdin(limits.max_bytes).await?;
            raw.extend(inputs::list_lines(&String::from_utf8_lossy(&bytes)));
        } else {
            raw.push(u.clone());
        }
    }
    for path in &args.input {
        raw.extend(inputs::list_lines(&read_text(path, limits).await?));
    }
    for path in &args.opml {
        raw.extend(inputs::opml_urls(&read_text(path, limits).await?)?);
    }
    if raw.is_empty() {
        return Err(Error::usage(
            "no feeds given: pass URLs or files, `-` for stdin, --input FILE or --opml FILE",
        ));
    }
    Ok(inputs::merge(raw))
}

pub(super) async fn fetch(
    args: FetchArgs,
    config: Config,
    quiet: bool,
    color: bool,
    pretty: bool,
) -> Result<u8> {
    let opts = fetch_options(&args)?;
    let inputs = gather_inputs(&args, config.read_limits()).await?;
    let total = inputs.len();
    let ctx = Context::new(config)?;
    let show_bar = !quiet && total > 3 && std::io::stderr().is_terminal();
    let span = tracing::info_span!("fetch", indicatif.pb_show = tracing::field::Empty);
    if show_bar {
        span.pb_set_style(
            &indicatif::ProgressStyle::with_template(
                "{spinner} {pos}/{len} feeds {wide_bar} {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        span.pb_set_length(total as u64);
    }
    let _entered = show_bar.then(|| span.enter());
    let gate = ctx.client.gate();
    let progress = |done: usize, _total: usize| {
        if show_bar {
            span.pb_set_position(done as u64);
            let cooling = gate.cooling_hosts();
            if cooling > 0 {
                span.pb_set_message(&format!("{cooling} hosts cooling down"));
            } else {
                span.pb_set_message("");
            }
        }
    };
    let out = ops::fetch_feeds(&ctx, inputs, &opts, &progress).await;
    // The bar goes away with its span, before anything is printed.
    drop(_entered);
    drop(span);
    let failed = out
        .feeds
        .iter()
        .filter(|f| f.status == FeedStatus::Error)
        .count();
    let code = if failed == 0 {
        exit::OK
    } else if failed == out.feeds.len() {
        exit::ALL_FAILED
    } else {
        exit::PARTIAL
    };
    emit_code(
        |w| output::write_fetch(w, &out, args.format, args.ndjson_records, pretty, color),
        code,
    )
}
