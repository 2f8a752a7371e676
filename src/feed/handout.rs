//! Items handed out in document order by whichever reader read them (the one reader of a
//! document, or a stretch of it read on another thread): counted, capped at
//! [`MAX_ITEMS`].

use url::Url;

use super::{MAX_ITEMS, RawItem};

/// The items as they are handed out, in document order: counted, capped, and the site
/// address of a local file's items.
pub(super) struct Handout<'s> {
    sink: &'s mut dyn FnMut(RawItem),
    pub(super) handed: usize,
    pub(super) beyond_cap: usize,
    pub(super) empty_items: usize,
    /// A local file has no request URL: its items resolve against the site's address,
    /// the channel's link read before the first item with data.
    pub(super) site: Option<Option<Url>>,
    /// Whether the last item read was a document's top-level Atom `<entry>`.
    pub(super) root_entry: bool,
}

impl<'s> Handout<'s> {
    pub(super) fn new(sink: &'s mut dyn FnMut(RawItem)) -> Handout<'s> {
        Handout {
            sink,
            handed: 0,
            beyond_cap: 0,
            empty_items: 0,
            site: None,
            root_entry: false,
        }
    }

    /// Whether the cap on items is reached (later ones are only counted).
    pub(super) fn full(&self) -> bool {
        self.handed + self.empty_items >= MAX_ITEMS
    }

    /// Counts one item beyond the cap.
    pub(super) fn beyond(&mut self) {
        self.beyond_cap += 1;
    }

    /// Hands out one item read (`None`: an item element with no data).
    pub(super) fn give(&mut self, it: Option<RawItem>) {
        let Some(it) = it else {
            self.empty_items += 1;
            return;
        };
        self.handed += 1;
        (self.sink)(it);
    }
}
