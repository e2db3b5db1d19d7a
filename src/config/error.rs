//! Why a configuration could not be loaded.

use std::path::PathBuf;

/// Why a configuration could not be loaded. Every variant names where the bad
/// value came from (a file path, `--set`, or the embedded defaults) and the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("{origin}: invalid TOML: {message}")]
    Parse {
        /// Where the text came from.
        origin: String,
        /// The parser's message (with line and column).
        message: String,
    },
    /// A section or key that simcrawl does not know.
    #[error("{origin}: unknown key `{key}`; allowed here: {allowed}")]
    UnknownKey {
        /// Where the key came from.
        origin: String,
        /// `section.key`.
        key: String,
        /// The keys allowed at that level.
        allowed: String,
    },
    /// A value of the wrong TOML type.
    #[error("{origin}: `{key}` must be {expected}, got {got}")]
    Type {
        /// Where the value came from.
        origin: String,
        /// `section.key`.
        key: String,
        /// The expected type.
        expected: &'static str,
        /// The type found.
        got: &'static str,
    },
    /// A value outside its allowed range or set.
    #[error("{origin}: `{key}` = {value} is invalid; allowed: {allowed}")]
    Invalid {
        /// Where the value came from.
        origin: String,
        /// `section.key`.
        key: String,
        /// The value, as written.
        value: String,
        /// What is allowed.
        allowed: String,
    },
    /// A `--set` argument that is not `SECTION.KEY=VALUE`.
    #[error("--set {arg}: expected SECTION.KEY=VALUE")]
    BadOverride {
        /// The argument.
        arg: String,
    },
}
