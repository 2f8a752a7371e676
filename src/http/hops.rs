//! Every hop of a request, in one place: the redirect chain, and the checks each hop
//! passes before anything is sent to it — an http(s) URL with a host, the private-network
//! guard on an address literal (names are checked as they resolve, `guard.rs`), and the
//! caller's own check ([`HopCheck`]: a page read's robots.txt, asked of the hop's own host,
//! with the whole chain that led to the hop, so the robots.txt read carries what that chain
//! allows). A hop that fails a check is never requested.

use std::future::Future;
use std::pin::Pin;

use tokio::time::Instant;
use url::Url;

use super::classify::{gate_refusal, join_chain};
use super::{Client, GetRequest, Lineage, Response, Tally, guard, send};
use crate::error::{Error, Result};
use crate::gate::HostKey;

/// The future a [`HopCheck`] gives.
pub type HopFuture<'a> = Pin<Box<dyn Future<Output = Result<()>> + Send + 'a>>;

/// What a caller asks of every hop of its request besides the client's own checks, before
/// the hop is sent (a page read: the hop host's robots.txt allows it). An error is the
/// request's answer.
pub trait HopCheck: Send + Sync + std::fmt::Debug {
    /// `Ok` when `url` may be requested; `reached` is the whole chain that led to it, `url`
    /// last (any request the check makes is led by it); `deadline` is the call's gate budget.
    fn check<'a>(&'a self, url: &'a Url, reached: &'a Lineage, deadline: Instant) -> HopFuture<'a>;
}

impl Client {
    /// Fetches `req.url`, following redirects; each hop is checked before it is sent and
    /// gated like any send.
    pub(super) async fn follow(&self, req: &GetRequest<'_>, tally: &mut Tally) -> Result<Response> {
        // The URL's own credentials never go on the wire in it, nor into any message.
        let (first, creds) = crate::redact::split_userinfo(&req.url);
        let mut url = first.clone();
        let mut chain: Vec<Url> = vec![url.clone()];
        loop {
            // The whole chain to this hop: what led to the request, then its own hops.
            let mut reached = req.led_by.clone();
            for u in &chain {
                reached.push(u.clone());
            }
            let key = self.check_hop(&url, &chain, &reached, req).await?;
            // What this hop sends beyond the request: its own rule's, and nobody else's.
            let plan = super::site::plan(
                &self.inner.settings,
                &url,
                &first,
                &chain,
                &req.led_by,
                creds.as_ref(),
            )?;
            let permits = plan
                .rule
                .and_then(|r| r.host_concurrency)
                .unwrap_or(self.inner.gate.params().host_concurrency);
            // What another process learned (or cleared) counts before this call queues.
            self.inner
                .hosts
                .refresh(&self.inner.gate, &key, &mut tally.notes)
                .await;
            let mut permit = self
                .inner
                .gate
                .acquire_with(&key, req.deadline, permits)
                .await
                .map_err(|t| gate_refusal(t, None, None))?;
            tally.gate_wait += permit.waited();
            let hop = self
                .send_until_admitted(&mut permit, &url, req, tally, &plan)
                .await?;
            drop(permit);
            let next = match hop {
                send::Hop::Done(mut resp) => {
                    resp.lineage = reached;
                    return Ok(*resp);
                }
                // Credentials a server puts in a Location are not ours to send.
                send::Hop::Redirect(next) => crate::redact::split_userinfo(&next).0,
            };
            let looped = chain.contains(&next);
            chain.push(next.clone());
            if looped || chain.len() - 1 > self.inner.max_redirects {
                let message = if looped {
                    format!("redirect loop: {}", join_chain(&chain))
                } else {
                    format!(
                        "more than {} redirects: {}",
                        self.inner.max_redirects,
                        join_chain(&chain)
                    )
                };
                return Err(Error::Redirect {
                    message,
                    hops: chain.len() - 1,
                });
            }
            url = next;
        }
    }

    /// The checks of one hop (`url`, the last of `chain`), in order: its scheme, its host
    /// (the gate's key, returned), the private-network guard, the caller's [`HopCheck`].
    /// No permit is held meanwhile (the caller's check may read a robots.txt, led by
    /// `reached`).
    async fn check_hop(
        &self,
        url: &Url,
        chain: &[Url],
        reached: &Lineage,
        req: &GetRequest<'_>,
    ) -> Result<HostKey> {
        let from = chain.len().checked_sub(2).and_then(|i| chain.get(i));
        if !matches!(url.scheme(), "http" | "https") {
            let reason = match from {
                Some(from) => format!("redirect from {from} to a non-http(s) URL"),
                None => format!(
                    "the scheme {:?} is not fetched (only http and https)",
                    url.scheme()
                ),
            };
            return Err(Error::InvalidUrl {
                input: url.to_string(),
                reason,
                source: None,
            });
        }
        let key = self.key_of(url).ok_or_else(|| Error::InvalidUrl {
            input: url.to_string(),
            reason: "the URL has no host".into(),
            source: None,
        })?;
        if self.inner.setup.deny_private_networks {
            guard::refuse_literal(url)?;
        }
        if let Some(check) = req.hops {
            check.check(url, reached, req.deadline).await?;
        }
        Ok(key)
    }
}
