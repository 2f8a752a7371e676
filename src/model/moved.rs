//! The contract of `rss moved`: the feeds remembered as moved for good.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Warning;

/// The result of `rss moved`: the feeds that answered a permanent redirect, as shared by
/// every process that uses the same store.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct MovedOutput {
    /// Contract version.
    pub schema_version: String,
    /// Where the records are kept (`file:/…/moved`, `redis://…`), or `null` when there is no
    /// state directory to keep them in.
    pub store: Option<String>,
    /// One entry per feed, sorted by `feed_url`.
    pub feeds: Vec<MovedFeed>,
    /// Records that could not be read, or a store that could not be used.
    pub warnings: Vec<Warning>,
}

/// A feed that answered a permanent redirect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MovedFeed {
    /// The feed's address as it was requested.
    pub feed_url: String,
    /// Where its permanent redirects (`301`, `308`) led.
    pub moved_to: String,
    /// Fetches in a row that answered with that permanent redirect.
    pub times_in_a_row: u32,
    /// Whether the move is remembered (after 3 in a row): fetches of `feed_url` go straight
    /// to `moved_to`, with a `FEED_MOVED` warning.
    pub remembered: bool,
    /// When the first of those answers came (UTC RFC 3339).
    pub first_seen: Option<String>,
    /// When the last one came (UTC RFC 3339).
    pub last_seen: Option<String>,
}

/// The result of `rss moved forget`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct MovedForgetOutput {
    /// Contract version.
    pub schema_version: String,
    /// How many feeds' records were removed.
    pub forgotten: usize,
}
