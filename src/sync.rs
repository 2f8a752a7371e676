//! A mutex's guard whatever a panicking holder left: every mutex of the crate guards state
//! that stays valid between its statements (counts, maps, timestamps), so a panic elsewhere
//! never makes the state unusable.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// The guard of `m`, poisoned or not.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
