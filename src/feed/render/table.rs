//! Tables: cells rendered on their own, then laid out when the table closes (a pipe table
//! in markdown, aligned columns in text), so `colspan` pads and every row has every column.

use super::cells::{Cell, MAX_COLSPAN, Saved};
use super::writer::{Open, Writer};

impl<'h> Writer<'_, 'h> {
    /// Whether the innermost open table is the one being laid out (not one nested in it).
    pub(super) fn laying_out_table(&self) -> bool {
        self.stack
            .iter()
            .rev()
            .find(|(n, _)| n == "table")
            .is_some_and(|(_, o)| *o == Open::Table)
    }

    pub(super) fn open_row(&mut self) {
        if let Some(t) = self.table.as_mut() {
            t.rows.push(Vec::new());
        }
        self.push(std::borrow::Cow::Borrowed("tr"), Open::Row);
    }

    pub(super) fn open_cell(&mut self, colspan: Option<&str>) {
        let span = colspan
            .and_then(|s| s.trim().parse::<usize>().ok())
            .unwrap_or(1)
            .clamp(1, MAX_COLSPAN);
        let Some(t) = self.table.as_mut() else {
            return;
        };
        if t.rows.is_empty() {
            t.rows.push(Vec::new());
        }
        if let Some(row) = t.rows.last_mut() {
            row.push(Cell {
                text: String::new(),
                span,
            });
        }
        t.saved = Some(Saved {
            out: std::mem::take(&mut self.out),
            line_start: std::mem::replace(&mut self.line_start, false),
            space: std::mem::replace(&mut self.space, false),
            glued: std::mem::replace(&mut self.glued, true),
            brk: std::mem::replace(&mut self.brk, 0),
            committed: std::mem::replace(&mut self.committed, 0),
            hard: std::mem::replace(&mut self.hard, false),
        });
    }

    pub(super) fn close_cell(&mut self) {
        let Some(t) = self.table.as_mut() else {
            return;
        };
        let Some(saved) = t.saved.take() else {
            return;
        };
        let text = std::mem::replace(&mut self.out, saved.out);
        self.line_start = saved.line_start;
        self.space = saved.space;
        self.glued = saved.glued;
        self.brk = saved.brk;
        self.committed = saved.committed;
        self.hard = saved.hard;
        let text = text.trim();
        t.bytes += text.len();
        if let Some(cell) = t.rows.last_mut().and_then(|r| r.last_mut()) {
            cell.text = text.to_owned();
        }
    }

    pub(super) fn close_table(&mut self) {
        let Some(table) = self.table.take() else {
            return;
        };
        let rows: Vec<Vec<Cell>> = table.rows.into_iter().filter(|r| !r.is_empty()).collect();
        let columns = rows
            .iter()
            .map(|r| r.iter().map(|c| c.span).sum::<usize>())
            .max()
            .unwrap_or(0);
        if columns == 0 {
            self.block(2);
            return;
        }
        let grid: Vec<Vec<&str>> = rows
            .iter()
            .map(|r| {
                let mut line: Vec<&str> = Vec::with_capacity(columns);
                for c in r {
                    line.push(&c.text);
                    line.extend(std::iter::repeat_n("", c.span - 1));
                }
                line.resize(columns, "");
                line
            })
            .collect();
        let lines = if self.md() {
            pipe_table(&grid)
        } else {
            aligned_columns(&grid, columns)
        };
        self.block(2);
        for line in lines {
            self.flush();
            self.out.push_str(&line);
            self.block(1);
        }
        self.block(2);
    }
}

fn pipe_table(grid: &[Vec<&str>]) -> Vec<String> {
    let mut lines = Vec::with_capacity(grid.len() + 1);
    for (i, row) in grid.iter().enumerate() {
        lines.push(format!("| {} |", row.join(" | ")));
        if i == 0 {
            lines.push(format!("|{}", " --- |".repeat(row.len())));
        }
    }
    lines
}

fn aligned_columns(grid: &[Vec<&str>], columns: usize) -> Vec<String> {
    let mut widths = vec![0usize; columns];
    for row in grid {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    grid.iter()
        .map(|row| {
            let mut line = String::new();
            for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
                if i > 0 {
                    line.push_str(" | ");
                }
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', w - cell.chars().count()));
            }
            line.trim_end().to_owned()
        })
        .collect()
}
