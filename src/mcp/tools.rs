//! The MCP tools: their arguments, schemas, annotations and descriptions.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde_json::Value;

use super::args::{
    AckDeliveryArgs, DiscoverArgs, FetchArticleArgs, FetchFeedArgs, GetItemArgs, GetSchemaArgs,
};
use crate::error::ErrorCode;
use crate::output::{SchemaKind, schema};

/// Most URLs one `fetch_feed` call takes.
pub const MAX_URLS: usize = 50;
/// Most URLs one `fetch_article` call takes.
pub const MAX_ARTICLE_URLS: usize = 20;
/// `fetch_feed`'s default `limit`.
pub const DEFAULT_LIMIT: u64 = 25;
/// The default `max_response_tokens` of every tool.
pub const DEFAULT_MAX_RESPONSE_TOKENS: u64 = 10_000;

/// A tool's input schema, as short as it can say the same: no `$schema`, titles or
/// document-level description; enums as `enum` lists (the argument's description says what
/// the values do), inlined; optional arguments typed by their value (absent is absent).
/// Every input schema refuses unknown arguments (`additionalProperties: false`).
fn object_schema<T: JsonSchema>() -> Arc<JsonObject> {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    crate::output::standard_vocabulary(&mut value);
    let defs = value
        .as_object_mut()
        .and_then(|m| m.shift_remove("$defs"))
        .unwrap_or(Value::Null);
    let mut map = match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    for k in ["$schema", "title", "description"] {
        map.shift_remove(k);
    }
    map.insert("additionalProperties".to_owned(), Value::Bool(false));
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for p in props.values_mut() {
            tidy_property(p, &defs);
        }
    }
    Arc::new(map)
}

/// One argument's schema made short ([`object_schema`]).
fn tidy_property(p: &mut Value, defs: &Value) {
    let Value::Object(map) = p else { return };
    let description = map.shift_remove("description");
    // `Option<Enum>`: `anyOf: [{$ref}, {type: null}]`; an enum: `oneOf` of consts.
    let mut target = map.clone();
    if let Some(Value::Array(any)) = map.get("anyOf")
        && let Some(r) = any
            .iter()
            .find_map(|s| s.get("$ref").and_then(Value::as_str))
    {
        let name = r.rsplit('/').next().unwrap_or("");
        target = defs
            .get(name)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
    } else if let Some(r) = map.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap_or("");
        target = defs
            .get(name)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
    }
    let mut out = JsonObject::new();
    if let Some(Value::Array(cases)) = target.get("oneOf") {
        let values: Vec<Value> = cases
            .iter()
            .filter_map(|c| c.get("const").cloned())
            .collect();
        out.insert("type".to_owned(), Value::from("string"));
        out.insert("enum".to_owned(), Value::Array(values));
    } else if let Some(Value::Array(values)) = target.get("enum") {
        out.insert("type".to_owned(), Value::from("string"));
        out.insert("enum".to_owned(), Value::Array(values.clone()));
    } else {
        for (k, v) in target {
            let v = match (k.as_str(), v) {
                ("default", Value::Null) => continue,
                ("type", Value::Array(types)) => types
                    .into_iter()
                    .find(|t| t != "null")
                    .unwrap_or(Value::Null),
                (_, v) => v,
            };
            out.insert(k, v);
        }
        if let Some(Value::Object(items)) = out.get_mut("items") {
            items.shift_remove("description");
        }
    }
    if let Some(d) = description {
        out.insert("description".to_owned(), d);
    }
    *map = out;
}

/// A result's schema as the server sends results: its compact view, with no descriptions
/// (`get_schema` gives the documented one).
fn output_schema(kind: SchemaKind) -> Arc<JsonObject> {
    let mut v = schema(kind);
    crate::output::compact::optional_fields(&mut v, false);
    Arc::new(match v {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    })
}

