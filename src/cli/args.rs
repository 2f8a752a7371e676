//! The clap definitions: every command, flag and argument, as plain data.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::feed::ContentFormat;
use crate::output::Format;

/// Fetch RSS, Atom and JSON feeds on request and print clean, stable JSON.
#[derive(Debug, Parser)]
#[command(
    name = "rss",
    version,
    about,
    propagate_version = true,
    arg_required_else_help = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub(super) global: GlobalArgs,
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub(super) struct GlobalArgs {
    /// Cache directory (default: the OS cache dir; env RSS_CACHE_DIR).
    #[arg(long, global = true, value_name = "DIR")]
    pub(super) cache_dir: Option<PathBuf>,
    /// State directory: readers' delivery marks, which a cache clear never touches
    /// (default: $XDG_STATE_HOME/rss; env RSS_STATE_DIR).
    #[arg(long, global = true, value_name = "DIR")]
    pub(super) state_dir: Option<PathBuf>,
    /// Print nothing on stderr but errors; no progress bar.
    #[arg(short, long, global = true)]
    pub(super) quiet: bool,
    /// Log more on stderr (-v info, -vv debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub(super) verbose: u8,
    /// User-Agent header, e.g. "mybot/1.0 (+https://example.com/contact)" (default: rss/VERSION;
    /// env RSS_USER_AGENT).
    #[arg(long, global = true, value_name = "UA")]
    pub(super) user_agent: Option<String>,
    /// Requests in flight across all hosts.
    #[arg(long, global = true, value_name = "N")]
    pub(super) concurrency: Option<usize>,
    /// Requests in flight per host (env RSS_HOST_CONCURRENCY; default 1).
    #[arg(long, global = true, value_name = "N")]
    pub(super) host_concurrency: Option<usize>,
    /// Longest wait for a host before failing with RATE_LIMITED, seconds (env RSS_MAX_GATE_WAIT_SECS; default 60).
    #[arg(long, global = true, value_name = "SECS")]
    pub(super) max_gate_wait: Option<u64>,
    /// Time limit for connecting and for reading a response, seconds.
    #[arg(long, global = true, value_name = "SECS")]
    pub(super) timeout: Option<f64>,
    /// Cap on the cache's bytes on disk; least recently fetched entries are evicted past it
    /// (default 1 GiB; 0: no cap; env RSS_CACHE_MAX_BYTES).
    #[arg(long, global = true, value_name = "BYTES")]
    pub(super) cache_max_bytes: Option<u64>,
    /// Largest response body accepted, in bytes after decoding (default 20 MiB).
    #[arg(long, global = true, value_name = "BYTES")]
    pub(super) max_body_bytes: Option<u64>,
    /// Never colour text output (NO_COLOR is honoured too).
    #[arg(long, global = true)]
    pub(super) no_color: bool,
    /// Refuse requests to loopback, private, link-local (169.254.169.254 included),
    /// unique-local and unspecified addresses, checked on the address each request (and
    /// each redirect) connects to (env RSS_DENY_PRIVATE_NETWORKS=1).
    #[arg(long, global = true)]
    pub(super) deny_private_networks: bool,
    /// Keep what the gate learns about hosts inside this process instead of sharing it with
    /// every rss process using the same cache directory (env RSS_HOST_STATE=off).
    #[arg(long, global = true)]
    pub(super) no_host_state: bool,
    /// Keep host state in Redis (redis://host:port/db, rediss:// for TLS) so every worker
    /// of a fleet behind one address paces each host together (env RSS_GATE_STORE).
    #[arg(
        long,
        global = true,
        value_name = "URL",
        conflicts_with = "no_host_state"
    )]
    pub(super) gate_store: Option<String>,
    /// What the gate paces together: each host (default), or each site, its subdomains
    /// grouped by registrable domain (env RSS_HOST_KEY).
    #[arg(long, global = true, value_name = "host|site")]
    pub(super) host_key: Option<String>,
    /// The longest a server's own freshness (max-age, Expires) is trusted before asking it
    /// again (default 1h; env RSS_MAX_FRESHNESS_SECS).
    #[arg(long, global = true, value_name = "DUR")]
    pub(super) max_freshness: Option<String>,
    /// The shortest interval a watched feed that says nothing of its schedule is checked
    /// at (default 5m; env RSS_WATCH_MIN_INTERVAL_SECS).
    #[arg(long, global = true, value_name = "DUR")]
    pub(super) watch_min_interval: Option<String>,
    /// The longest interval between two checks of a watched feed (default 24h; env
    /// RSS_WATCH_MAX_INTERVAL_SECS).
    #[arg(long, global = true, value_name = "DUR")]
    pub(super) watch_max_interval: Option<String>,
    /// The config file: defaults and rules per site (default:
    /// $XDG_CONFIG_HOME/rss/config.toml; env RSS_CONFIG).
    #[arg(long, global = true, value_name = "FILE")]
    pub(super) config: Option<PathBuf>,
    /// How errors on stderr are written: auto (words on a terminal, JSON otherwise), json
    /// or text.
    #[arg(long, global = true, value_enum, default_value_t = ErrorFormat::Auto)]
    pub(super) error_format: ErrorFormat,
}

