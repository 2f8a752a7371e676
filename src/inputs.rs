//! Inputs: positional arguments, `-` (stdin), `--input FILE`, `--opml FILE`, MCP
//! arguments — merged, de-duplicated in order, and classified once before any I/O.

use std::path::PathBuf;

use quick_xml::Reader;
use quick_xml::events::Event;
use url::Url;

use crate::error::{Error, Result};

/// Where one requested feed comes from.
#[derive(Debug)]
pub enum Source {
    /// An http(s) URL, fetched through the gate.
    Http(Url),
    /// A local file (a path or a `file://` URL).
    File(PathBuf),
    /// An input that cannot be fetched; reported as its own error.
    Invalid(Error),
}

/// One requested feed: what the user gave, and where it comes from.
#[derive(Debug)]
pub struct Input {
    /// The feed as requested; errors and output name it this way.
    pub feed_url: String,
    /// Where it comes from.
    pub source: Source,
}

/// Classifies one input string.
pub fn classify(raw: &str) -> Input {
    let given = raw.trim();
    let shown = crate::redact::text(given).into_owned();
    let invalid = |reason: String, source: Option<url::ParseError>| Input {
        feed_url: shown.clone(),
        source: Source::Invalid(Error::InvalidUrl {
            input: shown.clone(),
            reason,
            source,
        }),
    };
    let has_scheme = given.split_once(':').is_some_and(|(s, _)| {
        s.len() > 1
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    if has_scheme {
        return match Url::parse(given) {
            Ok(url) => match url.scheme() {
                "http" | "https" => {
                    if url.host_str().is_none_or(str::is_empty) {
                        invalid("the URL has no host".into(), None)
                    } else {
                        Input {
                            // Named with its password masked everywhere it is echoed; the
                            // URL keeps it, for the client to send as Basic auth.
                            feed_url: crate::redact::url(&url),
                            source: Source::Http(url),
                        }
                    }
                }
                "file" => match url.to_file_path() {
                    Ok(path) => Input {
                        feed_url: given.to_owned(),
                        source: Source::File(path),
                    },
                    Err(()) => invalid("the file:// URL does not name a local path".into(), None),
                },
                other => invalid(format!("the scheme {other:?} is not one this reads"), None),
            },
            Err(e) => invalid(format!("{e}"), Some(e)),
        };
    }
    if given.is_empty() {
        return invalid("the input is empty".into(), None);
    }
    // Whether the file exists is not looked at here: where files may be read, reading it
    // says; where they may not (the MCP server), nothing may reveal it.
    Input {
        feed_url: given.to_owned(),
        source: Source::File(PathBuf::from(given)),
    }
}

/// Classifies a link a document gave us (an item's `url`, for its article): only an
/// absolute http(s) URL is followed; anything else (`file:`, `ftp:`, a path) is an
/// `INVALID_URL` saying which scheme and why, and nothing local is ever opened.
/// An item's page when the item has no link to follow (none, or one of a scheme that was
/// dropped from it, such as `javascript:` or `data:`): an `INVALID_URL` saying so.
pub fn no_link() -> Input {
    Input {
        feed_url: String::new(),
        source: Source::Invalid(Error::InvalidUrl {
            input: String::new(),
            reason: "the item has no link to read: none, or one that was not http(s)".into(),
            source: None,
        }),
    }
}

pub fn classify_link(link: &str) -> Input {
    let given = link.trim();
    let refuse = |reason: String, source: Option<url::ParseError>| Input {
        feed_url: given.to_owned(),
        source: Source::Invalid(Error::InvalidUrl {
            input: given.to_owned(),
            reason,
            source,
        }),
    };
    match Url::parse(given) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => classify(given),
        Ok(url) => refuse(
            format!(
                "the link's scheme {:?} is not followed: a link from a feed or a page is read only over http(s), never from a local path or another protocol",
                url.scheme()
            ),
            None,
        ),
        Err(e) => refuse(
            "not an absolute http(s) URL: a link from a feed or a page is read only over http(s), never as a local path".into(),
            Some(e),
        ),
    }
}

/// The error for an input that is neither an http(s) URL nor an existing file.
pub fn no_such_input(given: &str) -> Error {
    Error::InvalidUrl {
        input: given.to_owned(),
        reason: "not an http(s) URL and no such file (did you mean https://…?)".into(),
        source: None,
    }
}

/// Lines of a URL list: blank lines and `#` comments skipped.
pub fn list_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// Feed URLs (`xmlUrl`) of every outline of an OPML document, nested or not, in order.
pub fn opml_urls(text: &str) -> Result<Vec<String>> {
    let mut reader = Reader::from_str(text);
    reader.config_mut().check_end_names = false;
    reader.config_mut().allow_unmatched_ends = true;
    let mut urls = Vec::new();
    let mut saw_opml = false;
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => {
                let name = e.local_name().into_inner().to_ascii_lowercase();
                if name == "opml" {
                    saw_opml = true;
                }
                if name != "outline" {
                    continue;
                }
                let mut attrs = e.html_attributes();
                attrs.with_checks(false);
                for a in attrs.flatten() {
                    if a.key.into_inner().eq_ignore_ascii_case("xmlurl") {
                        let v = crate::text::unescape_attr(&a.value).trim().to_owned();
                        if !v.is_empty() {
                            urls.push(v);
                        }
                    }
                }
            }
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => {
                if urls.is_empty() {
                    return Err(Error::usage(format!(
                        "the OPML file is not readable XML: {e}"
                    )));
                }
                break;
            }
        }
    }
    if !saw_opml {
        return Err(Error::usage("the --opml file has no <opml> element"));
    }
    Ok(urls)
}