/// `fetch_feed`'s result schema: the fetch output and, beside it, the delivery's token
/// (`delivery_token`, left out without a `reader`) as ack_delivery takes it.
fn fetch_output_schema() -> Arc<JsonObject> {
    let mut map = (*output_schema(SchemaKind::Fetch)).clone();
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        props.insert(
            DELIVERY_TOKEN.to_owned(),
            serde_json::json!({
                "description": "With `reader`: the token of this result's items, for ack_delivery.",
                "type": "string",
            }),
        );
    }
    Arc::new(map)
}

/// The field of a `fetch_feed` result that holds its delivery's token.
pub const DELIVERY_TOKEN: &str = "delivery_token";

/// The server's instructions to agents; every code named comes from the error enum.
pub fn instructions() -> String {
    let mut s = String::from(
        "rss fetches RSS, Atom and JSON feeds, and the web pages their items link to, and returns \
         them as JSON.\n\
         Results: a summary line, then the result as JSON (the same value as structuredContent); \
         fields that are null, false, 0 or empty are left out.\n\
         Workflow: call fetch_feed with `urls` (up to 50) rather than many single calls: the server \
         paces every host itself, one request at a time per host, and learns how long a throttling \
         host wants to be left alone. Use limit, since and content_format=none for cheap listings, \
         then get_item for one full item. To read an item's web page, call fetch_article (not another \
         fetch tool: its requests are paced with the feed's host). Given a web page instead of a feed, \
         call discover_feeds. A result over its budget comes in pages (next_cursor) or parts \
         (next_offset): follow them rather than asking for less.\n\
         Pacing: a feed that could not be fetched in time is returned with code RATE_LIMITED and \
         details.retry_after_seconds; do not ask for that host again before then — asking earlier \
         only provokes more refusals. Other feeds in the same call are unaffected.\n\
         What is new since last time: fetch_feed with a `reader` name and `unseen: true`; handle the \
         items, then ack_delivery with the result's `delivery_token` (reading alone marks nothing: an \
         item not acknowledged comes again).\n\
         Instead of polling: each feed URL is a resource (resources/read gives fetch_feed's result \
         with ttlMs, how long it stays fresh); subscriptions/listen to feed URLs sends \
         notifications/resources/updated when a feed's items change, checked on the feed's own \
         schedule, once for every listener.\n\
         Error codes:\n",
    );
    for code in ErrorCode::all() {
        s.push_str(&format!("- {}: {}\n", code.as_str(), code.meaning()));
    }
    s
}

/// The server's tools: the one list (their names, and the dispatch that must handle each,
/// derive from it).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, strum::EnumIter, strum::IntoStaticStr, strum::EnumString,
)]
#[strum(serialize_all = "snake_case")]
pub enum ToolName {
    /// `fetch_feed`.
    FetchFeed,
    /// `fetch_article`.
    FetchArticle,
    /// `discover_feeds`.
    DiscoverFeeds,
    /// `get_item`.
    GetItem,
    /// `get_schema`.
    GetSchema,
    /// `ack_delivery`.
    AckDelivery,
}