/// `--error-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ErrorFormat {
    /// Words when stderr is a terminal, the JSON object otherwise.
    Auto,
    /// Always the JSON error object.
    Json,
    /// Always words.
    Text,
}

impl ErrorFormat {
    /// The format given in raw arguments (read before parsing, so that a parse error is
    /// written as asked), or `Auto`.
    pub(crate) fn from_raw_args(args: &[std::ffi::OsString]) -> ErrorFormat {
        let mut it = args.iter().filter_map(|a| a.to_str());
        let mut found = ErrorFormat::Auto;
        while let Some(a) = it.next() {
            if a == "--" {
                break;
            }
            let value = match a.strip_prefix("--error-format") {
                Some("") => it.next(),
                Some(v) => v.strip_prefix('='),
                None => None,
            };
            match value {
                Some("json") => found = ErrorFormat::Json,
                Some("text") => found = ErrorFormat::Text,
                Some("auto") => found = ErrorFormat::Auto,
                _ => {}
            }
        }
        found
    }

    /// Whether errors are written as words.
    pub(crate) fn words(self) -> bool {
        use std::io::IsTerminal;
        match self {
            ErrorFormat::Json => false,
            ErrorFormat::Text => true,
            ErrorFormat::Auto => std::io::stderr().is_terminal(),
        }
    }
}

