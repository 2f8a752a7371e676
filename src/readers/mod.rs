//! Readers and their delivery marks: which items a named reader has acknowledged, per feed,
//! moved only by an explicit acknowledgement, never by reading.
//!
//! A fetch for a reader leaves out what it has acknowledged (`--unseen`, after `--since`
//! and `--query`, before `--limit`) and hands back a delivery: a token that stands for
//! exactly the items of that output. Acknowledging the token records them (and, with
//! `--dedupe`, the other items of their duplicate groups). Marks live beside host state,
//! through its store layer (files under the state directory, or the fleet's Redis), never
//! in the cache.
//!
//! - `name`     — who a reader is: a chosen name, scoped by a bearer token over MCP HTTP
//! - `marks`    — one reader's marks in one feed, and their bounds
//! - `delivery` — a delivery as stored, and a reader's index of them
//! - `token`    — the signed token that names a delivery
//! - `view`     — a reader's view of one run
//! - `store`    — the records of all of it in the store
//! - `ack`      — acknowledging deliveries, all or nothing

mod ack;
mod delivery;
mod marks;
mod name;
mod store;
mod token;
mod view;

pub use delivery::{MAX_DELIVERIES, TOKEN_LIFETIME};
pub use marks::{MARK_MAX_AGE, MAX_MARKS_PER_FEED};
pub use name::{MAX_NAME_CHARS, ReaderId, Scope};
pub use view::View;

pub(crate) use delivery::{Commit, DeliveredFeed, DeliveryRecord, WalkFeed};
pub(crate) use store::{Readers, random_id};
pub(crate) use token::{Claim, Refusal};
