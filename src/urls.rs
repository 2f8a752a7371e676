//! URL resolution, in one place for parsing, rendering and discovery.
//!
//! Every scheme decision reads the URL as a browser would (the `url` crate implements the
//! WHATWG parser, which strips tabs, newlines and leading control characters), never the
//! raw string: `java&#x09;script:` is `javascript:`.

use url::Url;

/// Schemes a rendered link or image may carry.
pub(crate) const CONTENT_SCHEMES: [&str; 3] = ["http", "https", "mailto"];

/// Schemes that run code or smuggle documents when clicked; never an item's address.
const ACTIVE_SCHEMES: [&str; 3] = ["javascript", "vbscript", "data"];

/// Resolves `href` against `base` (RFC 3986) for the contract's address fields (`url`,
/// `site_url`, enclosures): an absolute URL is kept as written, as feed readers do; a
/// relative one is resolved, or kept as is without a base; empty values and active schemes
/// (`javascript:`, `vbscript:`, `data:`) are dropped.
pub(crate) fn resolve(href: &str, base: Option<&Url>) -> Option<String> {
    let href = href.trim();
    if href.is_empty() {
        return None;
    }
    match Url::parse(href) {
        Ok(u) if ACTIVE_SCHEMES.contains(&u.scheme()) => None,
        Ok(_) => Some(href.to_owned()),
        Err(_) => match base {
            Some(b) => b
                .join(href)
                .ok()
                .filter(|u| !ACTIVE_SCHEMES.contains(&u.scheme()))
                .map(Into::into),
            None => Some(href.to_owned()),
        },
    }
}

/// A link or image destination for rendered content: resolved against `base`, and kept
/// only when its scheme is `http`, `https` or `mailto`. A relative URL with no base to
/// resolve it against is dropped (what it points at is unknowable).
pub(crate) fn content_link(href: &str, base: Option<&Url>) -> Option<Url> {
    let url = match Url::parse(href) {
        Ok(u) => u,
        Err(url::ParseError::RelativeUrlWithoutBase) => base?.join(href).ok()?,
        Err(_) => return None,
    };
    CONTENT_SCHEMES.contains(&url.scheme()).then_some(url)
}

/// An absolute `http`/`https` address for `href` (trimmed, resolved against `base`): what a
/// page's canonical URL, image or author link may be.
pub(crate) fn http_link(href: &str, base: Option<&Url>) -> Option<String> {
    content_link(href.trim(), base)
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .map(String::from)
}

/// [`content_link`] as the string a renderer writes. A path-absolute reference made only of
/// letters, digits, `-._~/` and no dot segment (`/images/a.png`, the common case) against
/// an http(s) base is the base's origin followed by the path, as the `url` crate resolves
/// it (tested against it), without parsing it again; anything else goes to the crate.
pub(crate) fn content_link_string(href: &str, base: Option<&Url>) -> Option<String> {
    if let Some(base) = base
        && matches!(base.scheme(), "http" | "https")
        && base.has_host()
        && is_plain_absolute_path(href)
    {
        let origin = &base[..url::Position::BeforePath];
        let mut out = String::with_capacity(origin.len() + href.len());
        out.push_str(origin);
        out.push_str(href);
        return Some(out);
    }
    content_link(href, base).map(String::from)
}

/// `/` then letters, digits and `-._~/`, with no `.` or `..` segment and not `//`.
fn is_plain_absolute_path(href: &str) -> bool {
    let b = href.as_bytes();
    b.first() == Some(&b'/')
        && b.get(1) != Some(&b'/')
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'/'))
        && !href.split('/').any(|seg| seg == "." || seg == "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        Url::parse("https://example.com/blog/post/").unwrap()
    }

    #[test]
    fn obfuscated_script_schemes_are_seen_through() {
        for href in [
            "javascript:alert(1)",
            "JaVaScRiPt:alert(1)",
            "java\tscript:alert(1)",
            "java\nscript:alert(1)",
            "java\rscript:alert(1)",
            "\u{1}javascript:alert(1)",
            " javascript:alert(1)",
            "vbscript:x",
            "data:text/html;base64,PHNjcmlwdD4=",
        ] {
            assert_eq!(resolve(href, Some(&base())), None, "{href:?}");
            assert_eq!(content_link(href, Some(&base())), None, "{href:?}");
        }
    }

    #[test]
    fn the_plain_path_shortcut_resolves_as_the_url_crate_does() {
        let bases = [
            "https://example.com/blog/post/",
            "http://EXAMPLE.com:80/a?q=1#f",
            "https://user:pw@example.com:8443/x/y",
            "http://[::1]:8080/feed.xml",
            "https://xn--bcher-kva.example/p",
            "http://127.0.0.1/",
        ];
        let hrefs = [
            "/images/chart-1.png",
            "/",
            "/a//b/",
            "/~user/x_y-z.tar.gz",
            "/a.b/c..d/.e",
            "/./x",
            "/a/../x",
            "/a/.",
            "//cdn.example.org/i.png",
            "/a b",
            "/a?x=1",
            "/a#f",
            "/%41",
            "images/x.png",
            "/a\\b",
        ];
        let mut shortcut = 0;
        for base in bases {
            let base = Url::parse(base).unwrap();
            for href in hrefs {
                let want = content_link(href, Some(&base)).map(String::from);
                assert_eq!(
                    content_link_string(href, Some(&base)),
                    want,
                    "{href} on {base}"
                );
                shortcut += usize::from(is_plain_absolute_path(href));
            }
        }
        assert_eq!(shortcut, bases.len() * 5);
        assert_eq!(content_link_string("/x", None), None);
        let ftp = Url::parse("ftp://example.com/").unwrap();
        assert_eq!(content_link_string("/x", Some(&ftp)), None);
    }

    #[test]
    fn content_links_are_http_https_or_mailto_and_absolute() {
        let b = base();
        assert_eq!(
            content_link("../x y", Some(&b)).unwrap().as_str(),
            "https://example.com/blog/x%20y"
        );
        assert_eq!(
            content_link("mailto:a@b.c", Some(&b)).unwrap().as_str(),
            "mailto:a@b.c"
        );
        assert_eq!(content_link("ftp://h/x", Some(&b)), None);
        assert_eq!(content_link("/x", None), None);
        assert_eq!(
            content_link("//cdn.example.org/i.png", Some(&b))
                .unwrap()
                .as_str(),
            "https://cdn.example.org/i.png"
        );
    }

    #[test]
    fn addresses_keep_what_the_feed_wrote() {
        assert_eq!(
            resolve("HTTP://Example.com", None).as_deref(),
            Some("HTTP://Example.com")
        );
        assert_eq!(
            resolve("p/1", Some(&base())).as_deref(),
            Some("https://example.com/blog/post/p/1")
        );
        assert_eq!(resolve("p/1", None).as_deref(), Some("p/1"));
        assert_eq!(resolve("  ", None), None);
    }
}