#[derive(Debug, Subcommand)]
pub(super) enum Command {
    /// Fetch feeds and print their items.
    #[command(after_help = "Examples:
  rss fetch https://blog.rust-lang.org/feed.xml
  rss fetch --input feeds.txt --since 1d --limit 5 --format text
  rss fetch --reader digest --unseen --since 7d --input feeds.txt --format text
  rss fetch --opml subscriptions.opml --format ndjson > items.ndjson
  rss fetch --articles --limit 3 https://blog.rust-lang.org/feed.xml")]
    Fetch(FetchArgs),
    /// Read web pages as articles: their readable text and metadata.
    #[command(after_help = "Examples:
  rss article https://blog.rust-lang.org/2024/05/02/Rust-1.78.0.html
  rss article --content text --max-content-chars 2000 URL
  rss fetch FEED | jq -r '.feeds[].items[].url' | rss article - --format ndjson")]
    Article(ArticleArgs),
    /// List the feeds a web page advertises.
    #[command(after_help = "Examples:
  rss discover https://blog.rust-lang.org/
  rss discover https://example.com/ | jq -r '.feeds[].url' | rss fetch -")]
    Discover {
        /// The page (http(s) URL or local file).
        site_url: String,
    },
    /// Print one item by id, guid or URL (from the cache when it has it).
    #[command(after_help = "Examples:
  rss show https://blog.rust-lang.org/feed.xml --id 3f2a9c1d0b7e4a55
  rss show https://blog.rust-lang.org/feed.xml --id https://blog.rust-lang.org/2024/05/02/Rust-1.78.0.html --content text")]
    Show(ShowArgs),
    /// Print the JSON Schema of a command's output.
    #[command(after_help = "Examples:
  rss schema --command fetch > fetch.schema.json
  rss schema --command ndjson")]
    Schema {
        /// fetch, ndjson, ndjson-records, article, article-ndjson, discover, show,
        /// cache-list, hosts, readers, readers-forget, ack, watch, config-check, or config (the config
        /// file, for editors).
        #[arg(long, value_name = "COMMAND", default_value = "fetch")]
        command: String,
    },
    /// Inspect or clear the cache.
    #[command(after_help = "Examples:
  rss cache list | jq '.total_bytes'
  rss cache clear --older-than 7d")]
    Cache {
        #[command(subcommand)]
        action: CacheAction,
    },
    /// Acknowledge deliveries: record their items as seen for their reader.
    #[command(after_help = "Examples:
  rss fetch --reader digest --unseen --input feeds.txt > new.json
  rss ack \"$(jq -r .delivery.token new.json)\"")]
    Ack {
        /// The `delivery.token` of each output whose items are handled.
        #[arg(required = true, value_name = "TOKEN")]
        tokens: Vec<String>,
    },
    /// List readers and their delivery marks, or forget them.
    #[command(after_help = "Examples:
  rss readers
  rss readers forget digest
  rss readers forget digest https://blog.rust-lang.org/feed.xml")]
    Readers {
        #[command(subcommand)]
        action: Option<ReadersAction>,
    },
    /// Show what the gate has learned about each host (shared by every rss process), or
    /// forget it.
    #[command(after_help = "Examples:
  rss hosts
  rss hosts clear example.com
  RSS_GATE_STORE=redis://redis.internal:6379/0 rss hosts")]
    Hosts {
        #[command(subcommand)]
        action: Option<HostsAction>,
        /// table (default at a terminal) or json (default when piped).
        #[arg(long, value_enum)]
        format: Option<HostsFormat>,
    },
    /// Show where the config file is looked for, or check it and print its rules (every
    /// secret as ***).
    #[command(after_help = "Examples:
  rss config path
  rss config check
  rss config check ~/feeds.toml --url https://feeds.example.com/private/feed.xml")]
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Watch feeds in the foreground: one NDJSON line per new item as it appears, until
    /// SIGINT or SIGTERM (exit 0) or --duration.
    #[command(after_help = "Examples:
  rss watch https://blog.rust-lang.org/feed.xml | jq -r 'select(.type == \"item\") | .title'
  rss watch --input feeds.txt --duration 1h > new.ndjson
  rss watch --reader alerts https://example.com/feed.xml   # then: rss ack TOKEN of each delivery line")]
    Watch(WatchArgs),
    /// Serve the tools over MCP: on stdin/stdout, or over streamable HTTP with --http.
    #[command(after_help = "Examples:
  claude mcp add rss -- rss mcp --deny-private-networks
  {\"mcpServers\": {\"rss\": {\"command\": \"rss\", \"args\": [\"mcp\", \"--deny-private-networks\"]}}}
  RSS_MCP_TOKEN=$(openssl rand -hex 32) rss mcp --http 127.0.0.1:8765")]
    Mcp(McpArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    #[command(after_help = "Examples:
  rss completions bash > ~/.local/share/bash-completion/completions/rss
  rss completions zsh > \"${fpath[1]}/_rss\"")]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) on stdout: `rss man > rss.1`.
    #[command(after_help = "Examples:
  rss man > ~/.local/share/man/man1/rss.1
  rss man | man -l -")]
    Man,
}

#[derive(Debug, Args)]
pub(super) struct McpArgs {
    /// Let tools read local feed files, but only regular files inside DIR (symlinks
    /// resolved; no escape with `..`). Without it the server reads http(s) URLs only.
    #[arg(long, value_name = "DIR")]
    pub(super) allow_files: Option<PathBuf>,
    /// Serve MCP over streamable HTTP at http://ADDR/mcp instead of stdio (loopback
    /// addresses only, unless --allow-remote; port 0 picks a free port, printed on stderr).
    #[arg(long, value_name = "ADDR")]
    pub(super) http: Option<std::net::SocketAddr>,
    /// Read the bearer token every HTTP request must carry from PATH (env RSS_MCP_TOKEN
    /// holds it otherwise; the token is never printed).
    #[arg(long, value_name = "PATH", requires = "http")]
    pub(super) token_file: Option<PathBuf>,
    /// Allow --http on an address other machines can reach (a token is then required).
    #[arg(long, requires = "http")]
    pub(super) allow_remote: bool,
    /// A further name clients may use for this server in Host and Origin headers (name or
    /// name:port; repeatable), e.g. behind a reverse proxy.
    #[arg(long, value_name = "NAME", requires = "http")]
    pub(super) allowed_host: Vec<String>,
    /// Most HTTP sessions open at once.
    #[arg(long, value_name = "N", default_value_t = crate::mcp::http::DEFAULT_MAX_SESSIONS, requires = "http")]
    pub(super) max_sessions: usize,
    /// Answer every tool call within SECS, waits and sends included (default 50, under the
    /// 60 s MCP clients allow; env RSS_CALL_TIMEOUT_SECS): what is still waiting then is
    /// RATE_LIMITED with its wait. A call's timeout_seconds may lower it.
    #[arg(long, value_name = "SECS")]
    pub(super) call_timeout: Option<u64>,
    /// The most tokens a call may ask for with `max_response_tokens` (default 25000); a call
    /// asking more is refused naming this cap.
    #[arg(long, value_name = "N")]
    pub(super) max_response_tokens: Option<u64>,
    /// With --http: let tools reach loopback, private and other non-public addresses
    /// (refused by default over HTTP; env RSS_ALLOW_PRIVATE_NETWORKS=1).
    #[arg(long)]
    pub(super) allow_private_networks: bool,
    /// Close an HTTP session idle this long (90s, 10m, 1h).
    #[arg(long, value_name = "DUR", default_value = "10m", requires = "http")]
    pub(super) session_idle: String,
    /// Most feed subscriptions the server holds, every listener's together (default 1000);
    /// the ones over it are left out of a listener's acknowledgement and named.
    #[arg(long, value_name = "N")]
    pub(super) max_subscriptions: Option<u64>,
    /// Most feed subscriptions one `subscriptions/listen` holds (default 100).
    #[arg(long, value_name = "N")]
    pub(super) max_subscriptions_per_listener: Option<u64>,
}

