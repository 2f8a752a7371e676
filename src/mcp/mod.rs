//! The MCP server (`rss mcp`: stdio, or streamable HTTP in [`http`]). Tools delegate to `ops`; one [`Context`] — one HTTP
//! client, gate and cache — is built once and shared by every call for the server's life.

pub mod http;
mod progress;
mod stdio;
pub mod tools;

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::feed::{RenderOptions, estimate_tokens};
use crate::inputs;
use crate::model::{ArticleOutput, FeedStatus, FetchOutput};
use crate::ops::{self, CacheMode, Context, FetchRequest, ShowOptions};
use crate::output::SchemaKind;
use tools::{DiscoverArgs, FetchArticleArgs, FetchFeedArgs, GetItemArgs, GetSchemaArgs, ToolName};

/// The MCP server state shared by all calls.
#[derive(Clone)]
pub struct Server {
    ctx: Arc<Context>,
    tools: Arc<Vec<Tool>>,
}

/// Kept from a call's deadline for what comes after the work: paging, serialising, sending.
const ANSWER_MARGIN: std::time::Duration = std::time::Duration::from_millis(750);

impl Server {
    /// The deadline of a call that starts now: `--call-timeout`, or the call's own
    /// `timeout_seconds` when shorter, less the time kept for answering.
    fn call_deadline(&self, asked: Option<u64>) -> tokio::time::Instant {
        let limit = self.ctx.config.call_timeout;
        let t = asked.map_or(limit, |s| {
            std::time::Duration::from_secs(s.max(1)).min(limit)
        });
        tokio::time::Instant::now() + t.saturating_sub(ANSWER_MARGIN.min(t / 4))
    }

    /// A server over this shared context.
    pub fn new(ctx: Context) -> Server {
        Server {
            ctx: Arc::new(ctx),
            tools: Arc::new(tools::all()),
        }
    }
}

/// Serves MCP on stdin/stdout until the client hangs up or `shutdown` resolves (a
/// signal): then in-flight calls are cancelled, which frees their hosts, and it returns.
pub async fn serve(ctx: Context, shutdown: impl std::future::Future) -> Result<()> {
    let transport = stdio::transport(tokio::io::stdin(), tokio::io::stdout());
    tokio::pin!(shutdown);
    let init = tokio::select! {
        r = Server::new(ctx).serve(transport) => r,
        _ = &mut shutdown => return Ok(()),
    };
    let running = match init {
        Ok(running) => running,
        // The client hung up before initializing: nothing to serve, nothing wrong.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(Error::internal_from("MCP initialization failed", e)),
    };
    let cancel = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    tokio::select! {
        r = &mut waiting => {
            r.map_err(|e| Error::internal_from("MCP server stopped", e))?;
        }
        _ = &mut shutdown => {
            tracing::info!("shutting down on a signal");
            cancel.cancel();
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), waiting).await;
        }
    }
    Ok(())
}

fn error_result(e: &Error, feed_url: Option<&str>) -> CallToolResult {
    let obj = e.to_object(feed_url);
    error_object_result(&serde_json::to_value(obj).unwrap_or(Value::Null))
}

fn error_object_result(obj: &Value) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(obj.to_string())])
}

fn success(summary: String, structured: Value) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(summary)]);
    r.structured_content = Some(structured);
    r
}

fn parse_args<T: DeserializeOwned>(args: Value) -> Result<T> {
    serde_json::from_value(args).map_err(|e| Error::usage(format!("invalid arguments: {e}")))
}

/// The URLs of a call that takes `url` or `urls` (at most `max` of `what`s).
fn url_or_urls(
    url: Option<String>,
    urls: Option<Vec<String>>,
    max: usize,
    what: &str,
) -> Result<Vec<String>> {
    match (url, urls) {
        (Some(u), None) => Ok(vec![u]),
        (None, Some(list)) if list.is_empty() => Err(Error::usage("`urls` is empty")),
        (None, Some(list)) if list.len() > max => Err(Error::usage(format!(
            "`urls` has {} entries; at most {max} per call",
            list.len()
        ))),
        (None, Some(list)) => Ok(list),
        (Some(_), Some(_)) => Err(Error::usage("give `url` or `urls`, not both")),
        (None, None) => Err(Error::usage(format!(
            "give `url` (one {what}) or `urls` (up to {max})"
        ))),
    }
}

