//! The MCP server (`rss mcp`: stdio, or streamable HTTP in [`http`]). Tools delegate to `ops`; one [`Context`] — one HTTP
//! client, gate and cache — is built once and shared by every call for the server's life.

mod accept;
mod answer;
mod args;
mod calls;
mod guard;
pub mod http;
mod life;
mod listen;
mod progress;
mod resources;
mod stdio;
pub mod tools;

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, InitializeResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, SubscriptionFilter, Tool,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::ops::Context;
use tools::ToolName;

/// The MCP server state shared by all calls.
#[derive(Clone)]
pub struct Server {
    ctx: Arc<Context>,
    tools: Arc<Vec<Tool>>,
    /// The feeds listeners subscribed to, each checked once for all of them.
    watch: crate::watch::Watcher,
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
        let ctx = Arc::new(ctx);
        // A check reads the items to compare them, and renders none of their bodies.
        let render = crate::feed::RenderOptions {
            format: crate::feed::ContentFormat::None,
            max_content_chars: None,
        };
        Server {
            watch: crate::watch::Watcher::of_context(ctx.clone(), render, false),
            ctx,
            tools: Arc::new(tools::all()),
        }
    }

    /// Ends every listen gracefully and stops every watch (the server shuts down).
    pub(crate) async fn shut_watches(&self) {
        self.watch.shut().await;
    }
}

/// Serves MCP on stdin/stdout until the client hangs up or `shutdown` resolves (a
/// signal): then in-flight calls are cancelled, which frees their hosts, and it returns.
/// Its one client's cursors are signed with this process's own key (an HTTP server takes
/// its store's, shared by every node: `http::serve`).
pub async fn serve(ctx: Context, shutdown: impl std::future::Future) -> Result<()> {
    let transport = stdio::transport(tokio::io::stdin(), tokio::io::stdout());
    tokio::pin!(shutdown);
    let server = Server::new(ctx);
    let init = tokio::select! {
        r = server.clone().serve(transport) => r,
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
            // Listens end with their own result before the calls are cancelled.
            server.shut_watches().await;
            cancel.cancel();
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), waiting).await;
        }
    }
    Ok(())
}

/// The scope readers are named in for this call: its bearer token's, over HTTP with one.
fn reader_scope(context: &RequestContext<RoleServer>) -> Option<crate::ops::Scope> {
    context
        .extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<guard::ReaderScope>()
        .map(|s| s.0.clone())
}

impl Server {
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
            Ok(ToolName::AckDelivery) => self.ack_delivery(args, context).await,
            Err(_) => Err(Error::usage(format!("unknown tool {name:?}"))),
        };
        result.unwrap_or_else(|e| self.error(&e, None))
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .build(),
        )
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

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourcesResult, McpError> {
        // Every feed URL is a resource; none is listed.
        Ok(ListResourcesResult::default())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ReadResourceResponse, McpError> {
        let cancelled = context.ct.clone();
        tokio::select! {
            r = self.read_feed(request.uri, &context) => r.map(Into::into),
            _ = cancelled.cancelled() => Err(McpError::internal_error("the request was cancelled", None)),
        }
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(self.accepted_feeds(requested))
    }

    async fn listen(&self, context: SubscriptionContext) -> std::result::Result<(), McpError> {
        self.listen_feeds(context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, McpError> {
        if !self.tools.iter().any(|t| t.name == request.name) {
            // Counted as a call of the tool `unknown` (one label, whatever name was sent).
            crate::metrics::Call::start("unknown").finish(true);
            return Err(McpError::invalid_params(
                format!("unknown tool {:?}", request.name),
                None,
            ));
        }
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let cancelled = context.ct.clone();
        let tool = request
            .name
            .parse::<ToolName>()
            .map_or("unknown", ToolName::as_str);
        // Counted in flight until it ends; a call dropped unanswered counts as cancelled.
        let counted = crate::metrics::Call::start(tool);
        // Dropping the call's future on cancellation releases its host permits at once.
        tokio::select! {
            r = self.dispatch(&request.name, args, &context) => {
                counted.finish(r.is_error == Some(true));
                Ok(r.into())
            }
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
}
