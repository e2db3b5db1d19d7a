//! [`RedisMarker`]: how a crawl directory names its store in Redis.

use super::StoreError;

/// What a crawl directory records about its Redis store, in
/// `DIR/store/redis-crawl`: the crawl name on the first line, the nodes
/// (comma-separated `host:port`) on the second. The sled store refuses a
/// directory that holds it, and `--resume` and the report tools find the
/// crawl's keys through it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisMarker {
    /// The crawl name (the key namespace).
    pub name: String,
    /// The nodes the crawl connected to.
    pub nodes: Vec<String>,
}

impl RedisMarker {
    /// The marker's file name in the store directory.
    pub const FILE: &'static str = "redis-crawl";

    /// The marker in store directory `dir`, if any.
    pub fn read(dir: &std::path::Path) -> Result<Option<RedisMarker>, StoreError> {
        let path = dir.join(Self::FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(StoreError::Open {
                    path,
                    message: e.to_string(),
                })
            }
        };
        let mut lines = text.lines();
        let name = lines.next().unwrap_or("").trim().to_string();
        let nodes: Vec<String> = lines
            .next()
            .unwrap_or("")
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if name.is_empty() || nodes.is_empty() {
            return Err(StoreError::Corrupt {
                key: path.display().to_string(),
                reason: "expected the crawl name, then the nodes, one line each".into(),
            });
        }
        Ok(Some(RedisMarker { name, nodes }))
    }

    /// Write the marker into store directory `dir` (created when missing).
    pub fn write(&self, dir: &std::path::Path) -> Result<(), StoreError> {
        let io = |e: std::io::Error| StoreError::Open {
            path: dir.to_path_buf(),
            message: e.to_string(),
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        std::fs::write(
            dir.join(Self::FILE),
            format!("{}\n{}\n", self.name, self.nodes.join(",")),
        )
        .map_err(io)
    }
}
