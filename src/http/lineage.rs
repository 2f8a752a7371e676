//! What led to a request: the requests made before it on behalf of the same call, oldest
//! first — a feed's hops before the pages its items link to, a page's hops before the
//! robots.txt read for the last of them. It travels with every request
//! ([`super::GetRequest::led_by`]) so that the one place deciding what a hop carries
//! (`site::plan`) sees the whole chain, never a request alone: a plain-http step after any
//! https one is a downgrade, however it was reached (a redirect, a link, a robots.txt).

use url::Url;

/// The steps that led to a request (empty: the caller's own request, such as a URL the
/// user gave).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lineage {
    /// The URLs requested before, oldest first (never holding credentials).
    steps: Vec<Url>,
    /// A step left out of `steps` was https (a cached body records only where its chain
    /// began and ended, and whether any hop between was https).
    https_between: bool,
}

impl Lineage {
    /// Nothing led to the request: it is the caller's own.
    pub fn none() -> Lineage {
        Lineage::default()
    }

    /// The lineage of a body read from a cache: requested as `first`, answered from
    /// `last`, with an https hop between them when `https_between`.
    pub fn cached(first: Option<Url>, last: Option<Url>, https_between: bool) -> Lineage {
        let mut l = Lineage {
            steps: Vec::new(),
            https_between,
        };
        for u in first.into_iter().chain(last) {
            l.push(u);
        }
        l
    }

    /// Whether nothing led to the request.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty() && !self.https_between
    }

    /// This lineage with `url` as its newest step.
    pub fn then(&self, url: &Url) -> Lineage {
        let mut l = self.clone();
        l.push(url.clone());
        l
    }

    /// Adds `url` (its credentials set aside) as the newest step.
    pub(crate) fn push(&mut self, url: Url) {
        let url = if url.username().is_empty() && url.password().is_none() {
            url
        } else {
            crate::redact::split_userinfo(&url).0
        };
        self.steps.push(url);
    }

    /// Whether any step was https: a plain-http request after it is a downgrade.
    pub fn went_https(&self) -> bool {
        self.https_between || self.steps.iter().any(|u| u.scheme() == "https")
    }

    /// The steps, oldest first.
    pub fn steps(&self) -> &[Url] {
        &self.steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn a_lineage_knows_whether_any_step_was_https() {
        assert!(!Lineage::none().went_https());
        assert!(Lineage::none().is_empty());
        let plain = Lineage::none().then(&u("http://a.test/feed"));
        assert!(!plain.went_https() && !plain.is_empty());
        let secure = plain
            .then(&u("https://b.test/x"))
            .then(&u("http://c.test/y"));
        assert!(secure.went_https());
        assert_eq!(secure.steps().len(), 3);
        let cached = Lineage::cached(
            Some(u("http://a.test/feed")),
            Some(u("http://c.test/feed")),
            true,
        );
        assert!(cached.went_https());
        assert!(Lineage::cached(None, None, true).went_https());
        assert!(!Lineage::cached(None, None, true).is_empty());
        let with_creds = Lineage::none().then(&u("https://me:pw@a.test/"));
        assert_eq!(with_creds.steps()[0].as_str(), "https://a.test/");
    }
}
