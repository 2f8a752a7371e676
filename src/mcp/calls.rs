//! The tools' calls: arguments read strictly, mapped to `ops` requests, results cut to the
//! call's budget.

use rmcp::RoleServer;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;

use super::args::{self, FetchArticleArgs, FetchFeedArgs, GetItemArgs, SchemaTool};
use super::{Server, answer, progress, tools};
use crate::error::{Error, Result};
use crate::feed::{ContentFormat, RenderOptions, estimate_tokens};
use crate::inputs;
use crate::model::FeedStatus;
use crate::ops::budget::Offsets;
use crate::ops::{self, CacheMode, FetchRequest, ShowOptions};
use crate::output::SchemaKind;

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

fn to_usize(n: Option<u64>) -> Option<usize> {
    n.map(|v| usize::try_from(v).unwrap_or(usize::MAX))
}

/// A format for an article: what was asked, else markdown.
fn article_format(asked: Option<ContentFormat>) -> ContentFormat {
    asked.unwrap_or(ContentFormat::Markdown)
}

impl Server {
    /// A call's token budget: what it asked (default 10000), refused above the server's
    /// cap.
    fn budget_of(&self, asked: Option<u64>) -> Result<usize> {
        let cap = self.ctx.config.max_response_tokens;
        let asked = to_usize(Some(asked.unwrap_or(tools::DEFAULT_MAX_RESPONSE_TOKENS)))
            .unwrap_or(usize::MAX);
        if asked > cap {
            return Err(Error::usage(format!(
                "`max_response_tokens` {asked} is over this server's cap of {cap} tokens: ask \
                 for {cap} or less (the rest of a larger result comes in pages or parts)"
            )));
        }
        Ok(asked)
    }

    /// An error result in this server's words.
    pub(super) fn error(&self, e: &Error, url: Option<&str>) -> CallToolResult {
        answer::error(e, url, self.ctx.config.max_response_tokens)
    }

