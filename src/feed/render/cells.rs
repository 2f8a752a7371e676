//! What a table holds while it renders: its finished cells, and the writer's output set
//! aside while a cell renders into its own buffer. The writer keeps one; `table.rs` fills it
//! and lays it out.

/// Widest `colspan` honoured.
pub(super) const MAX_COLSPAN: usize = 64;

pub(super) struct Cell {
    pub(super) text: String,
    pub(super) span: usize,
}

/// The writer's output and line state, set aside while a cell renders into its own buffer.
pub(super) struct Saved {
    pub(super) out: String,
    pub(super) line_start: bool,
    pub(super) space: bool,
    pub(super) glued: bool,
    pub(super) brk: u8,
    pub(super) committed: u8,
    pub(super) hard: bool,
}

/// The table being rendered.
#[derive(Default)]
pub(super) struct Table {
    pub(super) rows: Vec<Vec<Cell>>,
    pub(super) saved: Option<Saved>,
    pub(super) bytes: usize,
}

impl Table {
    pub(super) fn in_cell(&self) -> bool {
        self.saved.is_some()
    }

    /// Bytes held aside: finished cells, and the output set aside while a cell renders.
    pub(super) fn bytes(&self) -> usize {
        self.bytes + self.saved.as_ref().map_or(0, |s| s.out.len())
    }
}
