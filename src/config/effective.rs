//! The effective configuration: the merged TOML table the settings were
//! validated from, and where each key that is not a default came from. A
//! crawl writes it to `DIR/settings.toml` ([`Effective::to_toml`]);
//! `simcrawl config` prints it over `config/default.toml`'s comments
//! ([`Effective::annotated`]), with the `[[hosts]]` rules, if any, at the end.

use std::collections::HashMap;

use toml::{Table, Value};

use super::DEFAULT_TOML;

/// The merged configuration table and the origin of each overridden key.
#[derive(Debug, Clone, Default)]
pub struct Effective {
    table: Table,
    /// `section.key` → the file or `--set` that set it last.
    origins: HashMap<String, String>,
}

impl Effective {
    pub(super) fn new(table: Table, origins: HashMap<String, String>) -> Self {
        Effective { table, origins }
    }

    /// Replace a string-array value (paths resolved after loading).
    pub(super) fn set_strings(&mut self, section: &str, key: &str, values: Vec<String>) {
        if let Some(Value::Table(t)) = self.table.get_mut(section) {
            if t.contains_key(key) {
                t.insert(
                    key.to_string(),
                    Value::Array(values.into_iter().map(Value::String).collect()),
                );
            }
        }
    }

    /// The value of `section.key`.
    pub fn get(&self, section: &str, key: &str) -> Option<&Value> {
        self.table.get(section)?.as_table()?.get(key)
    }

    /// Every key, as a TOML document that loads back to the same settings.
    pub fn to_toml(&self) -> String {
        let mut out = String::from("# The settings this crawl ran with (simcrawl writes this file).\n");
        out.push_str(&toml::to_string(&self.table).unwrap_or_default());
        out
    }

    /// `config/default.toml` with its comments, each key showing its
    /// effective value, and `# set by ORIGIN (default: VALUE)` after a key
    /// that is not the default.
    pub fn annotated(&self) -> String {
        let mut out = String::with_capacity(DEFAULT_TOML.len() + 512);
        let mut section = String::new();
        for line in DEFAULT_TOML.lines() {
            let trimmed = line.trim();
            if let Some(name) = trimmed.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
                section = name.to_string();
            }
            let assignment = (!trimmed.starts_with('#'))
                .then(|| trimmed.split_once(" = "))
                .flatten()
                .filter(|(k, _)| {
                    k.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                });
            match assignment.and_then(|(key, default)| Some((key, default, self.get(&section, key)?))) {
                Some((key, default, value)) => {
                    out.push_str(&format!("{key} = {value}"));
                    if let Some(origin) = self.origins.get(&format!("{section}.{key}")) {
                        out.push_str(&format!("  # set by {origin} (default: {default})"));
                    }
                }
                None => out.push_str(line),
            }
            out.push('\n');
        }
        if let Some(hosts) = self.table.get(super::HOSTS) {
            let origin = self.origins.get(super::HOSTS).map_or("", String::as_str);
            out.push_str(&format!("\n# Per-host rules, first match wins (set by {origin}).\n"));
            for rule in hosts.as_array().into_iter().flatten().filter_map(Value::as_table) {
                // `pattern` first; values inline (`headers = { From = "…" }`).
                out.push_str("[[hosts]]\n");
                let keys =
                    std::iter::once("pattern").chain(rule.keys().map(String::as_str).filter(|k| *k != "pattern"));
                for key in keys {
                    if let Some(value) = rule.get(key) {
                        out.push_str(&format!("{key} = {value}\n"));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Settings;

    #[test]
    fn settings_toml_loads_back_to_the_same_settings() {
        let s = Settings::from_layers(&[], &["simhash.k=4".into(), "crawl.user_agent=\"mybot\"".into()]).unwrap();
        let text = s.effective.to_toml();
        let back = Settings::from_layers(&[("settings.toml".into(), &text)], &[]).unwrap();
        assert_eq!(back.simhash.k, 4);
        assert_eq!(back.crawl.user_agent, "mybot");
        assert_eq!(back.effective.to_toml(), text);
    }

    #[test]
    fn annotated_keeps_the_comments_and_marks_overrides() {
        let s = Settings::from_layers(&[], &["simhash.k=5".into()]).unwrap();
        let text = s.effective.annotated();
        assert!(text.contains("k = 5  # set by --set (default: 3)"), "{text}");
        assert_eq!(
            text.lines().filter(|l| l.starts_with('#')).count(),
            crate::config::DEFAULT_TOML
                .lines()
                .filter(|l| l.starts_with('#'))
                .count()
        );
        // Loading the annotated text gives the same settings.
        let back = Settings::from_layers(&[("annotated".into(), &text)], &[]).unwrap();
        assert_eq!(back.simhash.k, 5);
    }
}
