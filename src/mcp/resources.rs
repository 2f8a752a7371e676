//! Feeds as MCP resources: a feed's URI is its own URL, and `resources/read` gives what
//! `fetch_feed` with that `url` (and its defaults) would — the same cache, gate and config
//! rules — as JSON text, with how long the copy stays fresh (`ttlMs`) and who may share
//! it (`cacheScope`: `private` when credentials were used). A read that fails is the
//! revision's error: a URL that is not a readable feed or an address the server refuses is
//! `-32602` (invalid params, "not found"), a host that made us wait or failed `-32603`;
//! `data` is the error object `fetch_feed` would give.

use rmcp::ErrorData as McpError;
use rmcp::RoleServer;
use rmcp::model::{CacheScope, ReadResourceResult, ResourceContents};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

use super::Server;
use crate::error::ErrorCode;

/// What a feed resource's text is.
const MIME: &str = "application/json";

impl Server {
    /// `resources/read` of the feed `uri`.
    pub(super) async fn read_feed(
        &self,
        uri: String,
        context: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceResult, McpError> {
        let url = match url::Url::parse(&uri) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => u,
            _ => {
                return Err(McpError::invalid_params(
                    format!(
                        "{} is not a feed resource: a feed's resource URI is its http(s) URL",
                        crate::redact::text(&uri)
                    ),
                    None,
                ));
            }
        };
        let answer = self
            .fetch_feed(json!({ "url": uri }), context)
            .await
            .unwrap_or_else(|e| self.error(&e, Some(&uri)));
        let Some(value) = answer.structured_content else {
            // A call that could not start: its one text block is the error object.
            let text = answer
                .content
                .first()
                .and_then(|c| c.as_text())
                .map(|t| t.text.clone())
                .unwrap_or_default();
            let obj = serde_json::from_str(&text).unwrap_or(Value::Null);
            return Err(refused(&obj));
        };
        let feed = &value["feeds"][0];
        if answer.is_error == Some(true) {
            return Err(refused(&feed["error"]));
        }
        let ttl_ms = feed["fresh_until"]
            .as_str()
            .and_then(crate::date::parse)
            .map(|t| (t - chrono::Utc::now()).num_milliseconds().max(0) as u64)
            .unwrap_or(0);
        let led_by = crate::http::Lineage::none();
        let scope = if self.ctx.client.sends_credentials(&url, &led_by) {
            CacheScope::Private
        } else {
            CacheScope::Public
        };
        let text = serde_json::to_string(&value).unwrap_or_default();
        Ok(
            ReadResourceResult::new(vec![ResourceContents::text(text, uri).with_mime_type(MIME)])
                .with_ttl_ms(ttl_ms)
                .with_cache_scope(scope),
        )
    }
}

/// The revision's error for a feed that could not be read, carrying its error object.
fn refused(obj: &Value) -> McpError {
    let code = obj["code"].as_str().unwrap_or_default();
    let message = obj["message"]
        .as_str()
        .unwrap_or("the feed could not be read")
        .to_owned();
    let data = Some(obj.clone()).filter(|o| !o.is_null());
    let not_there = [
        ErrorCode::InvalidUrl,
        ErrorCode::FeedParseFailed,
        ErrorCode::NotFound,
        ErrorCode::Usage,
    ]
    .iter()
    .any(|c| c.as_str() == code);
    let gone = code == ErrorCode::FeedFetchFailed.as_str()
        && matches!(obj["details"]["http_status"].as_u64(), Some(404 | 410));
    if code == ErrorCode::InvalidUrl.as_str() || code == ErrorCode::Usage.as_str() {
        McpError::invalid_params(message, data)
    } else if not_there || gone {
        McpError::resource_not_found(message, data)
    } else {
        McpError::internal_error(message, data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ErrorCode as Rpc;

    fn code_of(code: &str, status: Option<u64>) -> Rpc {
        let obj = json!({"code": code, "message": "m", "details": {"http_status": status}});
        refused(&obj).code
    }

    #[test]
    fn a_feed_that_cannot_be_read_is_the_revisions_error_with_its_object() {
        // Not a feed, or a refused address: invalid params ("not found" becomes -32602 for
        // a 2026-07-28 client, which rmcp maps).
        assert_eq!(code_of("INVALID_URL", None), Rpc::INVALID_PARAMS);
        assert_eq!(code_of("USAGE_ERROR", None), Rpc::INVALID_PARAMS);
        assert_eq!(code_of("FEED_PARSE_FAILED", None), Rpc::RESOURCE_NOT_FOUND);
        assert_eq!(
            code_of("FEED_FETCH_FAILED", Some(404)),
            Rpc::RESOURCE_NOT_FOUND
        );
        assert_eq!(
            code_of("FEED_FETCH_FAILED", Some(410)),
            Rpc::RESOURCE_NOT_FOUND
        );
        // A host that made us wait or failed: the server's error, with what to do.
        assert_eq!(code_of("FEED_FETCH_FAILED", Some(500)), Rpc::INTERNAL_ERROR);
        assert_eq!(code_of("RATE_LIMITED", None), Rpc::INTERNAL_ERROR);
        assert_eq!(code_of("NETWORK_ERROR", None), Rpc::INTERNAL_ERROR);
        let e = refused(
            &json!({"code": "RATE_LIMITED", "message": "wait 5 s", "details": {"retry_after_seconds": 5}}),
        );
        assert_eq!(e.message, "wait 5 s");
        assert_eq!(e.data.unwrap()["details"]["retry_after_seconds"], 5);
    }
}
