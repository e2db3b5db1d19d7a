//! TEMPORARY placeholder for `robots::Robots` (owned by the `canon` branch)
//! with exactly its API, so politeness compiles and is testable before that
//! branch lands. Deliberately minimal: `User-agent` groups, prefix `Disallow`
//! / `Allow` (longest match wins), `Crawl-delay`. Delete on merge.

use url::Url;

/// Parsed robots.txt (placeholder).
#[derive(Debug, Clone, Default)]
pub struct Robots {
    groups: Vec<Group>,
    everything: Option<bool>,
}

#[derive(Debug, Clone, Default)]
struct Group {
    agents: Vec<String>,
    rules: Vec<(bool, String)>,
    crawl_delay: Option<f64>,
}

impl Robots {
    /// Parse at most `max_bytes` of `body`.
    pub fn parse(body: &[u8], max_bytes: usize) -> Robots {
        let text = String::from_utf8_lossy(&body[..body.len().min(max_bytes)]);
        let mut groups: Vec<Group> = Vec::new();
        let mut in_agents = false;
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            let Some((k, v)) = line.split_once(':') else { continue };
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
            match k.as_str() {
                "user-agent" => {
                    if !in_agents {
                        groups.push(Group::default());
                    }
                    in_agents = true;
                    if let Some(g) = groups.last_mut() {
                        g.agents.push(v.to_ascii_lowercase());
                    }
                }
                "allow" | "disallow" | "crawl-delay" => {
                    in_agents = false;
                    let Some(g) = groups.last_mut() else { continue };
                    if k == "crawl-delay" {
                        g.crawl_delay = v.parse().ok();
                    } else if !v.is_empty() {
                        g.rules.push((k == "allow", v.to_string()));
                    }
                }
                _ => {}
            }
        }
        Robots {
            groups,
            everything: None,
        }
    }

    /// Everything allowed.
    pub fn allow_all() -> Robots {
        Robots {
            groups: Vec::new(),
            everything: Some(true),
        }
    }

    /// Everything disallowed.
    pub fn disallow_all() -> Robots {
        Robots {
            groups: Vec::new(),
            everything: Some(false),
        }
    }

    fn group(&self, agent: &str) -> Option<&Group> {
        let agent = agent.to_ascii_lowercase();
        self.groups
            .iter()
            .find(|g| g.agents.contains(&agent))
            .or_else(|| self.groups.iter().find(|g| g.agents.iter().any(|a| a == "*")))
    }

    /// Whether `agent` may fetch `url`.
    pub fn is_allowed(&self, agent: &str, url: &Url) -> bool {
        if let Some(all) = self.everything {
            return all;
        }
        let Some(g) = self.group(agent) else { return true };
        let path = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        g.rules
            .iter()
            .filter(|(_, p)| path.starts_with(p.as_str()))
            .max_by_key(|(allow, p)| (p.len(), *allow))
            .is_none_or(|(allow, _)| *allow)
    }

    /// The Crawl-delay for `agent`, in seconds.
    pub fn crawl_delay(&self, agent: &str) -> Option<f64> {
        self.group(agent).and_then(|g| g.crawl_delay)
    }
}
