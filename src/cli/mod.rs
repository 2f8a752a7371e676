//! The command-line surface: arguments parsed once into parameters, then handed to `ops`.
//!
//! - `args`    — the clap definitions
//! - `fetch`   — `rss fetch`: options, inputs, the progress bar
//! - `logging` — logs on stderr
//! - `signal`  — `SIGINT` / `SIGTERM`
//! - `watch`   — `rss watch`: new items as they appear

mod args;
mod fetch;
mod logging;
mod signal;
mod watch;

use std::io::{IsTerminal, Write};

use clap::{CommandFactory, Parser};

use crate::config::{Config, ConfigFile, Overrides, parse_duration};
use crate::error::{self, Error, Result, exit};
use crate::feed::RenderOptions;
use crate::local::FileAccess;
use crate::mcp::http::{HttpOptions, Token};
use crate::ops::{self, Context, ShowOptions};
use crate::output::{self, SchemaKind};
use crate::settings::Settings;
use args::{
    CacheAction, Cli, Command, ConfigAction, ErrorFormat, GlobalArgs, HostsAction, ReadersAction,
};

/// Runs the CLI and returns the process exit code; the only place errors become codes.
pub fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(run_main())
}

fn run_main() -> u8 {
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let words = ErrorFormat::from_raw_args(&raw).words();
    let cli = match Cli::try_parse_from(&raw) {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = e.print();
                    return exit::OK;
                }
                // `rss` alone (or `rss cache`): the help, for the person who typed it.
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    let _ = e.print();
                    return exit::USAGE;
                }
                _ if words => {
                    let _ = e.print();
                    return exit::USAGE;
                }
                _ => {}
            }
            let rendered = e.render().to_string();
            let message = rendered.trim().trim_start_matches("error: ");
            let message = message.split("\n\n").next().unwrap_or(message);
            return report(&Error::usage(message));
        }
    };
    let _ = ERRORS_AS_WORDS.set(cli.global.error_format.words());
    logging::init(cli.global.quiet, cli.global.verbose);
    let given = overrides(&cli.global).map(|mut o| {
        if let Command::Mcp(m) = &cli.command {
            o.call_timeout_secs = m.call_timeout;
            o.max_response_tokens = m.max_response_tokens;
            o.watch.max_subscriptions = m.max_subscriptions;
            o.watch.max_listener_subscriptions = m.max_subscriptions_per_listener;
            if m.http.is_some() {
                o.private_networks_by_default = Some(m.allow_private_networks);
            }
        }
        o
    });
    let settings = match load_settings(&cli) {
        Ok(s) => s,
        Err(e) => return report(&e),
    };
    let config = match given.and_then(|o| Config::from_env_with(o, &settings.defaults)) {
        Ok(c) => c,
        Err(e) => return report(&e),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return report(&Error::internal_from("cannot start the runtime", e)),
    };
    // The MCP server and a watch end on a signal by themselves (exit 0); anything else is
    // cut short by one: its in-flight requests are dropped, which frees their hosts.
    let serves = matches!(cli.command, Command::Mcp(_) | Command::Watch(_));
    let result = runtime.block_on(async {
        if serves {
            return run(cli, config, settings).await;
        }
        let stop = signal::shutdown();
        tokio::select! {
            r = run(cli, config, settings) => r,
            signal = stop => Err(Error::Interrupted { signal }),
        }
    });
    // A finished run awaited every write it depends on; what may still hold a thread is a
    // read that was given up on (a FIFO nobody opened), which must not keep the process
    // alive. An interrupted run gives cache writes under way a moment to land.
    let grace = if matches!(result, Err(Error::Interrupted { .. })) {
        1200
    } else {
        200
    };
    // Send slots still held in a shared store (a send the signal cut short) go back now,
    // so the next worker on that host does not wait for them to lapse.
    runtime.block_on(async {
        let _ = tokio::time::timeout(
            std::time::Duration::from_secs(1),
            crate::hosts::release_held(),
        )
        .await;
    });
    runtime.shutdown_timeout(std::time::Duration::from_millis(grace));
    match result {
        Ok(code) => code,
        Err(e) => report(&e),
    }
}

/// Where the config file is looked for (`--config`, `RSS_CONFIG`, the default place).
fn config_file(cli: &Cli) -> ConfigFile {
    crate::config::config_file(cli.global.config.as_deref(), |name| {
        std::env::var(name).ok()
    })
}

/// The owner's config file, read and checked before anything else runs, by every command
/// that fetches or reports; a file that does not parse is a usage error.
fn load_settings(cli: &Cli) -> Result<Settings> {
    let file = match &cli.command {
        Command::Schema { .. }
        | Command::Completions { .. }
        | Command::Man
        | Command::Config {
            action: ConfigAction::Path,
        } => return Ok(Settings::default()),
        Command::Config {
            action: ConfigAction::Check { file: Some(f), .. },
        } => ConfigFile {
            path: Some(f.clone()),
            explicit: true,
        },
        _ => config_file(cli),
    };
    Settings::load(&file)
}

