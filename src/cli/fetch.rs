//! `rss fetch` and `rss article`: validated options, every input gathered, the batch run
//! with a progress bar.

use std::io::IsTerminal;
use std::path::Path;

use tracing_indicatif::span_ext::IndicatifSpanExt;

use super::args::{ArticleArgs, CacheArgs, FetchArgs};
use super::emit_code;
use crate::config::{Config, parse_duration};
use crate::error::{Error, Result, exit};
use crate::inputs::{self, Input};
use crate::local::{self, ReadLimits};
use crate::model::FeedStatus;
use crate::ops::{self, ArticleOptions, Context, FetchOptions, FetchRequest};
use crate::output::{self, Format};
use crate::settings::Settings;

/// `--max-age` read as a duration.
fn max_age(cache: &CacheArgs) -> Result<Option<std::time::Duration>> {
    cache
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
        .transpose()
}

/// The cache flags of `rss fetch` and `rss article` as a request (`--cache-policy` added to
/// `--no-cache`, `--refresh`, `--stale-if-error` and `--max-age`).
fn cache_request(cache: &CacheArgs) -> Result<FetchRequest> {
    Ok(FetchRequest {
        no_cache: cache.no_cache,
        refresh: cache.refresh,
        stale_if_error: cache.stale_if_error,
        max_age: max_age(cache)?,
        ..FetchRequest::default()
    }
    .with_policy(cache.cache_policy))
}

/// Validated fetch parameters, built from the arguments before any I/O.
fn fetch_options(
    args: &FetchArgs,
    robots_by_default: bool,
) -> Result<(FetchOptions, Option<ops::ReaderRequest>)> {
    if args.ndjson_records && args.format != Format::Ndjson {
        return Err(Error::usage("--ndjson-records needs --format ndjson"));
    }
    if args.reader.is_some() && args.format == Format::Ndjson && !args.ndjson_records {
        return Err(Error::usage(
            "--reader with --format ndjson needs --ndjson-records: the delivery token is in the summary record",
        ));
    }
    if args.respect_robots && !args.articles {
        return Err(Error::usage(
            "--respect-robots applies to the pages --articles reads; give --articles too",
        ));
    }
    let request = FetchRequest {
        since: args.since.clone(),
        limit: args.limit,
        query: args.query.clone(),
        dedupe: args.dedupe,
        content: args.content,
        max_content_chars: args.max_content_chars,
        articles: args.articles,
        respect_robots: args.respect_robots || robots_by_default,
        reader: args.reader.clone(),
        unseen: args.unseen,
        ..cache_request(&args.cache)?
    };
    Ok((request.options()?, request.reader_request(None)?))
}

/// The `rss ack` command a person runs next, with the flags that chose this run's store.
pub(super) struct AckCommand(String);

impl AckCommand {
    /// The command's start for a run with global flags `g`.
    pub(super) fn of(g: &super::args::GlobalArgs) -> AckCommand {
        let mut cmd = String::from("rss");
        let quote = |s: &str| {
            if s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"/._-:+=@".contains(&b))
            {
                s.to_owned()
            } else {
                format!("'{}'", s.replace('\'', "'\\''"))
            }
        };
        if let Some(dir) = &g.state_dir {
            cmd.push_str(&format!(
                " --state-dir {}",
                quote(&dir.display().to_string())
            ));
        }
        if let Some(store) = &g.gate_store {
            // A store's password is never printed: the command shows it as `***`.
            cmd.push_str(&format!(
                " --gate-store {}",
                quote(&crate::redact::text(store))
            ));
        }
        AckCommand(cmd)
    }

    /// The whole command for `token`.
    fn with(&self, token: &str) -> String {
        format!("{} ack {token}", self.0)
    }
}

/// Validated article parameters.
fn article_options(args: &ArticleArgs, robots_by_default: bool) -> Result<ArticleOptions> {
    let content = args.content.unwrap_or(match args.format {
        Format::Text => crate::feed::ContentFormat::Text,
        _ => crate::feed::ContentFormat::Markdown,
    });
    FetchRequest {
        content,
        max_content_chars: args.max_content_chars,
        respect_robots: args.respect_robots || robots_by_default,
        ..cache_request(&args.cache)?
    }
    .article_options()
}

/// Reads a URL list or OPML file within the local-read limits; a failure is `IO_ERROR`
/// (or `RESPONSE_TOO_LARGE`), not a usage error.
async fn read_text(path: &Path, limits: ReadLimits) -> Result<String> {
    let bytes = local::read_file(path, limits).await?;
    Ok(String::from_utf8_lossy(&bytes.into_vec()).into_owned())
}

/// Every input named by `urls` (`-` for stdin), `--input` files and `--opml` files,
/// merged in order; `what` names them in the error when there are none.
pub(super) async fn gather_inputs(
    urls: &[String],
    input: &[std::path::PathBuf],
    opml: &[std::path::PathBuf],
    limits: ReadLimits,
    what: &str,
) -> Result<Vec<Input>> {
    let mut raw: Vec<String> = Vec::new();
    for u in urls {
        if u == "-" {
            let bytes = local::read_stdin(limits.max_bytes).await?;
            raw.extend(inputs::list_lines(&String::from_utf8_lossy(&bytes)));
        } else {
            raw.push(u.clone());
        }
    }
    for path in input {
        raw.extend(inputs::list_lines(&read_text(path, limits).await?));
    }
    for path in opml {
        raw.extend(inputs::opml_urls(&read_text(path, limits).await?)?);
    }
    if raw.is_empty() {
        return Err(Error::usage(format!(
            "no {what} given: pass URLs or files, `-` for stdin, or --input FILE"
        )));
    }
    Ok(inputs::merge(raw))
}

