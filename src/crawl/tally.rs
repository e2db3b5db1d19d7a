//! [`UrlTally`]: the distinct URLs of one kind the decider meets (out-links
//! of duplicates it drops, URLs it demotes as mirror copies), counted
//! against the store when the crawl ends (decision stage, after the
//! decider's commits). A URL costs one 64-bit hash in memory, to keep it
//! once; the URLs themselves wait in an unlinked file in the crawl's
//! `index/` directory.

use std::collections::HashSet;
use std::fs::File;
use std::hash::BuildHasherDefault;
use std::io::{BufRead, BufReader, BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

use crate::hash::{feature_hash, PreHashed};

/// Distinct URLs, hashed in memory, written out in full (see the module docs).
#[derive(Debug)]
pub(super) struct UrlTally {
    seen: HashSet<u64, BuildHasherDefault<PreHashed>>,
    out: BufWriter<File>,
    dir: PathBuf,
}

impl UrlTally {
    /// An empty tally whose URLs go to an unlinked file in `dir`.
    pub(super) fn new(dir: &Path) -> std::io::Result<UrlTally> {
        Ok(UrlTally {
            seen: HashSet::default(),
            out: BufWriter::with_capacity(64 << 10, tempfile::tempfile_in(dir)?),
            dir: dir.to_path_buf(),
        })
    }

    /// Adds `url`, unless it is already in (URLs hold no line breaks).
    pub(super) fn insert(&mut self, url: &str) -> std::io::Result<()> {
        if self.seen.insert(feature_hash(url.as_bytes())) {
            self.out.write_all(url.as_bytes())?;
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Distinct URLs added.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.seen.len()
    }

    /// The directory of the tally's file (for error messages).
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Counts the URLs for which `keep` is true, reading them back in the
    /// order they were added; `io` turns a read error of the file into `E`.
    pub(super) fn count<E>(
        &mut self,
        mut keep: impl FnMut(&str) -> Result<bool, E>,
        io: impl Fn(std::io::Error) -> E,
    ) -> Result<u64, E> {
        self.out.flush().map_err(&io)?;
        let mut file = self.out.get_ref().try_clone().map_err(&io)?;
        file.rewind().map_err(&io)?;
        let mut n = 0;
        for line in BufReader::with_capacity(64 << 10, file).lines() {
            if keep(&line.map_err(&io)?)? {
                n += 1;
            }
        }
        self.out.get_mut().seek(std::io::SeekFrom::End(0)).map_err(&io)?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_each_url_once_and_reads_them_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = UrlTally::new(dir.path()).unwrap();
        for u in ["http://a/1", "http://a/2", "http://a/1", "http://b/x?y=1", "http://a/2"] {
            t.insert(u).unwrap();
        }
        assert_eq!(t.len(), 3);
        let mut read = Vec::new();
        let n = t
            .count(
                |u| {
                    read.push(u.to_string());
                    Ok(u.starts_with("http://a/"))
                },
                |e| e,
            )
            .unwrap();
        assert_eq!(n, 2);
        assert_eq!(read, ["http://a/1", "http://a/2", "http://b/x?y=1"]);
        // Adding after a count appends; a second count reads everything.
        t.insert("http://c/").unwrap();
        assert_eq!(t.count(|_| Ok(true), |e| e).unwrap(), 4);
        // The file is unlinked: nothing is left in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