/// The names of every subcommand, as clap knows them (for tests that walk them all).
pub(crate) fn subcommands() -> Vec<String> {
    Cli::command()
        .get_subcommands()
        .filter(|c| c.get_name() != "help")
        .map(|c| c.get_name().to_owned())
        .collect()
}

/// Whether errors on stderr are written as words (`--error-format`, or a terminal).
static ERRORS_AS_WORDS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// Prints an error on stderr (the JSON object, or words for a person) and returns its
/// exit code.
fn report(e: &Error) -> u8 {
    let mut obj = e.to_object(None);
    let mut err = std::io::stderr().lock();
    if *ERRORS_AS_WORDS.get().unwrap_or(&false) {
        let _ = writeln!(err, "error: {}", output::advice(&obj));
    } else {
        obj.message = output::hint::advise(&obj, output::hint::Caller::Cli);
        let _ = output::write_json(&mut err, &obj, false);
    }
    match e {
        Error::Interrupted { signal: "SIGTERM" } => return exit::TERMINATED,
        Error::Interrupted { .. } => return exit::INTERRUPTED,
        _ => {}
    }
    match e.code() {
        crate::error::ErrorCode::Usage => exit::USAGE,
        crate::error::ErrorCode::Internal => exit::INTERNAL,
        _ => exit::ALL_FAILED,
    }
}

/// A watch interval flag read as whole seconds.
fn interval_flag(value: Option<&str>, flag: &str) -> Result<Option<u64>> {
    value
        .map(|s| {
            parse_duration(s)
                .filter(|d| !d.is_zero())
                .map(|d| d.as_secs().max(1))
                .ok_or_else(|| {
                    Error::usage(format!(
                        "{flag} {:?} is not a duration (90s, 30m, 2h)",
                        crate::error::echo(s)
                    ))
                })
        })
        .transpose()
}

fn overrides(g: &GlobalArgs) -> Result<Overrides> {
    Ok(Overrides {
        host_concurrency: g.host_concurrency,
        max_gate_wait_secs: g.max_gate_wait,
        timeout_secs: g.timeout,
        max_body_bytes: g.max_body_bytes,
        user_agent: g.user_agent.clone(),
        concurrency: g.concurrency,
        cache_dir: g.cache_dir.clone(),
        state_dir: g.state_dir.clone(),
        no_host_state: g.no_host_state,
        gate_store: g.gate_store.clone(),
        cache_max_bytes: g.cache_max_bytes,
        deny_private_networks: g.deny_private_networks,
        host_key: g.host_key.clone(),
        call_timeout_secs: None,
        respect_robots: None,
        max_response_tokens: None,
        private_networks_by_default: None,
        watch: crate::config::WatchOverrides {
            min_interval_secs: interval_flag(
                g.watch_min_interval.as_deref(),
                "--watch-min-interval",
            )?,
            max_interval_secs: interval_flag(
                g.watch_max_interval.as_deref(),
                "--watch-max-interval",
            )?,
            ..Default::default()
        },
        max_freshness_secs: g
            .max_freshness
            .as_deref()
            .map(|s| {
                parse_duration(s).map(|d| d.as_secs()).ok_or_else(|| {
                    Error::usage(format!(
                        "--max-freshness {:?} is not a duration (90s, 30m, 1h)",
                        crate::error::echo(s)
                    ))
                })
            })
            .transpose()?,
    })
}

