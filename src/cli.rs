//! The command-line surface: arguments parsed once into parameters, then handed to `ops`.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use tracing_indicatif::span_ext::IndicatifSpanExt;

use crate::config::{Config, Overrides, parse_duration};
use crate::error::{Error, Result, exit};
use crate::feed::{ContentFormat, RenderOptions, Selection, parse_since};
use crate::inputs::{self, Input};
use crate::model::FeedStatus;
use crate::ops::{self, CacheMode, Context, FetchOptions, ShowOptions};
use crate::output::{self, Format, SchemaKind};

/// Fetch RSS, Atom and JSON feeds on request and print clean, stable JSON.
#[derive(Debug, Parser)]
#[command(
    name = "rss",
    version,
    about,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Args)]
struct GlobalArgs {
    /// Cache directory (default: the OS cache dir; env RSS_CACHE_DIR).
    #[arg(long, global = true, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Print nothing on stderr but errors; no progress bar.
    #[arg(short, long, global = true)]
    quiet: bool,
    /// Log more on stderr (-v info, -vv debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// User-Agent header (default: rss/VERSION (+repository URL)).
    #[arg(long, global = true, value_name = "UA")]
    user_agent: Option<String>,
    /// Requests in flight across all hosts.
    #[arg(long, global = true, value_name = "N")]
    concurrency: Option<usize>,
    /// Requests in flight per host (env RSS_HOST_CONCURRENCY; default 1).
    #[arg(long, global = true, value_name = "N")]
    host_concurrency: Option<usize>,
    /// Longest wait for a host before failing with RATE_LIMITED, seconds (env RSS_MAX_GATE_WAIT_SECS; default 60).
    #[arg(long, global = true, value_name = "SECS")]
    max_gate_wait: Option<u64>,
    /// Time limit for connecting and for reading a response, seconds.
    #[arg(long, global = true, value_name = "SECS")]
    timeout: Option<f64>,
    /// Largest response body accepted, in bytes after decoding (default 20 MiB).
    #[arg(long, global = true, value_name = "BYTES")]
    max_body_bytes: Option<u64>,
    /// Never colour text output (NO_COLOR is honoured too).
    #[arg(long, global = true)]
    no_color: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Fetch feeds and print their items.
    Fetch(FetchArgs),
    /// List the feeds a web page advertises.
    Discover {
        /// The page (http(s) URL or local file).
        site_url: String,
    },
    /// Print one item by id, guid or URL (from the cache when it has it).
    Show(ShowArgs),
    /// Print the JSON Schema of a command's output.
    Schema {
        /// fetch, ndjson, ndjson-records, discover, show or cache-list.
        #[arg(long, value_name = "COMMAND", default_value = "fetch")]
        command: String,
    },
    /// Inspect or clear the cache.
    Cache {
        #[command(subcommand)]
        action: CacheAction,
    },
    /// Serve the tools over MCP on stdin/stdout.
    Mcp,
}

