//! `subscriptions/listen` with resource subscriptions to feed URLs: the server acknowledges
//! the feeds it takes (the caps and what is not a feed URL leave some out), then sends
//! `notifications/resources/updated` for a feed's URI each time its items change, until
//! the client cancels or hangs up (or the server shuts down: the listen's own result then
//! ends it gracefully). The checks are the process's watcher's (`crate::watch`): one per
//! feed whatever the number of listeners, stopped with the last one.
//!
//! The feeds left out are named: in a `notifications/message` warning on the stream when
//! the listen opted in to log messages (`io.modelcontextprotocol/logLevel`), and, when
//! none at all could be taken, in the `-32602` error that ends the listen.

use rmcp::ErrorData as McpError;
use rmcp::model::{ServerNotification, SubscriptionFilter};
use rmcp::service::SubscriptionContext;
use serde_json::{Value, json};

use super::Server;
use crate::watch::{Event, Refusal};

impl Server {
    /// What of `requested` a listen gets: the feeds the watcher would take now.
    pub(super) fn accepted_feeds(&self, requested: &SubscriptionFilter) -> SubscriptionFilter {
        let asked = requested.resource_subscriptions.clone().unwrap_or_default();
        let (taken, _) = self.watch.reserve(&asked);
        SubscriptionFilter::builder()
            .resource_subscriptions(taken)
            .build()
    }

    /// One listen, until it ends.
    pub(super) async fn listen_feeds(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let asked = context
            .requested()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        let acked = context
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        // Why each feed asked for is not listened to: left out of the acknowledgement (the
        // reason as the watcher gives it now), or taken by other listeners since.
        let (_, mut refused) = self.watch.admit_as(&asked, acked.len());
        refused.retain(|(uri, _)| !acked.contains(uri));
        let (mut listener, late) = self.watch.subscribe(&acked);
        refused.extend(late);
        if !refused.is_empty() {
            tracing::warn!(
                "a listener asked for {} feeds; {} were left out: {}",
                asked.len(),
                refused.len(),
                named(&refused)
            );
        }
        if listener.uris().next().is_none() {
            return Err(McpError::invalid_params(
                format!("no feed of this listen can be watched: {}", named(&refused)),
                Some(details(&refused)),
            ));
        }
        if !refused.is_empty() {
            warn_left_out(&context, &refused).await;
        }
        let sink = context.sink();
        loop {
            let event = tokio::select! {
                () = context.cancelled() => return Ok(()),
                e = listener.next() => e,
            };
            match event {
                // The server shuts down: the listen ends gracefully.
                None => return Ok(()),
                Some(Event::Changed { uri, .. }) => {
                    if sink.notify_resource_updated(&*uri).await.is_err() {
                        return Ok(());
                    }
                }
                Some(_) => {}
            }
        }
    }
}

/// Each refused feed with its reason, for people.
fn named(refused: &[(String, Refusal)]) -> String {
    refused
        .iter()
        .map(|(uri, why)| format!("{} ({why})", crate::redact::text(uri)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The refused feeds as structured details: `{left_out: [{uri, reason, cap}]}`.
fn details(refused: &[(String, Refusal)]) -> Value {
    let left_out: Vec<Value> = refused
        .iter()
        .map(|(uri, why)| {
            let (reason, cap) = match why {
                Refusal::NotAFeedUrl(_) => ("not_a_feed_url", None),
                Refusal::PrivateNetwork(_) => ("private_network", None),
                Refusal::ListenerCap(n) => ("listener_cap", Some(*n)),
                Refusal::ServerCap(n) => ("server_cap", Some(*n)),
                Refusal::Closing => ("closing", None),
            };
            json!({
                "uri": crate::redact::text(uri),
                "reason": reason,
                "cap": cap,
                "message": why.to_string(),
            })
        })
        .collect();
    json!({ "left_out": left_out })
}

/// Names the feeds left out in a warning on the listen's stream (stamped with its id), when
/// the listen asked for log messages at `warning` or below.
#[allow(deprecated)]
async fn warn_left_out(context: &SubscriptionContext, refused: &[(String, Refusal)]) {
    use rmcp::model::{LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParam};
    let request = context.request_context();
    let wanted = matches!(
        request.meta.log_level(),
        Some(
            LoggingLevel::Debug | LoggingLevel::Info | LoggingLevel::Notice | LoggingLevel::Warning
        )
    );
    if !wanted {
        return;
    }
    let mut data = details(refused);
    data["message"] = Value::from(format!(
        "{} feeds of this listen are not watched: {}",
        refused.len(),
        named(refused)
    ));
    let mut param = LoggingMessageNotificationParam::new(LoggingLevel::Warning, data);
    param.logger = Some("rss".to_owned());
    let mut note =
        ServerNotification::LoggingMessageNotification(LoggingMessageNotification::new(param));
    rmcp::model::GetMeta::get_meta_mut(&mut note).set_subscription_id(request.id.clone());
    let _ = request.peer.send_notification(note).await;
}