#[derive(Debug, Args)]
pub(super) struct WatchArgs {
    /// Feed URLs (http or https); `-` reads URLs from stdin.
    pub(super) urls: Vec<String>,
    /// Read URLs from FILE (one a line, # comments).
    #[arg(long, value_name = "FILE")]
    pub(super) input: Vec<PathBuf>,
    /// Read feed URLs from an OPML file.
    #[arg(long, value_name = "FILE")]
    pub(super) opml: Vec<PathBuf>,
    /// Print the items present at the start too (for --reader: those it has not
    /// acknowledged).
    #[arg(long)]
    pub(super) initial: bool,
    /// Stop after DUR (90s, 30m, 2h) with exit 0; without it, run until SIGINT or SIGTERM.
    #[arg(long, value_name = "DUR")]
    pub(super) duration: Option<String>,
    /// Print only what reader NAME has not acknowledged; each feed's new items are followed
    /// by a delivery line whose token `rss ack` takes (marks move only then).
    #[arg(long, value_name = "NAME")]
    pub(super) reader: Option<String>,
    /// How item bodies are printed.
    #[arg(long, value_enum, default_value = "markdown")]
    pub(super) content: ContentFormat,
    /// Cut each body to N characters.
    #[arg(long, value_name = "N")]
    pub(super) max_content_chars: Option<usize>,
}

/// How `rss hosts` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum HostsFormat {
    /// One line per host, for a person.
    Table,
    /// The JSON document (`rss schema --command hosts`).
    Json,
}