/// A call's token budget.
fn budget_of(max_response_tokens: Option<u64>) -> usize {
    to_usize(Some(
        max_response_tokens.unwrap_or(tools::DEFAULT_MAX_RESPONSE_TOKENS),
    ))
    .unwrap_or(usize::MAX)
}

fn page_error_result(e: &Error, url: Option<&str>) -> CallToolResult {
    let obj = e.to_page_object(url);
    error_object_result(&serde_json::to_value(obj).unwrap_or(Value::Null))
}

/// One line saying what an article call returned.
fn article_summary(out: &ArticleOutput) -> String {
    let failed = out.errors.len();
    let cut = out
        .articles
        .iter()
        .filter(|a| a.next_offset.is_some())
        .count();
    let mut s = format!(
        "{} page(s): {} read, {failed} failed; ~{} content tokens.",
        out.articles.len(),
        out.articles.len() - failed,
        out.total_content_tokens_est
    );
    if cut > 0 {
        s.push_str(&format!(
            " {cut} cut at the token budget: call again with `offset` = next_offset for the rest."
        ));
    }
    s
}

fn to_usize(n: Option<u64>) -> Option<usize> {
    n.map(|v| usize::try_from(v).unwrap_or(usize::MAX))
}

/// One line saying what a fetch returned.
fn summary_line(out: &FetchOutput) -> String {
    let failed: Vec<&str> = out.errors.iter().map(|e| e.code.as_str()).collect();
    let ok = out.feeds.len() - failed.len();
    let mut s = format!(
        "{} feed(s): {ok} ok, {} failed; {} items (~{} content tokens).",
        out.feeds.len(),
        failed.len(),
        out.total_items,
        out.total_content_tokens_est
    );
    if let Some(wait) = out
        .errors
        .iter()
        .filter_map(|e| e.details.get("retry_after_seconds").and_then(Value::as_u64))
        .max()
    {
        s.push_str(&format!(" RATE_LIMITED feeds: retry after {wait} s."));
    }
    if out.next_cursor.is_some() {
        s.push_str(&format!(
            " A page: {} more items; call again with the same arguments and cursor = next_cursor.",
            out.truncation.items_on_later_pages
        ));
    }
    s
}

/// Tokens kept for the page note [`summary_line`] adds.
const PAGE_NOTE_TOKENS: usize = 32;