/// A progress bar on stderr for a batch of `total` (only on a terminal, for more than
/// three), and the callback that moves it.
struct Progress {
    span: tracing::Span,
    show: bool,
}

impl Progress {
    fn new(total: usize, quiet: bool, unit: &str) -> Progress {
        let show = !quiet && total > 3 && std::io::stderr().is_terminal();
        let span = tracing::info_span!("batch", indicatif.pb_show = tracing::field::Empty);
        if show {
            span.pb_set_style(
                &indicatif::ProgressStyle::with_template(&format!(
                    "{{spinner}} {{pos}}/{{len}} {unit} {{wide_bar}} {{msg}}"
                ))
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            span.pb_set_length(total as u64);
        }
        Progress { span, show }
    }

    fn tick(&self, done: usize, gate: &crate::gate::Gate) {
        if self.show {
            self.span.pb_set_position(done as u64);
            let cooling = gate.cooling_hosts();
            if cooling > 0 {
                self.span
                    .pb_set_message(&format!("{cooling} hosts cooling down"));
            } else {
                self.span.pb_set_message("");
            }
        }
    }
}

/// The exit code of a batch with `failed` of `total` failing.
fn batch_code(failed: usize, total: usize) -> u8 {
    if failed == 0 {
        exit::OK
    } else if failed == total {
        exit::ALL_FAILED
    } else {
        exit::PARTIAL
    }
}

pub(super) async fn fetch(
    args: FetchArgs,
    (config, settings): (Config, Settings),
    quiet: bool,
    color: bool,
    pretty: bool,
    again: AckCommand,
) -> Result<u8> {
    let (opts, reader) = fetch_options(&args, config.respect_robots)?;
    let limits = config.read_limits();
    let inputs = gather_inputs(&args.urls, &args.input, &args.opml, limits, "feeds").await?;
    let ctx = Context::with_settings(config, settings);
    let bar = Progress::new(inputs.len(), quiet, "feeds");
    let entered = bar.show.then(|| bar.span.enter());
    let gate = ctx.client.gate();
    let progress = |done: usize, _total: usize| bar.tick(done, gate);
    let run = match &reader {
        Some(r) => ops::fetch_unseen(&ctx, inputs, &opts, r, &progress).await,
        None => Ok(ops::fetch_feeds(&ctx, inputs, &opts, &progress).await),
    };
    // The bar goes away with its span, before anything is printed.
    drop(entered);
    drop(bar);
    let mut out = run?;
    let ack = out
        .delivery
        .as_ref()
        .and_then(|d| d.token.as_deref())
        .map(|t| again.with(t));
    let failed = out
        .feeds
        .iter()
        .filter(|f| f.status == FeedStatus::Error)
        .count();
    let code = batch_code(failed, out.feeds.len());
    let text = args.format == Format::Text;
    if args.format != Format::Text {
        output::hint::advise_fetch(&mut out);
    }
    let code = emit_code(
        |w| {
            output::write_fetch(w, &mut out, args.format, args.ndjson_records, pretty, color)?;
            match (&ack, &out.delivery) {
                (Some(cmd), Some(d)) if text => writeln!(
                    w,
                    "\nWhen these {} items are handled, acknowledge them:\n  {cmd}",
                    d.items
                ),
                (None, Some(d)) if text => {
                    writeln!(w, "\nNothing new for reader {}.", d.reader)
                }
                _ => Ok(()),
            }
        },
        code,
    );
    // A person at a terminal reading JSON is told the same on stderr (stdout is data).
    if let Some(cmd) = &ack
        && !text
        && !quiet
        && std::io::stderr().is_terminal()
    {
        eprintln!("rss: acknowledge these items with: {cmd}");
    }
    // The process ends next: freeing every item one by one (~15 ms for 10,000) would only
    // delay the exit.
    std::mem::forget(out);
    code
}

pub(super) async fn article(
    args: ArticleArgs,
    (config, settings): (Config, Settings),
    quiet: bool,
    color: bool,
    pretty: bool,
) -> Result<u8> {
    let opts = article_options(&args, config.respect_robots)?;
    let limits = config.read_limits();
    let inputs = gather_inputs(&args.urls, &args.input, &[], limits, "pages").await?;
    let ctx = Context::with_settings(config, settings);
    let bar = Progress::new(inputs.len(), quiet, "pages");
    let entered = bar.show.then(|| bar.span.enter());
    let gate = ctx.client.gate();
    let progress = |done: usize, _total: usize| bar.tick(done, gate);
    let mut out = ops::fetch_articles(&ctx, inputs, &opts, &progress).await;
    drop(entered);
    drop(bar);
    if args.format != Format::Text {
        output::hint::advise_articles(&mut out);
    }
    emit_code(
        |w| output::write_articles(w, &out, args.format, pretty, color),
        batch_code(out.errors.len(), out.articles.len()),
    )
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[test]
    fn the_ack_command_never_prints_a_stores_password() {
        let cli = super::super::args::Cli::try_parse_from([
            "rss",
            "--gate-store",
            "redis://:S3CR3T-pw@127.0.0.1:6379/0",
            "--state-dir",
            "/tmp/it's here",
            "fetch",
            "https://a.example/feed",
        ])
        .unwrap();
        let cmd = super::AckCommand::of(&cli.global).with("TOKEN");
        assert!(!cmd.contains("S3CR3T"), "{cmd}");
        assert!(
            cmd.contains("--gate-store 'redis://:***@127.0.0.1:6379/0'"),
            "{cmd}"
        );
        assert!(cmd.contains("--state-dir '/tmp/it'\\''s here'"), "{cmd}");
        assert!(cmd.ends_with(" ack TOKEN"), "{cmd}");
    }
}