impl ToolName {
    /// The tool's name on the wire.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The tool's definition: description, schemas, annotations.
    fn tool(self) -> Tool {
        let (title, description, input, output, open_world) = match self {
            ToolName::FetchFeed => (
                "Fetch feeds",
                "Fetch one feed (`url`) or up to 50 (`urls`): each feed's status, metadata and error, and \
                 its items (id, url, title, published, summary, content), newest first, `limit` per feed \
                 (default 25). The first page shows every feed; items share `max_response_tokens` (default \
                 10000), taken in turns across feeds, and the rest comes in pages: call again with the same \
                 arguments and `cursor` = `next_cursor`. A failed feed has `error`; RATE_LIMITED gives the \
                 seconds to leave its host alone. `content_format: none` lists cheaply; `articles: true` also \
                 reads each item's page as its article. With `reader` and `unseen: true`, only items that reader \
                 has not acknowledged, with a `delivery_token` for ack_delivery.",
                object_schema::<FetchFeedArgs>(),
                fetch_output_schema(),
                true,
            ),
            ToolName::FetchArticle => (
                "Read articles",
                "Read one web page (`url`, e.g. an item's url) or up to 20 (`urls`) as an article: its \
                 readable text without menus, ads or scripts, with title, authors, published, site_name, \
                 language and lead_image. Honours robots.txt; paced per host with the feeds. An article over \
                 `max_response_tokens` (default 10000) is cut at a paragraph with `next_offset`: call again \
                 with that `url` and `offset` for the rest (from the cache). A feed is NOT_AN_ARTICLE; a PDF \
                 or image UNSUPPORTED_CONTENT.",
                object_schema::<FetchArticleArgs>(),
                output_schema(SchemaKind::Article),
                true,
            ),
            ToolName::DiscoverFeeds => (
                "Discover feeds",
                "Find the feeds a web page advertises (RSS, Atom or JSON Feed links): absolute URLs, titles \
                 and formats; `is_feed` when the page is itself a feed. Pass a found URL to fetch_feed.",
                object_schema::<DiscoverArgs>(),
                output_schema(SchemaKind::Discover),
                true,
            ),
            ToolName::GetItem => (
                "Get one item",
                "One item of a feed in full, by `id` (from fetch_feed), guid or URL: from the cache when \
                 the feed was fetched before (so it stays reachable after it leaves the feed), else fetched. \
                 A body over `max_response_tokens` (default 10000) is cut at a paragraph with `next_offset`: \
                 call again with `offset` for the rest. `article: true` also reads the item's page \
                 (`article_offset` continues it).",
                object_schema::<GetItemArgs>(),
                output_schema(SchemaKind::Show),
                true,
            ),
            ToolName::GetSchema => (
                "Get a result's schema",
                "The JSON Schema of a tool's result (fetch_feed, fetch_article, discover_feeds, get_item or ack_delivery), \
                 with every field described.",
                object_schema::<GetSchemaArgs>(),
                Arc::new(
                    serde_json::json!({"type": "object"})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                ),
                false,
            ),
            ToolName::AckDelivery => (
                "Acknowledge a delivery",
                "Record the items of a fetch_feed result as seen by its reader: pass its `delivery_token` \
                 once the items are handled. Later fetch_feed calls with that reader and unseen: true \
                 leave them out. Answers `acknowledged` and `already_acknowledged` (the same token twice \
                 records nothing new). A changed, expired or unknown token is USAGE_ERROR and records nothing.",
                object_schema::<AckDeliveryArgs>(),
                // Both counts are the answer: always there, zero or not.
                Arc::new(match schema(SchemaKind::Ack) {
                    Value::Object(map) => map,
                    _ => JsonObject::new(),
                }),
                false,
            ),
        };
        // Acknowledging is the one tool that changes what the server keeps.
        let read_only = self != ToolName::AckDelivery;
        Tool::new(self.as_str(), description, input)
            .with_title(title)
            .with_raw_output_schema(output)
            .with_annotations(
                ToolAnnotations::with_title(title)
                    .read_only(read_only)
                    .destructive(false)
                    .idempotent(true)
                    .open_world(open_world),
            )
    }
}

/// Every tool the server offers.
pub fn all() -> Vec<Tool> {
    <ToolName as strum::IntoEnumIterator>::iter()
        .map(ToolName::tool)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_list_is_short_and_every_input_refuses_unknown_arguments() {
        let tools = all();
        let mut brief = 0;
        for t in &tools {
            let input = serde_json::to_string(&*t.input_schema).unwrap().len();
            let output = t
                .output_schema
                .as_ref()
                .map_or(0, |s| serde_json::to_string(&**s).unwrap().len());
            let description = t.description.as_ref().map_or(0, |d| d.len());
            eprintln!(
                "{}: description {description}, input schema {input}, output schema {output} characters",
                t.name
            );
            brief += description + input;
            assert_eq!(
                t.input_schema.get("additionalProperties"),
                Some(&Value::Bool(false)),
                "{}",
                t.name
            );
        }
        let whole = serde_json::to_string(&tools).unwrap().len();
        eprintln!("tools/list: {whole} characters; descriptions and input schemas: {brief}");
        assert!(brief <= 10_000, "descriptions and input schemas: {brief}");
    }
}