/// Merges raw inputs into classified, de-duplicated inputs, keeping first occurrences.
pub fn merge(raw: impl IntoIterator<Item = String>) -> Vec<Input> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for r in raw {
        let input = classify(&r);
        let key = match &input.source {
            Source::Http(u) => u.to_string(),
            Source::File(p) => format!(
                "file:{}",
                p.canonicalize().unwrap_or_else(|_| p.clone()).display()
            ),
            Source::Invalid(_) => format!("invalid:{}", input.feed_url),
        };
        if seen.insert(key) {
            out.push(input);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_27_a_documents_link_is_http_or_an_error_naming_its_scheme() {
        assert!(matches!(
            classify_link(" https://Example.com/a ").source,
            Source::Http(_)
        ));
        for (link, says) in [
            ("file:///home/me/secret.html", "\"file\""),
            ("FILE:///etc/passwd", "\"file\""),
            ("ftp://files.example/x", "\"ftp\""),
            ("javascript:alert(1)", "\"javascript\""),
            ("secret.html", "not an absolute"),
            ("/etc/passwd", "not an absolute"),
            ("", "not an absolute"),
        ] {
            let Source::Invalid(e) = classify_link(link).source else {
                panic!("{link} should be refused")
            };
            assert_eq!(e.code().as_str(), "INVALID_URL");
            let msg = e.to_string();
            assert!(
                msg.contains(says) && msg.contains("http(s)"),
                "{link}: {msg}"
            );
        }
    }

    #[test]
    fn inputs_are_classified() {
        assert!(matches!(
            classify("https://Example.com/feed").source,
            Source::Http(_)
        ));
        assert_eq!(
            classify("https://Example.com/feed").feed_url,
            "https://example.com/feed"
        );
        assert!(matches!(classify("Cargo.toml").source, Source::File(_)));
        // Not a URL: a path, whether it exists is for the reader to say.
        assert!(matches!(
            classify("example.com/feed").source,
            Source::File(_)
        ));
        for bad in [
            "ftp://x/y",
            "javascript:alert(1)",
            "http://",
            "http://exa mple.com/",
        ] {
            let i = classify(bad);
            let Source::Invalid(e) = i.source else {
                panic!("{bad} should be invalid")
            };
            assert_eq!(e.code().as_str(), "INVALID_URL", "{bad}");
        }
    }

    #[test]
    fn url_lists_skip_blanks_and_comments() {
        assert_eq!(list_lines("a\n\n # c\n b \n"), vec!["a", "b"]);
    }

    #[test]
    fn opml_outlines_are_collected_at_any_depth() {
        let opml = r#"<opml><body><outline text="g"><outline xmlUrl="https://a/1"/><outline xmlurl="https://a/2"></outline></outline><outline xmlUrl="https://a/3"/></body></opml>"#;
        assert_eq!(
            opml_urls(opml).unwrap(),
            vec!["https://a/1", "https://a/2", "https://a/3"]
        );
        assert!(opml_urls("<rss/>").is_err());
    }

    #[test]
    fn duplicates_are_dropped_in_order() {
        let merged = merge([
            "https://a.com/f".into(),
            "https://A.com/f".into(),
            "https://b.com/f".into(),
        ]);
        let urls: Vec<_> = merged.iter().map(|i| i.feed_url.as_str()).collect();
        assert_eq!(urls, vec!["https://a.com/f", "https://b.com/f"]);
    }
}