#[derive(Debug, Subcommand)]
pub(super) enum ReadersAction {
    /// Forget NAME's marks in FEED, or everything of NAME (its pending deliveries too).
    Forget {
        /// The reader.
        name: String,
        /// The feed, as it was fetched; every feed when absent.
        feed: Option<String>,
        /// The reader's scope as `rss readers` lists it (an MCP HTTP client's reader).
        #[arg(long, value_name = "SCOPE")]
        scope: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub(super) enum HostsAction {
    /// Forget the learned state of HOST (host:port or a URL), or of every host.
    Clear {
        /// The host; every host when absent.
        host: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub(super) enum ConfigAction {
    /// Print where the config file is looked for.
    Path,
    /// Check the config file and print the settings each rule gives (secrets as ***).
    Check {
        /// The file to check (default: the one `rss config path` names).
        file: Option<PathBuf>,
        /// Also say which rule this URL gets.
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub(super) enum CacheAction {
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

/// How the cache is used (`rss fetch`, `rss article`).
#[derive(Debug, Args)]
pub(super) struct CacheArgs {
    /// fresh (default: a copy the server's max-age or Expires still covers is served with no
    /// request), revalidate (always ask), refresh (ask now), stale-if-error or no-cache.
    #[arg(long, value_enum, default_value = "fresh")]
    pub(super) cache_policy: crate::ops::CachePolicy,
    /// Serve cached copies younger than DUR with no request.
    #[arg(long, value_name = "DUR")]
    pub(super) max_age: Option<String>,
    /// Ask the origin now, whatever the cached copy's freshness (the same as
    /// --cache-policy refresh).
    #[arg(long, conflicts_with = "no_cache")]
    pub(super) refresh: bool,
    /// Neither read nor write the cache.
    #[arg(long)]
    pub(super) no_cache: bool,
    /// When the origin fails, serve the cached copy as `stale`.
    #[arg(long)]
    pub(super) stale_if_error: bool,
}

#[derive(Debug, Args)]
pub(super) struct FetchArgs {
    /// Feed URLs or local files; `-` reads URLs from stdin.
    pub(super) urls: Vec<String>,
    /// Read URLs from FILE (one a line, # comments).
    #[arg(long, value_name = "FILE")]
    pub(super) input: Vec<PathBuf>,
    /// Read feed URLs from an OPML file.
    #[arg(long, value_name = "FILE")]
    pub(super) opml: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "json")]
    pub(super) format: Format,
    /// With --format ndjson: tagged item / error / summary records.
    #[arg(long)]
    pub(super) ndjson_records: bool,
    /// How item bodies are returned.
    #[arg(long, value_enum, default_value = "markdown")]
    pub(super) content: ContentFormat,
    /// Cut each body to N characters.
    #[arg(long, value_name = "N")]
    pub(super) max_content_chars: Option<usize>,
    /// At most N items per feed, newest first.
    #[arg(long, value_name = "N")]
    pub(super) limit: Option<usize>,
    /// Only items since: 30m, 2h, 7d, 2026-06-01 or an RFC 3339 time.
    #[arg(long, value_name = "WHEN")]
    pub(super) since: Option<String>,
    /// Only items whose title, summary or content hold every word and "phrase" and no
    /// -excluded word (case- and accent-insensitive, whole words); OR, AND, NOT and
    /// parentheses combine terms: '(Stadia OR xCloud) -rumour'.
    #[arg(long, value_name = "QUERY", allow_hyphen_values = true)]
    pub(super) query: Option<String>,
    /// Items of the run that tell the same story: list them (report), list them and keep
    /// the first (drop), or do not look (off).
    #[arg(long, value_enum, default_value = "report")]
    pub(super) dedupe: crate::ops::Dedupe,
    #[command(flatten)]
    pub(super) cache: CacheArgs,
    /// Also read each returned item's page as an article (attached as `article`).
    #[arg(long)]
    pub(super) articles: bool,
    /// With --articles: honour each page host's robots.txt.
    #[arg(long)]
    pub(super) respect_robots: bool,
    /// Deliver the items to reader NAME: the output carries a delivery token that `rss ack`
    /// turns into marks (1-64 characters of A-Za-z0-9._-).
    #[arg(long, value_name = "NAME")]
    pub(super) reader: Option<String>,
    /// With --reader: only items the reader has not acknowledged (after --since and
    /// --query, before --limit).
    #[arg(long, requires = "reader")]
    pub(super) unseen: bool,
}

#[derive(Debug, Args)]
pub(super) struct ArticleArgs {
    /// Page URLs or local HTML files; `-` reads URLs from stdin.
    pub(super) urls: Vec<String>,
    /// Read URLs from FILE (one a line, # comments).
    #[arg(long, value_name = "FILE")]
    pub(super) input: Vec<PathBuf>,
    /// Output format (ndjson: one article a line).
    #[arg(long, value_enum, default_value = "json")]
    pub(super) format: Format,
    /// How the article is returned (default markdown; text with --format text).
    #[arg(long, value_enum)]
    pub(super) content: Option<ContentFormat>,
    /// Cut each article to N characters.
    #[arg(long, value_name = "N")]
    pub(super) max_content_chars: Option<usize>,
    #[command(flatten)]
    pub(super) cache: CacheArgs,
    /// Honour each page host's robots.txt (the MCP server always does).
    #[arg(long)]
    pub(super) respect_robots: bool,
}

#[derive(Debug, Args)]
pub(super) struct ShowArgs {
    /// The feed (URL or local file).
    pub(super) feed_url: String,
    /// The item's id, guid or URL.
    #[arg(long)]
    pub(super) id: String,
    /// Fetch the feed live instead of using the cache.
    #[arg(long)]
    pub(super) refresh: bool,
    /// How the body is returned.
    #[arg(long, value_enum, default_value = "markdown")]
    pub(super) content: ContentFormat,
    /// Cut the body to N characters.
    #[arg(long, value_name = "N")]
    pub(super) max_content_chars: Option<usize>,
}
