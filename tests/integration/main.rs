//! Integration tests: every test talks only to loopback servers it starts itself.

mod helpers;
mod hostile_pages;
mod hosts;

mod gate_word;

mod articles;

mod announced;

mod cache;
mod cli;
mod credentials;
mod fleet;
mod formats;
mod limits;
mod mcp;
mod mcp_guard;
mod mcp_http;
mod mcp_pages;
mod mcp_ts;
mod model_view;
mod moved;
mod pacing;
mod parsing;
mod private;
mod readers;
mod readers_mcp;
mod readers_model;
mod readers_race;
mod readme;
mod redis;
mod robots;
mod selection;
mod signals;
mod silent;
mod tokens;
mod transcripts;
mod watch_cli;
mod watch_mcp;
mod watch_origin;
