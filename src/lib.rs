//! `rss`: fetch RSS, Atom and JSON feeds on request and return clean, stable JSON.
//!
//! - `model`    — the output contract (serde + schemars types, `SCHEMA_VERSION`)
//! - `error`    — the one error enum, stable codes, details, exit codes
//! - `config`   — runtime parameters and defaults; the one reader of `RSS_*` variables
//! - `gate`     — the per-host request gate: permits, pacing, learned cooldowns
//! - `http`     — the shared client: gated conditional GETs within size and time limits
//! - `feed`     — parsing, stable ids, content rendering, since/limit/sort
#![forbid(unsafe_code)]

pub mod config;
pub mod error;
pub mod feed;
pub mod gate;
pub mod http;
pub mod model;