    pub(super) async fn fetch_feed(
        &self,
        args: serde_json::Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult> {
        let a: FetchFeedArgs = args::parse("fetch_feed", args)?;
        let budget = self.budget_of(a.max_response_tokens)?;
        let urls = url_or_urls(a.url, a.urls, tools::MAX_URLS, "feed")?;
        let articles = a.articles.unwrap_or(false);
        if a.article_format.is_some() && !articles {
            return Err(Error::usage(
                "`article_format` is the format of the articles `articles: true` reads: give both",
            ));
        }
        let deadline = self.call_deadline(a.timeout_seconds);
        let request = FetchRequest {
            deadline: Some(deadline),
            since: a.since,
            limit: to_usize(Some(a.limit.unwrap_or(tools::DEFAULT_LIMIT))),
            query: a.query,
            dedupe: a.dedupe.unwrap_or_default(),
            // With articles, the article is the body unless the feed's is asked for too.
            content: a.content_format.unwrap_or(if articles {
                ContentFormat::None
            } else {
                ContentFormat::Markdown
            }),
            article_content: Some(article_format(a.article_format)),
            max_content_chars: to_usize(a.max_content_chars),
            max_age: a.max_age_seconds.map(std::time::Duration::from_secs),
            articles,
            transcripts: a.transcripts.unwrap_or(false),
            // Pages read for a model honour robots.txt.
            respect_robots: true,
            reader: a.reader,
            unseen: a.unseen.unwrap_or(false),
            ..FetchRequest::default()
        }
        .with_policy(a.cache_policy.unwrap_or_default());
        let mut opts = request.options()?;
        // A transcript is long: within a result it is cut, unless asked otherwise.
        if let Some(t) = &mut opts.transcripts {
            t.render.max_content_chars = t
                .render
                .max_content_chars
                .or(Some(tools::TRANSCRIPT_CHARS_PER_ITEM));
        }
        let reader = request.reader_request(super::reader_scope(context))?;
        let fingerprint = ops::pages::fingerprint(&self.ctx.cursor_key, &urls, &request);
        let start = match &a.cursor {
            None => ops::pages::Start::default(),
            Some(c) => {
                let (start, since) = ops::pages::decode(&self.ctx.cursor_key, c, &fingerprint)?;
                ops::pages::continue_run(&mut opts, since);
                start
            }
        };
        let since = opts.selection.since;
        let mut inputs = inputs::merge(urls);
        let asked = inputs.len();
        if let Some(r) = &reader {
            opts.unseen = Some(ops::open_view(&self.ctx, r, &inputs, start.walk()).await?);
        }
        ops::pages::hold_back(&mut inputs, &start);
        let (tracker, on_progress) = progress::track(&inputs);
        let fetch = ops::fetch_feeds(&self.ctx, inputs, &opts, &on_progress);
        let out = tracker.report(fetch, &self.ctx, context, "feeds").await;
        let single_url = (asked == 1)
            .then(|| out.feeds.first().map(|f| f.feed_url.clone()))
            .flatten();
        let mut overhead =
            estimate_tokens(&answer::fetch_summary(&out, asked)) + answer::SUMMARY_TOKENS;
        // A reader's delivery is drawn first: what it adds is part of the budget.
        let prepared = match &opts.unseen {
            Some(view) => {
                let p = ops::prepare(&self.ctx, view).await?;
                let name = view.reader().name();
                let added = serde_json::json!({
                    "delivery": {"reader": name, "token": p.token(), "items": out.total_items,
                                 "expires_at": p.expires_at()},
                    tools::DELIVERY_TOKEN: p.token(),
                });
                overhead +=
                    estimate_tokens(&added.to_string()) + estimate_tokens(&answer::delivered(name));
                Some(p)
            }
            None => None,
        };
        let mut out = match ops::pages::page(
            &self.ctx.cursor_key,
            out,
            start,
            (budget, overhead),
            &fingerprint,
            since,
            prepared.as_ref().map(ops::Prepared::walk),
        ) {
            Ok(out) => out,
            Err(e) => return Ok(self.error(&e, single_url.as_deref())),
        };
        if let (Some(view), Some(p)) = (&opts.unseen, prepared) {
            ops::deliver_prepared(&self.ctx, view, p, &mut out).await?;
        }
        let failed =
            !out.feeds.is_empty() && out.feeds.iter().all(|f| f.status == FeedStatus::Error);
        let summary = answer::fetch_summary(
            &out,
            if a.cursor.is_some() {
                out.feeds.len()
            } else {
                asked
            },
        );
        // The delivery's token beside the result, as ack_delivery takes it.
        let mut value =
            serde_json::to_value(&out).map_err(|e| Error::internal_from("serializing", e))?;
        let token = out.delivery.as_ref().and_then(|d| d.token.clone());
        if let serde_json::Value::Object(map) = &mut value {
            map.insert(
                tools::DELIVERY_TOKEN.to_owned(),
                serde_json::Value::from(token),
            );
        }
        Ok(answer::result(summary, &value, failed))
    }

    pub(super) async fn fetch_article(
        &self,
        args: serde_json::Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult> {
        let a: FetchArticleArgs = args::parse("fetch_article", args)?;
        let budget = self.budget_of(a.max_response_tokens)?;
        let offset = to_usize(a.offset).unwrap_or(0);
        if offset > 0 && a.urls.as_ref().is_some_and(|u| u.len() > 1) {
            return Err(Error::usage(
                "`offset` continues one article: give it with that article's `url` (each cut \
                 article of a `urls` call is continued by its own call)",
            ));
        }
        let urls = url_or_urls(a.url, a.urls, tools::MAX_ARTICLE_URLS, "page")?;
        let mut opts = FetchRequest {
            deadline: Some(self.call_deadline(a.timeout_seconds)),
            content: article_format(a.content_format),
            max_content_chars: to_usize(a.max_content_chars),
            max_age: a.max_age_seconds.map(std::time::Duration::from_secs),
            respect_robots: true,
            ..FetchRequest::default()
        }
        .with_policy(a.cache_policy.unwrap_or_default())
        .article_options()?;
        if offset > 0 {
            // The rest of an article is cut from the whole, which the cap must not shorten.
            opts.render.max_content_chars = None;
            if opts.cache != CacheMode::Off {
                // The rest of an article comes from the copy its first part came from.
                opts.cache = CacheMode::MaxAge(std::time::Duration::MAX);
            }
        }
        let inputs = inputs::merge(urls);
        let (tracker, on_progress) = progress::track(&inputs);
        let read = ops::fetch_articles(&self.ctx, inputs, &opts, &on_progress);
        let mut out = tracker.report(read, &self.ctx, context, "pages").await;
        let single_url = (out.articles.len() == 1)
            .then(|| out.articles.first().map(|f| f.url.clone()))
            .flatten();
        if let Err(e) = ops::budget::skip_articles(&mut out, offset) {
            return Ok(self.error(&e, single_url.as_deref()));
        }
        if offset > 0
            && let Some(max) = to_usize(a.max_content_chars)
        {
            ops::budget::cap_articles(&mut out, max, offset);
        }
        let overhead = estimate_tokens(&answer::article_summary(&out)) + answer::SUMMARY_TOKENS;
        if let Err(e) = ops::budget::fit_articles(&mut out, budget, overhead, offset) {
            return Ok(self.error(&e, single_url.as_deref()));
        }
        out.total_content_tokens_est = out.articles.iter().map(|a| a.content_tokens_est).sum();
        let failed = out.articles.iter().all(|a| a.status == FeedStatus::Error);
        Ok(answer::result(answer::article_summary(&out), &out, failed))
    }

    pub(super) async fn discover_feeds(&self, args: serde_json::Value) -> Result<CallToolResult> {
        let a: args::DiscoverArgs = args::parse("discover_feeds", args)?;
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
            format!(
                "{} advertised by {}.",
                crate::text::counted(out.feeds.len(), "feed"),
                a.site_url
            )
        };
        Ok(answer::result(summary, &out, false))
    }

    pub(super) async fn get_item(&self, args: serde_json::Value) -> Result<CallToolResult> {
        let a: GetItemArgs = args::parse("get_item", args)?;
        let budget = self.budget_of(a.max_response_tokens)?;
        let article = a.article.unwrap_or(false);
        if !article && (a.article_format.is_some() || a.article_offset.is_some()) {
            return Err(Error::usage(
                "`article_format` and `article_offset` are about the article `article: true` \
                 reads: give it too",
            ));
        }
        let at = Offsets {
            content: to_usize(a.offset).unwrap_or(0),
            article: to_usize(a.article_offset).unwrap_or(0),
        };
        let max_chars = to_usize(a.max_content_chars);
        let opts = ShowOptions {
            refresh: a.refresh.unwrap_or(false),
            render: RenderOptions {
                // With the article, the article is the body unless the feed's is asked for.
                format: a.content_format.unwrap_or(if article {
                    ContentFormat::None
                } else {
                    ContentFormat::Markdown
                }),
                max_content_chars: None,
            },
        };
        let deadline = self.call_deadline(a.timeout_seconds);
        let (mut out, feed_lineage) = ops::url_within(
            &self.ctx,
            deadline,
            &a.feed_url,
            ops::show_item_traced(&self.ctx, &a.feed_url, &a.id, opts),
        )
        .await?;
        if article {
            let mut article_opts = FetchRequest {
                deadline: Some(deadline),
                content: article_format(a.article_format),
                respect_robots: true,
                ..FetchRequest::default()
            }
            .article_options()?;
            if at.article > 0 {
                article_opts.cache = CacheMode::MaxAge(std::time::Duration::MAX);
            }
            let (article, warnings) =
                ops::read_item_article(&self.ctx, &out.item, &feed_lineage, &article_opts).await;
            out.item.article = Some(Box::new(article));
            out.warnings.extend(warnings);
        }
        if a.transcript.unwrap_or(false) {
            let mut topts = FetchRequest {
                deadline: Some(deadline),
                respect_robots: true,
                ..FetchRequest::default()
            }
            .article_options()?;
            topts.render.max_content_chars =
                Some(max_chars.unwrap_or(tools::TRANSCRIPT_CHARS_PER_ITEM * 4));
            let warnings =
                ops::read_item_transcript(&self.ctx, &mut out.item, &feed_lineage, &topts).await;
            out.warnings.extend(warnings);
        }
        ops::budget::skip_item(&mut out, at)?;
        if let Some(max) = max_chars {
            ops::budget::cap_item(&mut out, max, at);
        }
        let summary = format!(
            "Item {:?}{}.",
            out.item.title.as_deref().unwrap_or("(untitled)"),
            if out.from_cache { " (from cache)" } else { "" }
        );
        let overhead = estimate_tokens(&summary) + answer::SUMMARY_TOKENS;
        if let Err(e) = ops::budget::fit_item(&mut out, budget, overhead, at) {
            return Ok(self.error(&e, Some(&a.feed_url)));
        }
        let mut summary = summary;
        if out.item.next_offset.is_some() {
            summary.push_str(
                " Its body is cut: call again with `offset` = item.next_offset for the rest.",
            );
        }
        if out
            .item
            .article
            .as_ref()
            .is_some_and(|a| a.next_offset.is_some())
        {
            summary.push_str(
                " Its article is cut: call again with `article_offset` = item.article.next_offset for the rest.",
            );
        }
        Ok(answer::result(summary, &out, false))
    }

    pub(super) async fn ack_delivery(
        &self,
        args: serde_json::Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult> {
        let a: args::AckDeliveryArgs = args::parse("ack_delivery", args)?;
        let scope = super::reader_scope(context);
        let acked = ops::ack(
            &self.ctx,
            &[a.delivery_token],
            ops::Caller::Client(scope.as_ref()),
        )
        .await;
        crate::metrics::ack(match &acked {
            Ok(_) => "ok",
            Err(crate::error::Error::TokenRefused { .. }) => "refused",
            Err(_) => "error",
        });
        let out = acked?;
        Ok(answer::whole(
            format!(
                "{} recorded as seen; {} already were.",
                crate::text::counted(out.acknowledged, "item"),
                out.already_acknowledged
            ),
            &out,
        ))
    }

    pub(super) fn get_schema(&self, args: serde_json::Value) -> Result<CallToolResult> {
        let a: args::GetSchemaArgs = args::parse("get_schema", args)?;
        let (kind, name) = match a.tool {
            SchemaTool::FetchFeed => (SchemaKind::Fetch, "fetch_feed"),
            SchemaTool::FetchArticle => (SchemaKind::Article, "fetch_article"),
            SchemaTool::DiscoverFeeds => (SchemaKind::Discover, "discover_feeds"),
            SchemaTool::GetItem => (SchemaKind::Show, "get_item"),
            SchemaTool::AckDelivery => (SchemaKind::Ack, "ack_delivery"),
        };
        let mut schema = crate::output::schema(kind);
        crate::output::compact::optional_fields(&mut schema, true);
        let mut r = CallToolResult::success(vec![
            rmcp::model::ContentBlock::text(format!(
                "The JSON Schema of {name}'s result, every field described; fields that are \
                 null, false, 0 or empty are left out of results."
            )),
            rmcp::model::ContentBlock::text(schema.to_string()),
        ]);
        r.structured_content = Some(schema);
        Ok(r)
    }
}
