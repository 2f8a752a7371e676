//! The output contract: every type `rss` prints or returns over MCP.
//!
//! # Wire format
//!
//! `rss fetch --format json` prints one [`FetchOutput`]. `--format ndjson` prints one
//! [`NdjsonItem`] a line; with `--ndjson-records` every line is an [`NdjsonRecord`] tagged
//! by `type` (`item`, `error`, `summary`). `rss discover` prints a [`DiscoverOutput`],
//! `rss show` a [`ShowOutput`], `rss article` an [`ArticleOutput`], `rss cache list` a
//! [`CacheListOutput`], `rss hosts` a [`HostsOutput`], `rss config check` a
//! [`ConfigCheckOutput`].
//!
//! Rules that hold for every type here:
//! - optional fields serialize as `null`, never omitted (the generated schemas list every
//!   property as required);
//! - timestamps are UTC RFC 3339 (`2026-06-01T10:00:00Z`);
//! - `code` strings are the stable part of an error; messages may change;
//! - new fields may be added within a [`SCHEMA_VERSION`]; none is removed or renamed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod admin;
mod article;
mod config;
mod feed;
mod moved;
mod podcast;
mod readers;

pub use admin::*;
pub use article::*;
pub use config::*;
pub use feed::*;
pub use moved::*;
pub use podcast::*;
pub use readers::*;

/// The version of this contract; bumped only by an incompatible change.
pub const SCHEMA_VERSION: &str = "1";

/// A structured error: `code` is the contract, `message` is for people.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ErrorObject {
    /// The feed this error belongs to, or `null` for a run-level error.
    pub feed_url: Option<String>,
    /// Stable error code (see the README).
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
    /// Machine-readable specifics (`http_status`, `retry_after_seconds`, `kind`, ...).
    pub details: serde_json::Map<String, serde_json::Value>,
}

/// A warning's stable code: the one list (its wire names, `as_str` and `all` derive from
/// it).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::EnumIter,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum WarningCode {
    /// The feed needed repairs to be read (undeclared prefixes, bad entities, missing end tags, a body cut short).
    FeedRepaired,
    /// An element of the feed was skipped (an item with nothing in it, an unreadable JSON Feed item).
    ElementSkipped,
    /// The feed has more items than are read from one feed.
    ItemsCapped,
    /// No returned item has a date: order is the feed's own and `since` cannot filter.
    UndatedItems,
    /// An item's HTML body was given as stripped text instead.
    ContentExtractionFallback,
    /// The run had no cache (no directory, or it cannot be written).
    CacheUnavailable,
    /// A cache entry did not check out and was treated as a miss.
    CacheEntryCorrupt,
    /// A fresh body could not be written to the cache.
    CacheWriteFailed,
    /// The origin failed and the cached copy was served (`stale-if-error`).
    ServedStale,
    /// Discovery found no advertised feed and lists links whose address names one.
    FeedsGuessedFromLinks,
    /// Discovery found no feed on the page.
    NoFeedsFound,
    /// The shared host-state store could not be used; pacing went on without it.
    GateStoreUnavailable,
    /// A host's stored state was unreadable and was ignored.
    HostStateCorrupt,
    /// A shared send slot lapsed while its request was on the wire (the process was
    /// stalled past the slot's lifetime): another worker may have sent beside it.
    GateSlotLost,
    /// A page continued from a cursor found its feed changed since the last page (a newer
    /// copy was fetched): items may repeat or be missing.
    CursorShifted,
    /// The feed moved for good (a permanent redirect answered on several fetches in a row):
    /// it is fetched from the new address the message names.
    FeedMoved,
}

impl WarningCode {
    /// Every code, in the order the README lists them.
    pub fn all() -> impl Iterator<Item = WarningCode> {
        <WarningCode as strum::IntoEnumIterator>::iter()
    }

    /// The code as it appears in the output.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl std::fmt::Display for WarningCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for WarningCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A non-fatal finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Warning {
    /// The feed it concerns, or `null` for the run.
    pub feed_url: Option<String>,
    /// Stable warning code.
    pub code: WarningCode,
    /// Human-readable explanation.
    pub message: String,
}

impl Warning {
    /// A warning about `feed_url` (`None`: the run).
    pub fn new(feed_url: Option<String>, code: WarningCode, message: impl Into<String>) -> Warning {
        Warning {
            feed_url,
            code,
            message: message.into(),
        }
    }
}
