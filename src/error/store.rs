//! Why the shared host-state store could not do what was asked: a typed source of
//! [`super::Error::HostStore`], defined here so the contract depends on nothing above it.

use std::time::Duration;

/// Why a store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file of the store could not be read or written.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The store's file it was done to.
        path: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// A stored entry could not be read as host state.
    #[error("the stored state of {host} is unreadable: {source}")]
    Corrupt {
        /// The host (or the entry's file name).
        host: String,
        /// Why the entry is not host state.
        #[source]
        source: serde_json::Error,
    },
    /// The store did not answer in time.
    #[error("the host-state store did not answer within {0:?}")]
    Timeout(Duration),
    /// A Redis command failed.
    #[error("{action}: {source}")]
    Redis {
        /// What was being done.
        action: &'static str,
        /// What the Redis client said (a connection, protocol or script failure).
        #[source]
        source: ::redis::RedisError,
    },
    /// Other workers kept changing a host's state faster than this one could update it.
    #[error("the state of {0} changed under every try to update it")]
    Contended(String),
}