async fn run(cli: Cli, config: Config, settings: Settings) -> Result<u8> {
    let looked_at = config_file(&cli);
    let g = cli.global;
    let color = !g.no_color
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::io::stdout().is_terminal();
    let pretty = std::io::stdout().is_terminal();
    let again = fetch::AckCommand::of(&g);
    match cli.command {
        Command::Fetch(args) => {
            fetch::fetch(args, (config, settings), g.quiet, color, pretty, again).await
        }
        Command::Article(args) => {
            fetch::article(args, (config, settings), g.quiet, color, pretty).await
        }
        Command::Watch(args) => watch::watch(args, (config, settings), signal::shutdown()).await,
        Command::Config { action } => match action {
            ConfigAction::Path => {
                let path = looked_at.path.ok_or_else(|| {
                    Error::usage("no config directory is known: give --config FILE")
                })?;
                let path = path.display().to_string();
                emit(|w| writeln!(w, "{path}"))
            }
            ConfigAction::Check { url, .. } => {
                let out = ops::config_check(&config, &settings, url.as_deref())?;
                emit(|w| output::write_json(w, &out, pretty))
            }
        },
        Command::Discover { site_url } => {
            let ctx = Context::with_settings(config, settings);
            let out = ops::discover(&ctx, &site_url).await?;
            emit(|w| output::write_json(w, &out, pretty))
        }
        Command::Show(args) => {
            let ctx = Context::with_settings(config, settings);
            let opts = ShowOptions {
                refresh: args.refresh,
                render: RenderOptions {
                    format: args.content,
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
            let ctx = Context::with_settings(config, settings);
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
        Command::Ack { tokens } => {
            let ctx = Context::with_settings(config, settings);
            let out = ops::ack(&ctx, &tokens, ops::Caller::Operator).await?;
            emit(|w| output::write_json(w, &out, false))
        }
        Command::Readers { action } => {
            let ctx = Context::with_settings(config, settings);
            match action {
                None => {
                    let out = ops::readers_list(&ctx).await?;
                    emit(|w| output::write_json(w, &out, pretty))
                }
                Some(ReadersAction::Forget { name, feed, scope }) => {
                    let scope = scope.as_deref().map(ops::Scope::parse).transpose()?;
                    let reader = ops::ReaderId::new(&name, scope)?;
                    // The feed as a fetch names it (a URL in its normal form).
                    let feed = feed.map(|f| error::echo(&crate::inputs::classify(&f).feed_url));
                    let out = ops::readers_forget(&ctx, &reader, feed.as_deref()).await?;
                    emit(|w| output::write_json(w, &out, false))
                }
            }
        }
        Command::Hosts { action, format } => {
            let ctx = Context::with_settings(config, settings);
            match action {
                None => {
                    let out = ops::hosts_list(&ctx).await?;
                    let table = match format {
                        Some(f) => f == args::HostsFormat::Table,
                        None => std::io::stdout().is_terminal(),
                    };
                    if table {
                        emit(|w| output::write_hosts_table(w, &out))
                    } else {
                        emit(|w| output::write_json(w, &out, pretty))
                    }
                }
                Some(HostsAction::Clear { host }) => {
                    let removed = ops::hosts_clear(&ctx, host.as_deref()).await?;
                    emit(|w| {
                        output::write_json(w, &serde_json::json!({ "removed": removed }), false)
                    })
                }
            }
        }
        Command::Mcp(args) => {
            let mut config = config;
            config.file_access = match &args.allow_files {
                Some(dir) => FileAccess::under(dir)?,
                None => FileAccess::Deny,
            };
            let http = args
                .http
                .map(|addr| http_options(addr, &args))
                .transpose()?;
            let stop = signal::shutdown();
            let ctx = Context::with_settings(config, settings);
            match http {
                Some(opts) => crate::mcp::http::serve(ctx, opts, stop).await?,
                None => crate::mcp::serve(ctx, stop).await?,
            }
            Ok(exit::OK)
        }
        Command::Completions { shell } => emit(|w| {
            clap_complete::generate(shell, &mut Cli::command(), "rss", w);
            Ok(())
        }),
        Command::Man => emit(|w| clap_mangen::Man::new(Cli::command()).render(w)),
    }
}

/// The text of `--token-file`: a file its owner alone may read, of at most 1 MiB, read as
/// a config file's secret files are ([`crate::local::read_private`]: a FIFO or device is
/// refused at once, never waited on).
fn read_token_file(path: &std::path::Path) -> Result<String> {
    use crate::local::PrivateRead;
    const MAX_TOKEN_FILE_BYTES: u64 = 1 << 20;
    crate::local::read_private(path, MAX_TOKEN_FILE_BYTES).map_err(|e| match e {
        PrivateRead::Unreadable(source) => Error::io("cannot read the token file", path, source),
        refused => Error::usage(format!("--token-file {} {refused}", path.display())),
    })
}

/// The HTTP server's options from `rss mcp` flags; the token from `--token-file`, else
/// `RSS_MCP_TOKEN`.
fn http_options(addr: std::net::SocketAddr, args: &args::McpArgs) -> Result<HttpOptions> {
    let token = match &args.token_file {
        Some(path) => Some(Token::from_lines(&read_token_file(path)?)?),
        None => crate::config::mcp_token_from_env()
            .map(|t| Token::new(&t))
            .transpose()?,
    };
    let session_idle = parse_duration(&args.session_idle)
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            Error::usage(format!(
                "--session-idle {:?} is not a duration such as 90s or 10m",
                error::echo(&args.session_idle)
            ))
        })?;
    if args.max_sessions == 0 {
        return Err(Error::usage("--max-sessions must be at least 1"));
    }
    let opts = HttpOptions {
        addr,
        token,
        allow_remote: args.allow_remote,
        allowed_hosts: args.allowed_host.clone(),
        max_sessions: args.max_sessions,
        session_idle,
    };
    opts.check()?;
    Ok(opts)
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
