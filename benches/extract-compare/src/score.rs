//! The article-extraction benchmark's own score (scrapinghub's `evaluate.py`, as the corpus
//! README states it): texts split into word tokens (lower-cased, punctuation dropped), the
//! multiset of 4-token shingles of each; per page tp/fp/fn over shingles; the corpus's
//! precision is the mean over pages with output, its recall the mean over pages with a truth,
//! F1 the harmonic mean of the two means.

use std::collections::HashMap;

/// Word tokens as `\w+` finds them (letters, digits, underscore), lower-cased.
pub fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The shingles of `tokens` with their counts (a text shorter than 4 tokens is one shingle).
fn shingles(tokens: &[String]) -> HashMap<&[String], usize> {
    let mut out = HashMap::new();
    if tokens.is_empty() {
        return out;
    }
    let n = 4.min(tokens.len());
    for w in tokens.windows(n) {
        *out.entry(w).or_default() += 1;
    }
    out
}

/// One page's true positives, false positives and false negatives over shingles, normalized
/// to sum to 1 (so long pages weigh no more than short ones).
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    tp: f64,
    fp: f64,
    fn_: f64,
}

impl Counts {
    /// Scores `got` against `want` (both token lists).
    pub fn of(got: &[String], want: &[String]) -> Counts {
        let (g, w) = (shingles(got), shingles(want));
        let (mut tp, mut fp, mut fn_) = (0.0, 0.0, 0.0);
        for (k, &gc) in &g {
            let wc = w.get(k).copied().unwrap_or(0);
            tp += gc.min(wc) as f64;
            fp += gc.saturating_sub(wc) as f64;
        }
        for (k, &wc) in &w {
            fn_ += wc.saturating_sub(g.get(k).copied().unwrap_or(0)) as f64;
        }
        let s = tp + fp + fn_;
        if s > 0.0 {
            (tp, fp, fn_) = (tp / s, fp / s, fn_ / s);
        }
        Counts { tp, fp, fn_ }
    }

    /// Precision, when the page had output.
    pub fn precision(&self) -> Option<f64> {
        if self.fp == 0.0 && self.fn_ == 0.0 {
            return Some(1.0);
        }
        (self.tp + self.fp > 0.0).then(|| self.tp / (self.tp + self.fp))
    }

    /// Recall, when the page had a truth.
    pub fn recall(&self) -> Option<f64> {
        if self.fp == 0.0 && self.fn_ == 0.0 {
            return Some(1.0);
        }
        (self.tp + self.fn_ > 0.0).then(|| self.tp / (self.tp + self.fn_))
    }

    /// This page's own F1 (for finding the pages where candidates differ).
    pub fn f1(&self) -> f64 {
        let (p, r) = (
            self.precision().unwrap_or(0.0),
            self.recall().unwrap_or(0.0),
        );
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }
}

/// The corpus's F1, precision and recall from its pages' counts.
pub fn corpus(pages: &[Counts]) -> (f64, f64, f64) {
    let mean = |v: Vec<f64>| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    let p = mean(pages.iter().filter_map(Counts::precision).collect());
    let r = mean(pages.iter().filter_map(Counts::recall).collect());
    let f = if p + r == 0.0 {
        0.0
    } else {
        2.0 * p * r / (p + r)
    };
    (f, p, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_texts_score_one_and_an_empty_output_has_no_precision() {
        let t = tokens("The quick brown fox jumps over the lazy dog.");
        let c = Counts::of(&t, &t);
        assert_eq!((c.precision(), c.recall()), (Some(1.0), Some(1.0)));
        let e = Counts::of(&[], &t);
        assert_eq!((e.precision(), e.recall()), (None, Some(0.0)));
    }
}
