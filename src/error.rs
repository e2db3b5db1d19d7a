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
}