#[derive(Debug, Subcommand)]
enum CacheAction {
    /// Print the cache directory.
    Path,
    /// List cached feeds as JSON.
    List,
    /// Remove cached feeds.
    Clear {
        /// Only entries fetched longer ago than this (30m, 2h, 7d).
        #[arg(long, value_name = "DUR")]
        older_than: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum FormatArg {
    Json,
    Ndjson,
    Text,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ContentArg {
    Markdown,
    Text,
    Html,
    None,
}

impl From<ContentArg> for ContentFormat {
    fn from(c: ContentArg) -> Self {
        match c {
            ContentArg::Markdown => ContentFormat::Markdown,
            ContentArg::Text => ContentFormat::Text,
            ContentArg::Html => ContentFormat::Html,
            ContentArg::None => ContentFormat::None,
        }
    }
}

#[derive(Debug, Args)]
struct FetchArgs {
    /// Feed URLs or local files; `-` reads URLs from stdin.
    urls: Vec<String>,
    /// Read URLs from FILE (one a line, # comments).
    #[arg(long, value_name = "FILE")]
    input: Vec<PathBuf>,
    /// Read feed URLs from an OPML file.
    #[arg(long, value_name = "FILE")]
    opml: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "json")]
    format: FormatArg,
    /// With --format ndjson: tagged item / error / summary records.
    #[arg(long)]
    ndjson_records: bool,
    /// How item bodies are returned.
    #[arg(long, value_enum, default_value = "markdown")]
    content: ContentArg,
    /// Cut each body to N characters.
    #[arg(long, value_name = "N")]
    max_content_chars: Option<usize>,
    /// At most N items per feed, newest first.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Only items since: 30m, 2h, 7d, 2026-06-01 or an RFC 3339 time.
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// Serve cached copies younger than DUR with no request.
    #[arg(long, value_name = "DUR")]
    max_age: Option<String>,
    /// Revalidate now, whatever --max-age says.
    #[arg(long, conflicts_with = "no_cache")]
    refresh: bool,
    /// Neither read nor write the cache.
    #[arg(long)]
    no_cache: bool,
    /// When the origin fails, serve the cached copy as `stale`.
    #[arg(long)]
    stale_if_error: bool,
}

#[derive(Debug, Args)]
struct ShowArgs {
    /// The feed (URL or local file).
    feed_url: String,
    /// The item's id, guid or URL.
    #[arg(long)]
    id: String,
    /// Fetch the feed live instead of using the cache.
    #[arg(long)]
    refresh: bool,
    /// How the body is returned.
    #[arg(long, value_enum, default_value = "markdown")]
    content: ContentArg,
    /// Cut the body to N characters.
    #[arg(long, value_name = "N")]
    max_content_chars: Option<usize>,
}

/// Runs the CLI and returns the process exit code; the only place errors become codes.
pub fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(run_main())
}

fn run_main() -> u8 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return exit::OK;
            }
            let rendered = e.render().to_string();
            let message = rendered.trim().trim_start_matches("error: ");
            let message = message.split("\n\n").next().unwrap_or(message);
            return report(&Error::usage(message));
        }
    };
    init_logging(&cli.global);
    let config = match Config::from_env(overrides(&cli.global)) {
        Ok(c) => c,
        Err(e) => return report(&e),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return report(&Error::internal(format!("cannot start the runtime: {e}"))),
    };
    match runtime.block_on(run(cli, config)) {
        Ok(code) => code,
        Err(e) => report(&e),
    }
}

/// Prints an error object on stderr and returns its exit code.
fn report(e: &Error) -> u8 {
    let obj = e.to_object(None);
    let mut err = std::io::stderr().lock();
    let _ = output::write_json(&mut err, &obj, false);
    match e.code() {
        crate::error::ErrorCode::Usage => exit::USAGE,
        crate::error::ErrorCode::Internal => exit::INTERNAL,
        _ => exit::ALL_FAILED,
    }
}

fn overrides(g: &GlobalArgs) -> Overrides {
    Overrides {
        host_concurrency: g.host_concurrency,
        max_gate_wait_secs: g.max_gate_wait,
        timeout_secs: g.timeout,
        max_body_bytes: g.max_body_bytes,
        user_agent: g.user_agent.clone(),
        concurrency: g.concurrency,
        cache_dir: g.cache_dir.clone(),
    }
}

fn init_logging(g: &GlobalArgs) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};
    let level = match (g.quiet, g.verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, _) => "debug",
    };
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(format!("rss={level}")));
    let indicatif = tracing_indicatif::IndicatifLayer::new();
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(indicatif.get_stderr_writer())
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(filter);
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(indicatif.with_filter(tracing_indicatif::filter::IndicatifFilter::new(false)))
        .try_init();
}

