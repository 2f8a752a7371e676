//! A document's own entities (its internal DTD subset), expanded within caps.

use crate::text::resolve_entity;

/// Longest replacement text of one entity declared in a document's DTD.
const MAX_ENTITY_BYTES: usize = 4 * 1024;
/// Most replacement text all of a document's entity references may add.
const MAX_EXPANSION_BYTES: usize = 1 << 20;

/// The general entities a document declares in its internal DTD subset. External
/// entities (`SYSTEM`, `PUBLIC`) are never read; every expansion counts against a
/// per-entity and a per-document cap, so nested declarations (billion laughs) cost nothing.
#[derive(Debug, Default)]
pub(super) struct Entities {
    declared: std::collections::HashMap<String, String>,
    spent: usize,
}

impl Entities {
    /// The replacement text of `&name;`: the five XML entities, then the document's own,
    /// then HTML's; `None` when unknown or over the document's budget.
    pub(super) fn expand(&mut self, name: &str) -> Option<std::borrow::Cow<'static, str>> {
        if name.starts_with('#') || matches!(name, "amp" | "lt" | "gt" | "quot" | "apos") {
            return resolve_entity(name);
        }
        if let Some(v) = self.declared.get(name) {
            if self.spent + v.len() > MAX_EXPANSION_BYTES {
                return None;
            }
            self.spent += v.len();
            return Some(std::borrow::Cow::Owned(v.clone()));
        }
        resolve_entity(name)
    }

    /// Whether the document declared no entity of its own.
    pub(super) fn is_empty(&self) -> bool {
        self.declared.is_empty()
    }

    /// Reads `<!ENTITY name "value">` declarations from a DOCTYPE's text.
    pub(super) fn declare_from(&mut self, doctype: &str) {
        let mut rest = doctype;
        while let Some(at) = rest.find("<!ENTITY") {
            rest = &rest[at + 8..];
            let decl = rest.trim_start();
            // Parameter entities (`%`) are for the DTD itself.
            if decl.starts_with('%') {
                continue;
            }
            let name_end = decl.find(|c: char| c.is_whitespace()).unwrap_or(decl.len());
            let name = &decl[..name_end];
            let after = decl[name_end..].trim_start();
            let Some(quote) = after.chars().next().filter(|c| *c == '"' || *c == '\'') else {
                continue; // SYSTEM or PUBLIC: external, never fetched
            };
            let Some(len) = after[1..].find(quote) else {
                break;
            };
            let raw = &after[1..1 + len];
            if name.is_empty() || self.declared.contains_key(name) {
                continue;
            }
            if let Some(value) = self.replacement(raw) {
                self.declared.insert(name.to_owned(), value);
            }
        }
    }

    /// An entity value with its references expanded, or `None` when it grows past the cap.
    fn replacement(&mut self, raw: &str) -> Option<String> {
        let mut out = String::new();
        let mut rest = raw;
        while let Some(amp) = rest.find('&') {
            out.push_str(&rest[..amp]);
            let after = &rest[amp + 1..];
            match after.find(';') {
                Some(end) if end > 0 && !after[..end].contains(['&', ' ']) => {
                    let name = &after[..end];
                    match self.expand(name) {
                        Some(v) => out.push_str(&v),
                        None => {
                            out.push('&');
                            out.push_str(name);
                            out.push(';');
                        }
                    }
                    rest = &after[end + 1..];
                }
                _ => {
                    out.push('&');
                    rest = after;
                }
            }
            if out.len() > MAX_ENTITY_BYTES {
                return None;
            }
        }
        out.push_str(rest);
        (out.len() <= MAX_ENTITY_BYTES).then_some(out)
    }
}
