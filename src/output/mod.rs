//! Rendering results: json, ndjson (items or tagged records), text; and the JSON Schemas
//! generated from the model types.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

pub mod compact;
pub mod hint;
mod json;
mod table;
mod text;

pub use table::write_hosts_table;
pub use text::{advice, write_article_text, write_text};

use crate::error::Error;
use crate::model::{
    AckOutput, ArticleOutput, ArticleResult, CacheListOutput, ConfigCheckOutput, DiscoverOutput,
    FeedStatus, FetchOutput, ForgetOutput, HostsOutput, NdjsonItem, NdjsonRecord, NdjsonSummary,
    ReadersOutput, ShowOutput,
};

/// How `rss fetch` prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One JSON document.
    Json,
    /// One JSON item a line (or tagged records).
    Ndjson,
    /// A human summary.
    Text,
}

/// Writes `value` as JSON and a newline; pretty when asked.
pub fn write_json<T: Serialize>(out: &mut dyn Write, value: &T, pretty: bool) -> io::Result<()> {
    if pretty {
        serde_json::to_writer_pretty(&mut *out, value)?;
    } else {
        serde_json::to_writer(&mut *out, value)?;
    }
    out.write_all(b"\n")
}

/// Writes a fetch result in `format` (compact JSON takes its item lists out for a moment,
/// to serialize them in parallel).
pub fn write_fetch(
    out: &mut dyn Write,
    result: &mut FetchOutput,
    format: Format,
    records: bool,
    pretty: bool,
    color: bool,
) -> io::Result<()> {
    match format {
        Format::Json if !pretty => json::write_fetch_json(out, result),
        Format::Json => write_json(out, result, pretty),
        Format::Ndjson => write_ndjson(out, result, records),
        Format::Text => write_text(out, result, color),
    }
}

/// Writes an article result in `format` (ndjson: one article a line).
pub fn write_articles(
    out: &mut dyn Write,
    result: &ArticleOutput,
    format: Format,
    pretty: bool,
    color: bool,
) -> io::Result<()> {
    match format {
        Format::Json => write_json(out, result, pretty),
        Format::Ndjson => result
            .articles
            .iter()
            .try_for_each(|a| write_json(out, a, false)),
        Format::Text => write_article_text(out, result, color),
    }
}

fn write_ndjson(out: &mut dyn Write, result: &FetchOutput, records: bool) -> io::Result<()> {
    for feed in &result.feeds {
        for item in &feed.items {
            let line = NdjsonItem {
                feed_url: feed.feed_url.clone(),
                item: item.clone(),
            };
            if records {
                write_json(out, &NdjsonRecord::Item(Box::new(line)), false)?;
            } else {
                write_json(out, &line, false)?;
            }
        }
    }
    if records {
        for e in &result.errors {
            write_json(out, &NdjsonRecord::Error(e.clone()), false)?;
        }
        let failed = result
            .feeds
            .iter()
            .filter(|f| f.status == FeedStatus::Error)
            .count();
        let summary = NdjsonSummary {
            schema_version: result.schema_version.clone(),
            fetched_at: result.fetched_at.clone(),
            feeds: result.feeds.len(),
            feeds_ok: result.feeds.len() - failed,
            feeds_failed: failed,
            total_items: result.total_items,
            total_content_tokens_est: result.total_content_tokens_est,
            warnings: result.warnings.clone(),
            truncation: result.truncation.clone(),
            delivery: result.delivery.clone(),
        };
        write_json(out, &NdjsonRecord::Summary(Box::new(summary)), false)?;
    }
    Ok(())
}

/// The commands whose output has a schema: the one list (names and `all` derive from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumIter, strum::IntoStaticStr)]
pub enum SchemaKind {
    /// `rss fetch --format json`.
    #[strum(serialize = "fetch")]
    Fetch,
    /// One line of `rss fetch --format ndjson`.
    #[strum(serialize = "ndjson")]
    NdjsonItem,
    /// One line of `rss fetch --format ndjson --ndjson-records`.
    #[strum(serialize = "ndjson-records")]
    NdjsonRecord,
    /// `rss article --format json`.
    #[strum(serialize = "article")]
    Article,
    /// One line of `rss article --format ndjson`.
    #[strum(serialize = "article-ndjson")]
    ArticleNdjson,
    /// `rss discover`.
    #[strum(serialize = "discover")]
    Discover,
    /// `rss show`.
    #[strum(serialize = "show")]
    Show,
    /// `rss cache list`.
    #[strum(serialize = "cache-list")]
    CacheList,
    /// `rss hosts`.
    #[strum(serialize = "hosts")]
    Hosts,
    /// `rss config check`.
    #[strum(serialize = "config-check")]
    ConfigCheck,
    /// The config file itself (for editors), not an output.
    #[strum(serialize = "config")]
    Config,
    /// `rss readers`.
    #[strum(serialize = "readers")]
    Readers,
    /// `rss readers forget`.
    #[strum(serialize = "readers-forget")]
    ReadersForget,
    /// One line of `rss watch`.
    #[strum(serialize = "watch")]
    Watch,
    /// `rss ack` (and MCP `ack_delivery`).
    #[strum(serialize = "ack")]
    Ack,
}