async fn run(cli: Cli, config: Config) -> Result<u8> {
    let g = cli.global;
    let color = !g.no_color
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::io::stdout().is_terminal();
    let pretty = std::io::stdout().is_terminal();
    match cli.command {
        Command::Fetch(args) => fetch(args, config, g.quiet, color, pretty).await,
        Command::Discover { site_url } => {
            let ctx = Context::new(config)?;
            let out = ops::discover(&ctx, &site_url).await?;
            emit(|w| output::write_json(w, &out, pretty))
        }
        Command::Show(args) => {
            let ctx = Context::new(config)?;
            let opts = ShowOptions {
                refresh: args.refresh,
                render: RenderOptions {
                    format: args.content.into(),
                    max_content_chars: args.max_content_chars,
                },
            };
            let out = ops::show_item(&ctx, &args.feed_url, &args.id, opts).await?;
            emit(|w| output::write_json(w, &out, pretty))
        }
        Command::Schema { command } => {
            let kind = SchemaKind::parse(&command)?;
            emit(|w| output::write_json(w, &output::schema(kind), true))
        }
        Command::Cache { action } => {
            let ctx = Context::new(config)?;
            match action {
                CacheAction::Path => {
                    let dir = ctx
                        .config
                        .cache_dir
                        .as_ref()
                        .ok_or_else(|| Error::usage("no cache directory is known"))?;
                    let dir = dir.display().to_string();
                    emit(|w| writeln!(w, "{dir}"))
                }
                CacheAction::List => {
                    let out = ops::cache_list(&ctx).await?;
                    emit(|w| output::write_json(w, &out, pretty))
                }
                CacheAction::Clear { older_than } => {
                    let older = older_than
                        .map(|s| {
                            parse_duration(&s).ok_or_else(|| {
                                Error::usage(format!(
                                    "--older-than {s:?} is not a duration (30m, 2h, 7d)"
                                ))
                            })
                        })
                        .transpose()?;
                    let removed = ops::cache_clear(&ctx, older).await?;
                    emit(|w| {
                        output::write_json(w, &serde_json::json!({ "removed": removed }), false)
                    })
                }
            }
        }
        Command::Mcp => {
            let ctx = Context::new(config)?;
            crate::mcp::serve(ctx).await?;
            Ok(exit::OK)
        }
    }
}

/// Writes to stdout; a closed pipe ends the run quietly.
fn emit(f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<u8> {
    emit_code(f, exit::OK)
}

fn emit_code(f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>, code: u8) -> Result<u8> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    match f(&mut out).and_then(|_| out.flush()) {
        Ok(()) => Ok(code),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(code),
        Err(e) => Err(Error::io("cannot write to", "stdout", e)),
    }
}

/// Validated fetch parameters, built from the arguments before any I/O.
fn fetch_options(args: &FetchArgs) -> Result<FetchOptions> {
    let since = args
        .since
        .as_deref()
        .map(|s| parse_since(s, chrono::Utc::now()))
        .transpose()?;
    let cache = if args.no_cache {
        CacheMode::Off
    } else if args.refresh {
        CacheMode::Refresh
    } else if let Some(s) = &args.max_age {
        CacheMode::MaxAge(parse_duration(s).ok_or_else(|| {
            Error::usage(format!(
                "--max-age {s:?} is not a duration (90s, 30m, 2h, 7d)"
            ))
        })?)
    } else {
        CacheMode::Revalidate
    };
    if args.ndjson_records && !matches!(args.format, FormatArg::Ndjson) {
        return Err(Error::usage("--ndjson-records needs --format ndjson"));
    }
    Ok(FetchOptions {
        selection: Selection {
            since,
            limit: args.limit,
        },
        render: RenderOptions {
            format: args.content.into(),
            max_content_chars: args.max_content_chars,
        },
        cache,
        stale_if_error: args.stale_if_error,
    })
}

fn read_text(path: &PathBuf, what: &str) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::Usage {
        message: format!("cannot read the {what} file {}: {e}", path.display()),
    })?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn gather_inputs(args: &FetchArgs) -> Result<Vec<Input>> {
    let mut raw: Vec<String> = Vec::new();
    for u in &args.urls {
        if u == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| Error::usage(format!("cannot read URLs from stdin: {e}")))?;
            raw.extend(inputs::list_lines(&text));
        } else {
            raw.push(u.clone());
        }
    }
    for path in &args.input {
        raw.extend(inputs::list_lines(&read_text(path, "--input")?));
    }
    for path in &args.opml {
        raw.extend(inputs::opml_urls(&read_text(path, "--opml")?)?);
    }
    if raw.is_empty() {
        return Err(Error::usage(
            "no feeds given: pass URLs or files, `-` for stdin, --input FILE or --opml FILE",
        ));
    }
    Ok(inputs::merge(raw))
}

async fn fetch(
    args: FetchArgs,
    config: Config,
    quiet: bool,
    color: bool,
    pretty: bool,
) -> Result<u8> {
    let opts = fetch_options(&args)?;
    let inputs = gather_inputs(&args)?;
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
    let format = match args.format {
        FormatArg::Json => Format::Json,
        FormatArg::Ndjson => Format::Ndjson,
        FormatArg::Text => Format::Text,
    };
    emit_code(
        |w| output::write_fetch(w, &out, format, args.ndjson_records, pretty, color),
        code,
    )
}
