//! What a reader's deliveries, `rss ack` (MCP `ack_delivery`) and `rss readers` print.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The items of one output handed to a reader: acknowledging `token` records them as seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Delivery {
    /// The reader's name, as given.
    pub reader: String,
    /// Stands for exactly the items of this output: give it to `rss ack` (MCP
    /// `ack_delivery`) once they are handled. Opaque; `null` when the output has no item.
    pub token: Option<String>,
    /// How many items of this output the token stands for.
    pub items: usize,
    /// Until when the token is accepted (UTC RFC 3339); past it, the items come again.
    pub expires_at: Option<String>,
}

/// The answer of `rss ack` (and of the MCP `ack_delivery` tool).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct AckOutput {
    /// Items recorded as seen now (with `--dedupe`, the other items of their duplicate
    /// groups count too).
    pub acknowledged: usize,
    /// Items that were already recorded (the token was acknowledged before).
    pub already_acknowledged: usize,
}

/// The result of `rss readers`: every reader with its marks and pending deliveries.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ReadersOutput {
    /// Contract version.
    pub schema_version: String,
    /// Where the marks are kept (`file:/…/readers`, `redis://…`).
    pub store: String,
    /// One entry per reader, sorted by scope and name.
    pub readers: Vec<ReaderInfo>,
}

/// One reader: the feeds it has marks in, and the deliveries not yet acknowledged.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ReaderInfo {
    /// The reader's name.
    pub reader: String,
    /// The bearer token the name belongs to over MCP HTTP (a short digest of it, never the
    /// token); `null` for the CLI's and stdio's readers.
    pub scope: Option<String>,
    /// One entry per feed with marks, sorted by URL.
    pub feeds: Vec<ReaderFeedInfo>,
    /// Deliveries given and not yet acknowledged (nor expired), oldest first.
    pub pending_deliveries: Vec<PendingDelivery>,
}

/// A reader's marks in one feed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ReaderFeedInfo {
    /// The feed, as requested.
    pub feed_url: String,
    /// Item ids marked as seen.
    pub ids: usize,
    /// When the oldest mark was recorded (UTC RFC 3339).
    pub oldest_mark: Option<String>,
    /// When the newest mark was recorded (UTC RFC 3339).
    pub newest_mark: Option<String>,
}

/// A delivery waiting for its acknowledgement.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PendingDelivery {
    /// When it was given (UTC RFC 3339).
    pub delivered_at: String,
    /// When its token stops being accepted (UTC RFC 3339).
    pub expires_at: String,
    /// Items it stands for.
    pub items: usize,
}

/// The result of `rss readers forget`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ForgetOutput {
    /// Feeds whose marks were forgotten.
    pub feeds: usize,
    /// Deliveries forgotten (their tokens are refused from now on).
    pub deliveries: usize,
}
