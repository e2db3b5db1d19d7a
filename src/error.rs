//! Errors of the library (beside every stage). Per-URL outcomes (404,
//! disallowed, too large, redirect loop) are data recorded in the crawl log,
//! not errors: an [`Error`] means a whole operation could not be done.

use std::path::PathBuf;

/// Everything that can make a simcrawl operation fail.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration is invalid (bad usage: exit code 2).
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// Input given by the user is invalid (bad usage: exit code 2).
    #[error("{0}")]
    InvalidInput(String),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The crawl store failed (I/O, corrupt value, wrong format version).
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The frontier could not be built or updated.
    #[error(transparent)]
    Frontier(#[from] crate::frontier::FrontierError),
    /// WARC output failed (a file could not be written).
    #[error(transparent)]
    Warc(#[from] crate::warc::WarcError),
    /// A failure inside simcrawl (a worker thread panicked, a value could
    /// not be serialized): not the user's input (exit code 1).
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<crate::crawllog::LogError> for Error {
    fn from(e: crate::crawllog::LogError) -> Self {
        match e {
            crate::crawllog::LogError::Io { path, source } => Error::Io { path, source },
            bad => Error::InvalidInput(bad.to_string()),
        }
    }
}

impl From<crate::dedup::ReplicaError> for Error {
    /// The shared decision log's failures are the store's; a damaged entry
    /// is a corrupt store value; the sketch index's, a file's.
    fn from(e: crate::dedup::ReplicaError) -> Self {
        use crate::dedup::ReplicaError as R;
        match e {
            R::Log(e) => Error::Store(e),
            R::Io(source) => Error::Io {
                path: PathBuf::from("sketches"),
                source,
            },
            bad => Error::Store(crate::store::StoreError::Corrupt {
                key: "decision log".into(),
                reason: bad.to_string(),
            }),
        }
    }
}

impl From<crate::metrics::MetricsError> for Error {
    /// An address the metrics endpoint cannot listen on is bad input.
    fn from(e: crate::metrics::MetricsError) -> Self {
        Error::InvalidInput(e.to_string())
    }
}

impl From<crate::fetch::FetchError> for Error {
    fn from(e: crate::fetch::FetchError) -> Self {
        Error::InvalidInput(e.to_string())
    }
}

impl From<crate::focus::FocusError> for Error {
    fn from(e: crate::focus::FocusError) -> Self {
        Error::InvalidInput(e.to_string())
    }
}

impl Error {
    /// Whether this error is the user's input (exit code 2) rather than a
    /// failure of simcrawl or its environment (exit code 1).
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::Config(_) | Error::InvalidInput(_))
    }

    /// An [`Error::Internal`] for a thread of simcrawl that panicked.
    pub fn thread_panicked(thread: &str) -> Self {
        Error::Internal(format!("the {thread} thread panicked"))
    }

    /// An [`Error::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

impl From<crate::index::IndexError> for Error {
    /// An unreadable fingerprint file is an [`Error::Io`]; a malformed one or
    /// an option out of range is bad input ([`Error::InvalidInput`], exit 2).
    fn from(e: crate::index::IndexError) -> Self {
        match e {
            crate::index::IndexError::Read { path, source } => Error::Io { path, source },
            other => Error::InvalidInput(other.to_string()),
        }
    }
}

/// `Result` with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn internal_failures_are_not_usage_errors() {
        let e = Error::thread_panicked("decider");
        assert!(!e.is_usage(), "exit code 1, not 2");
        assert_eq!(e.to_string(), "internal error: the decider thread panicked");
        assert!(!Error::Internal("x".into()).is_usage());
        assert!(Error::InvalidInput("x".into()).is_usage());
    }

    #[test]
    fn index_errors_keep_their_message_and_exit_code() {
        use crate::index::IndexError;
        let bad = Error::from(IndexError::BadLine {
            path: "q.txt".into(),
            line: 2,
            got: "12345".into(),
        });
        assert!(bad.is_usage());
        assert_eq!(bad.to_string(), "q.txt:2: expected 16 hex digits, got \"12345\"");
        assert!(Error::from(IndexError::BadK(40)).is_usage());
        let io = Error::from(IndexError::Read {
            path: "f.txt".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        });
        assert!(matches!(io, Error::Io { .. }) && !io.is_usage());
        assert!(io.to_string().starts_with("f.txt: "), "{io}");
    }
}