impl SchemaKind {
    /// Every kind, in documentation order.
    pub fn all() -> impl Iterator<Item = SchemaKind> {
        <SchemaKind as strum::IntoEnumIterator>::iter()
    }

    /// The command-line name (`rss schema --command NAME`).
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Parses a command name; a usage error naming the valid ones otherwise.
    pub fn parse(s: &str) -> Result<SchemaKind, Error> {
        Self::all().find(|k| k.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Self::all().map(SchemaKind::name).collect();
            Error::usage(format!(
                "schema command {s:?} is not one of {}",
                names.join(", ")
            ))
        })
    }
}

/// The JSON Schema of `kind`, generated from the model types. Every property is required:
/// optional values are `null`, never omitted.
pub fn schema(kind: SchemaKind) -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let schema = match kind {
        SchemaKind::Fetch => generator.into_root_schema_for::<FetchOutput>(),
        SchemaKind::NdjsonItem => generator.into_root_schema_for::<NdjsonItem>(),
        SchemaKind::NdjsonRecord => generator.into_root_schema_for::<NdjsonRecord>(),
        SchemaKind::Article => generator.into_root_schema_for::<ArticleOutput>(),
        SchemaKind::ArticleNdjson => generator.into_root_schema_for::<ArticleResult>(),
        SchemaKind::Discover => generator.into_root_schema_for::<DiscoverOutput>(),
        SchemaKind::Show => generator.into_root_schema_for::<ShowOutput>(),
        SchemaKind::CacheList => generator.into_root_schema_for::<CacheListOutput>(),
        SchemaKind::Hosts => generator.into_root_schema_for::<HostsOutput>(),
        SchemaKind::ConfigCheck => generator.into_root_schema_for::<ConfigCheckOutput>(),
        SchemaKind::Config => {
            // A file's keys are optional: only its vocabulary is made standard.
            let mut value = generator
                .into_root_schema_for::<crate::settings::FileConfig>()
                .to_value();
            standard_vocabulary(&mut value);
            return value;
        }
        SchemaKind::Readers => generator.into_root_schema_for::<ReadersOutput>(),
        SchemaKind::ReadersForget => generator.into_root_schema_for::<ForgetOutput>(),
        SchemaKind::Ack => generator.into_root_schema_for::<AckOutput>(),
        SchemaKind::Watch => generator.into_root_schema_for::<crate::model::WatchRecord>(),
    };
    let mut value = schema.to_value();
    require_all(&mut value);
    value
}

/// Keeps a schema to JSON Schema 2020-12's own vocabulary: the generator's non-standard
/// integer formats (`uint`, `uint64`, `uint16`, ...) become `minimum: 0` (signed ones and
/// `double` / `float` are dropped: the type says enough). Every schema we publish (output,
/// `rss schema`, MCP tool inputs) goes through it.
pub(crate) fn standard_vocabulary(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if let Some(Value::String(f)) = map.get("format") {
                let unsigned = f.starts_with("uint");
                if unsigned || f.starts_with("int") || f == "double" || f == "float" {
                    map.shift_remove("format");
                    if unsigned && !map.contains_key("minimum") {
                        map.insert("minimum".to_owned(), Value::from(0));
                    }
                }
            }
            for (_, child) in map.iter_mut() {
                standard_vocabulary(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(standard_vocabulary),
        _ => {}
    }
}

/// Makes every property required, in standard vocabulary ([`standard_vocabulary`]).
fn require_all(v: &mut Value) {
    standard_vocabulary(v);
    required(v);
}

fn required(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get("properties") {
                let keys: Vec<Value> = props.keys().cloned().map(Value::String).collect();
                map.insert("required".to_owned(), Value::Array(keys));
            }
            for (_, child) in map.iter_mut() {
                required(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(required),
        _ => {}
    }
}
