//! Configuration: TOML in, validated [`Settings`] out.
//!
//! This sits before every pipeline stage: each stage takes its own section of
//! [`Settings`]. Loading has two stages, as in ripgrep's low/high arguments:
//!
//! 1. **Raw**: `config/default.toml` (embedded at build time, the single source
//!    of defaults) is laid under the user's file and the `--set` overrides, key
//!    by key. A key the defaults do not have, or a value of the wrong TOML type,
//!    is an error naming where it came from. The merged table is deserialized
//!    into `Raw*` structs (serde, `deny_unknown_fields`).
//! 2. **Validated**: [`RawConfig::validate`] checks every range and turns raw
//!    values into typed settings (durations, enums, compiled regexes).
//!
//! ```
//! let s = simcrawl::config::Settings::load(None, &["simhash.k=4".to_string()]).unwrap();
//! assert_eq!(s.simhash.k, 4);
//! ```
//!
//! The files follow the two stages: `raw` (the `Raw*` structs) and
//! `layers` (merging TOML layers and `--set` overrides) for the first,
//! `sections` (the typed settings of each section) and `validate` (one
//! check per section) for the second; `hosts` holds the per-host rules
//! (`[[hosts]]`: patterns, matching, [`HostRuleCache`]); `error` holds
//! [`ConfigError`].

mod effective;
mod error;
mod hosts;
mod layers;
mod raw;
mod sections;
mod validate;

use std::path::Path;

pub use effective::Effective;
pub use error::ConfigError;
pub use hosts::{HostPattern, HostRule, HostRuleCache, HostRules};
pub use raw::{
    RawCanon, RawConfig, RawCrawl, RawDedup, RawFeatures, RawFetch, RawFocus, RawFrontier, RawHostRule, RawIndex,
    RawMirror, RawOutput, RawPoliteness, RawRecrawl, RawSimhash, RawSitemaps, RawSketch, RawStore,
};
pub use sections::{
    CanonProfile, CanonSettings, CrawlSettings, DedupPolicy, DedupSettings, FeatureSettings, FetchSettings,
    FocusSettings, FrontierSettings, IndexDesign, IndexSettings, MirrorSettings, OutputSettings, PolitenessSettings,
    RecrawlSettings, Scope, SimhashSettings, SitemapSettings, SketchSettings, StoreBackend, StoreSettings, Verify,
};

/// The top-level key of the per-host rules (`[[hosts]]`).
pub const HOSTS: &str = "hosts";

/// The file in a crawl directory that holds the settings the crawl ran with.
pub const SETTINGS_FILE: &str = "settings.toml";

/// The embedded defaults: `config/default.toml`.
pub const DEFAULT_TOML: &str = include_str!("../../config/default.toml");
/// The embedded test-web settings: `config/test.toml` (politeness delays off).
pub const TEST_TOML: &str = include_str!("../../config/test.toml");

/// The validated configuration every stage reads.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct Settings {
    pub crawl: CrawlSettings,
    pub politeness: PolitenessSettings,
    pub fetch: FetchSettings,
    pub canon: CanonSettings,
    pub features: FeatureSettings,
    pub simhash: SimhashSettings,
    pub index: IndexSettings,
    pub dedup: DedupSettings,
    pub frontier: FrontierSettings,
    pub focus: FocusSettings,
    pub mirror: MirrorSettings,
    pub sketch: SketchSettings,
    pub output: OutputSettings,
    pub sitemaps: SitemapSettings,
    pub store: StoreSettings,
    /// `[[hosts]]`: per-host rules, first match wins (none by default).
    pub hosts: HostRules,
    pub recrawl: RecrawlSettings,
    /// The merged TOML these settings were validated from.
    pub effective: Effective,
}

impl Default for Settings {
    /// The embedded `config/default.toml`.
    fn default() -> Self {
        Settings::from_layers(&[], &[]).expect("embedded config/default.toml is valid")
    }
}

impl Settings {
    /// Load the defaults, then `path` (if any), then `overrides`
    /// (`SECTION.KEY=VALUE` strings, as given to `--set`), and validate.
    pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<Settings, ConfigError> {
        match path {
            None => Settings::from_layers(&[], overrides),
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|source| ConfigError::Read {
                    path: p.to_path_buf(),
                    source,
                })?;
                let mut s = Settings::from_layers(&[(p.display().to_string(), &text)], overrides)?;
                let base = p.parent().unwrap_or(Path::new("."));
                for ex in &mut s.focus.examples {
                    if ex.is_relative() {
                        *ex = base.join(&*ex);
                    }
                }
                // The effective table names the files as the crawl opens them.
                let examples = s.focus.examples.iter().map(|p| p.display().to_string()).collect();
                s.effective.set_strings("focus", "examples", examples);
                Ok(s)
            }
        }
    }

    /// The built-in test web's settings (`config/test.toml` over the defaults), plus overrides.
    pub fn test_web(overrides: &[String]) -> Result<Settings, ConfigError> {
        Settings::from_layers(&[("config/test.toml".to_string(), TEST_TOML)], overrides)
    }

    /// Merge TOML texts (each with its origin for error messages) over the
    /// embedded defaults, apply overrides, and validate.
    pub fn from_layers(layers: &[(String, &str)], overrides: &[String]) -> Result<Settings, ConfigError> {
        let (raw, origins, table) = layers::merge(layers, overrides)?;
        let mut s = raw.validate(&origins)?;
        s.effective = Effective::new(table, origins);
        Ok(s)
    }

    /// The settings a crawl in `dir` ran with (`DIR/settings.toml`, written
    /// when it started), or the defaults for a crawl directory without one.
    pub fn of_crawl(dir: &Path) -> Result<Settings, ConfigError> {
        let path = dir.join(SETTINGS_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => Settings::from_layers(&[(path.display().to_string(), &text)], &[]),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Settings::default()),
            Err(source) => Err(ConfigError::Read { path, source }),
        }
    }
}

#[cfg(test)]
mod tests;
