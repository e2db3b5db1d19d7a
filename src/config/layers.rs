//! Stage 1 of loading: TOML layering. The embedded defaults, the user's
//! file and the `--set` overrides are merged key by key; a key the defaults
//! do not have, or a value of the wrong TOML type, is an error naming where
//! it came from. `[[hosts]]` (per-host rules) is the one array of tables:
//! the defaults have none, and a layer that has some replaces the list of
//! the layers below it.

use std::collections::HashMap;

use toml::{Table, Value};

use super::{ConfigError, RawConfig, DEFAULT_TOML};

/// The embedded defaults with `layers` (TOML texts, each with its origin
/// for error messages) and then `overrides` (`SECTION.KEY=VALUE`) laid over
/// them, deserialized; with the origin of every key that a layer set.
pub(super) fn merge(
    layers: &[(String, &str)],
    overrides: &[String],
) -> Result<(RawConfig, HashMap<String, String>, Table), ConfigError> {
    let mut merged = parse_table("config/default.toml (embedded)", DEFAULT_TOML)?;
    let mut origins: HashMap<String, String> = HashMap::new();
    for (origin, text) in layers {
        let table = parse_table(origin, text)?;
        merge_layer(&mut merged, table, origin, &mut origins)?;
    }
    for arg in overrides {
        let (key, value) = parse_override(arg)?;
        let (section, name) = key
            .split_once('.')
            .ok_or_else(|| ConfigError::BadOverride { arg: arg.clone() })?;
        let mut sect = Table::new();
        sect.insert(name.to_string(), value);
        let mut layer = Table::new();
        layer.insert(section.to_string(), Value::Table(sect));
        merge_layer(&mut merged, layer, "--set", &mut origins)?;
    }
    let raw: RawConfig = Value::Table(merged.clone())
        .try_into()
        .map_err(|e: toml::de::Error| ConfigError::Parse {
            origin: "merged configuration".into(),
            message: e.to_string(),
        })?;
    Ok((raw, origins, merged))
}

fn parse_table(origin: &str, text: &str) -> Result<Table, ConfigError> {
    text.parse::<Table>().map_err(|e| ConfigError::Parse {
        origin: origin.to_string(),
        message: e.to_string().trim().to_string(),
    })
}

/// `SECTION.KEY=VALUE`; VALUE is TOML (`3`, `true`, `"x"`, `["a"]`) or else a bare string.
fn parse_override(arg: &str) -> Result<(String, Value), ConfigError> {
    let (key, value) = arg
        .split_once('=')
        .ok_or_else(|| ConfigError::BadOverride { arg: arg.to_string() })?;
    let key = key.trim();
    if key.split('.').count() != 2 || key.split('.').any(str::is_empty) {
        return Err(ConfigError::BadOverride { arg: arg.to_string() });
    }
    let value = value.trim();
    let parsed = format!("v = {value}")
        .parse::<Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(value.to_string()));
    Ok((key.to_string(), parsed))
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a number",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date-time",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

fn allowed_keys(t: &Table) -> String {
    let mut keys: Vec<&str> = t.keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys.join(", ")
}

/// Lay `layer` over `base`: only known sections and keys, same TOML types
/// (an integer is accepted where a float is expected).
fn merge_layer(
    base: &mut Table,
    layer: Table,
    origin: &str,
    origins: &mut HashMap<String, String>,
) -> Result<(), ConfigError> {
    let mut sections = allowed_keys(base);
    if !base.contains_key(super::HOSTS) {
        sections.push_str(", hosts");
    }
    for (section, value) in layer {
        if section == super::HOSTS {
            // `[[hosts]]` rules: a layer's list replaces the one below it.
            let value = super::hosts::check_layer(value, origin)?;
            origins.insert(section.clone(), origin.to_string());
            base.insert(section, value);
            continue;
        }
        let Some(Value::Table(base_sect)) = base.get_mut(&section) else {
            return Err(ConfigError::UnknownKey {
                origin: origin.to_string(),
                key: section,
                allowed: sections,
            });
        };
        let Value::Table(sect) = value else {
            return Err(ConfigError::Type {
                origin: origin.to_string(),
                key: section,
                expected: "a table",
                got: type_name(&value),
            });
        };
        for (key, value) in sect {
            let full = format!("{section}.{key}");
            let Some(old) = base_sect.get(&key) else {
                return Err(ConfigError::UnknownKey {
                    origin: origin.to_string(),
                    key: full,
                    allowed: allowed_keys(base_sect),
                });
            };
            let value = match (old, value) {
                (Value::Float(_), Value::Integer(i)) => Value::Float(i as f64),
                (old, value) if std::mem::discriminant(old) == std::mem::discriminant(&value) => value,
                (old, value) => {
                    return Err(ConfigError::Type {
                        origin: origin.to_string(),
                        key: full,
                        expected: type_name(old),
                        got: type_name(&value),
                    })
                }
            };
            if let Value::Array(items) = &value {
                if let Some(bad) = items.iter().find(|v| !v.is_str()) {
                    return Err(ConfigError::Type {
                        origin: origin.to_string(),
                        key: full,
                        expected: "an array of strings",
                        got: type_name(bad),
                    });
                }
            }
            origins.insert(full, origin.to_string());
            base_sect.insert(key, value);
        }
    }
    Ok(())
}