impl Server {
    async fn fetch_feed(
        &self,
        args: Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult> {
        let a: FetchFeedArgs = parse_args(args)?;
        let single = a.url.is_some();
        let urls = url_or_urls(a.url, a.urls, tools::MAX_URLS, "feed")?;
        let deadline = self.call_deadline(a.timeout_seconds);
        let request = FetchRequest {
            deadline: Some(deadline),
            since: a.since,
            limit: to_usize(Some(a.limit.unwrap_or(tools::DEFAULT_LIMIT))),
            query: a.query,
            dedupe: a.dedupe.unwrap_or_default(),
            content: a.content_format.unwrap_or_default(),
            max_content_chars: to_usize(a.max_content_chars),
            max_age: a.max_age_seconds.map(std::time::Duration::from_secs),
            articles: a.articles.unwrap_or(false),
            // Pages read for a model honour robots.txt.
            respect_robots: true,
            ..FetchRequest::default()
        }
        .with_policy(a.cache_policy.unwrap_or_default());
        let mut opts = request.options()?;
        let fingerprint = ops::pages::fingerprint(&urls, &request);
        let start = match &a.cursor {
            None => ops::pages::Start::default(),
            Some(c) => {
                let (start, since) = ops::pages::decode(&self.ctx.cursor_key, c, &fingerprint)?;
                ops::pages::continue_run(&mut opts, since);
                start
            }
        };
        let since = opts.selection.since;
        let budget = budget_of(a.max_response_tokens);
        let inputs = inputs::merge(urls);
        let (tracker, on_progress) = progress::track(&inputs);
        let fetch = ops::fetch_feeds(&self.ctx, inputs, &opts, &on_progress);
        let out = tracker.report(fetch, &self.ctx, context, "feeds").await;
        if single
            && let Some(feed) = out.feeds.first()
            && feed.status == FeedStatus::Error
            && let Some(err) = &feed.error
        {
            return Ok(error_object_result(
                &serde_json::to_value(err).unwrap_or(Value::Null),
            ));
        }
        let summary = summary_line(&out);
        let single_url = single
            .then(|| out.feeds.first().map(|f| f.feed_url.clone()))
            .flatten();
        let out = match ops::pages::page(
            &self.ctx.cursor_key,
            out,
            start,
            budget,
            estimate_tokens(&summary) + PAGE_NOTE_TOKENS,
            &fingerprint,
            since,
        ) {
            Ok(out) => out,
            Err(e) => return Ok(error_result(&e, single_url.as_deref())),
        };
        let summary = summary_line(&out);
        let value =
            serde_json::to_value(&out).map_err(|e| Error::internal_from("serializing", e))?;
        Ok(success(summary, value))
    }

    async fn fetch_article(
        &self,
        args: Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult> {
        let a: FetchArticleArgs = parse_args(args)?;
        let single = a.url.is_some();
        let urls = url_or_urls(a.url, a.urls, tools::MAX_ARTICLE_URLS, "page")?;
        let offset = to_usize(a.offset).unwrap_or(0);
        let mut opts = FetchRequest {
            deadline: Some(self.call_deadline(a.timeout_seconds)),
            content: a.content_format.unwrap_or_default(),
            max_content_chars: to_usize(a.max_content_chars),
            max_age: a.max_age_seconds.map(std::time::Duration::from_secs),
            respect_robots: true,
            ..FetchRequest::default()
        }
        .with_policy(a.cache_policy.unwrap_or_default())
        .article_options()?;
        if offset > 0 && opts.cache != CacheMode::Off {
            // The rest of an article comes from the copy its first part came from.
            opts.cache = CacheMode::MaxAge(std::time::Duration::MAX);
        }
        let budget = budget_of(a.max_response_tokens);
        let inputs = inputs::merge(urls);
        let (tracker, on_progress) = progress::track(&inputs);
        let read = ops::fetch_articles(&self.ctx, inputs, &opts, &on_progress);
        let mut out = tracker.report(read, &self.ctx, context, "pages").await;
        if single
            && let Some(first) = out.articles.first()
            && first.status == FeedStatus::Error
            && let Some(err) = &first.error
        {
            return Ok(error_object_result(
                &serde_json::to_value(err).unwrap_or(Value::Null),
            ));
        }
        for art in &mut out.articles {
            ops::budget::skip_to(art, offset);
        }
        let summary = article_summary(&out);
        let single_url = single
            .then(|| out.articles.first().map(|f| f.url.clone()))
            .flatten();
        if let Err(e) =
            ops::budget::fit_articles(&mut out, budget, estimate_tokens(&summary), offset)
        {
            return Ok(page_error_result(&e, single_url.as_deref()));
        }
        out.total_content_tokens_est = out.articles.iter().map(|a| a.content_tokens_est).sum();
        let value =
            serde_json::to_value(&out).map_err(|e| Error::internal_from("serializing", e))?;
        Ok(success(article_summary(&out), value))
    }

    async fn discover_feeds(&self, args: Value) -> Result<CallToolResult> {
        let a: DiscoverArgs = parse_args(args)?;
        let deadline = self.call_deadline(a.timeout_seconds);
        let out = ops::url_within(
            &self.ctx,
            deadline,
            &a.site_url,
            ops::discover(&self.ctx, &a.site_url),
        )
        .await?;
        let summary = if out.is_feed {
            format!("{} is itself a feed.", a.site_url)
        } else {
            format!("{} feed(s) advertised by {}.", out.feeds.len(), a.site_url)
        };
        Ok(success(
            summary,
            serde_json::to_value(&out).unwrap_or(Value::Null),
        ))
    }

    async fn get_item(&self, args: Value) -> Result<CallToolResult> {
        let a: GetItemArgs = parse_args(args)?;
        let opts = ShowOptions {
            refresh: a.refresh.unwrap_or(false),
            render: RenderOptions {
                format: a.content_format.unwrap_or_default(),
                max_content_chars: to_usize(a.max_content_chars),
            },
        };
        let budget = to_usize(Some(
            a.max_response_tokens
                .unwrap_or(tools::DEFAULT_MAX_RESPONSE_TOKENS),
        ))
        .unwrap_or(usize::MAX);
        let deadline = self.call_deadline(a.timeout_seconds);
        let mut out = ops::url_within(
            &self.ctx,
            deadline,
            &a.feed_url,
            ops::show_item(&self.ctx, &a.feed_url, &a.id, opts),
        )
        .await?;
        if a.article.unwrap_or(false) {
            let article_opts = FetchRequest {
                deadline: Some(deadline),
                content: opts.render.format,
                max_content_chars: opts.render.max_content_chars,
                respect_robots: true,
                ..FetchRequest::default()
            }
            .article_options()?;
            let (article, warnings) =
                ops::read_item_article(&self.ctx, &out.item, &article_opts).await;
            out.item.article = Some(Box::new(article));
            out.warnings.extend(warnings);
        }
        let summary = format!(
            "Item {:?}{}.",
            out.item.title.as_deref().unwrap_or("(untitled)"),
            if out.from_cache { " (from cache)" } else { "" }
        );
        if let Err(e) = ops::budget::fit_item(&mut out, budget, estimate_tokens(&summary)) {
            return Ok(error_result(&e, Some(&a.feed_url)));
        }
        Ok(success(
            summary,
            serde_json::to_value(&out).unwrap_or(Value::Null),
        ))
    }

    fn get_schema(&self, args: Value) -> Result<CallToolResult> {
        let a: GetSchemaArgs = parse_args(args)?;
        let kind = SchemaKind::parse(&a.command)?;
        Ok(success(
            format!("JSON Schema of the {} output.", a.command),
            crate::output::schema(kind),
        ))
    }

    async fn dispatch(
        &self,
        name: &str,
        args: Value,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let result = match name.parse::<ToolName>() {
            Ok(ToolName::FetchFeed) => self.fetch_feed(args, context).await,
            Ok(ToolName::FetchArticle) => self.fetch_article(args, context).await,
            Ok(ToolName::DiscoverFeeds) => self.discover_feeds(args).await,
            Ok(ToolName::GetItem) => self.get_item(args).await,
            Ok(ToolName::GetSchema) => self.get_schema(args),
            Err(_) => Err(Error::usage(format!("unknown tool {name:?}"))),
        };
        result.unwrap_or_else(|e| error_result(&e, None))
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("rss", env!("CARGO_PKG_VERSION")))
            .with_instructions(tools::instructions())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, McpError> {
        if !self.tools.iter().any(|t| t.name == request.name) {
            return Err(McpError::invalid_params(
                format!("unknown tool {:?}", request.name),
                None,
            ));
        }
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let cancelled = context.ct.clone();
        // Dropping the call's future on cancellation releases its host permits at once.
        tokio::select! {
            r = self.dispatch(&request.name, args, &context) => Ok(r.into()),
            _ = cancelled.cancelled() => Err(McpError::internal_error("the request was cancelled", None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instructions_name_every_error_code_and_only_real_ones() {
        let text = tools::instructions();
        for code in crate::error::ErrorCode::all() {
            assert!(text.contains(code.as_str()), "{} is missing", code.as_str());
        }
        let known: Vec<&str> = crate::error::ErrorCode::all().map(|c| c.as_str()).collect();
        for word in text.split(|c: char| !(c.is_ascii_uppercase() || c == '_')) {
            if word.len() > 3 && word.contains('_') {
                assert!(known.contains(&word), "{word} is not an error code");
            }
        }
    }

    #[test]
    fn integers_may_come_as_strings() {
        let a: FetchFeedArgs = parse_args(
            serde_json::json!({"url": "http://x/", "limit": "5", "max_content_chars": 100}),
        )
        .unwrap();
        assert_eq!(a.limit, Some(5));
        assert_eq!(a.max_content_chars, Some(100));
        let err =
            parse_args::<FetchFeedArgs>(serde_json::json!({"url": "http://x/", "limit": "-1"}))
                .unwrap_err();
        assert_eq!(err.code().as_str(), "USAGE_ERROR");
    }
}
