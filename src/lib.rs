//! `rss`: fetch RSS, Atom and JSON feeds on request and return clean, stable JSON, from a
//! CLI and an MCP server that share one core.
//!
//! - `model`    — the output contract (serde + schemars types, `SCHEMA_VERSION`)
//! - `error`    — the one error enum, stable codes, details, exit codes
//! - `config`   — runtime parameters and defaults; the one reader of `RSS_*` variables
//! - `gate`     — the per-host request gate: permits, pacing, learned cooldowns
//! - `hosts`    — learned host state shared beyond the process (file and Redis stores)
//! - `http`     — the shared client: gated conditional GETs within size and time limits
//! - `schedule` — running a batch: per-host queues, no head-of-line blocking
//! - `cache`    — the atomic file cache, its listing and clearing
//! - `feed`     — parsing, stable ids, content rendering, since/limit/sort
//! - `discover` — feed autodiscovery from an HTML page
//! - `html`     — the forgiving HTML tokenizer shared by rendering and discovery
//! - `urls`     — URL resolution and the schemes rendered content may link to
//! - `inputs`   — arguments, stdin, `--input`, `--opml`: merged, classified, de-duplicated
//! - `local`    — capped, time-limited local reads, and which files may be read
//! - `ops`      — the operations both front ends call (fetch, discover, show, cache)
//! - `payload`  — a body in chunks, freed as a parser reads it
//! - `output`   — json / ndjson / text rendering, schema emission
//! - `cli`      — the clap surface and the one exit path
//! - `mcp`      — the MCP server: tools delegate to `ops`, one shared client and cache
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cache;
pub mod cli;
pub mod config;
pub mod discover;
pub mod error;
pub mod feed;
pub mod gate;
pub(crate) mod hosts;
pub(crate) mod html;
pub mod http;
pub mod inputs;
pub mod local;
pub mod mcp;
pub mod model;
pub mod ops;
pub mod output;
pub mod payload;
pub mod schedule;
pub(crate) mod urls;

pub use config::Config;
pub use error::{Error, ErrorCode, Result};
pub use hosts::StoreError;
pub use model::{FetchOutput, SCHEMA_VERSION};
pub use ops::Context;
