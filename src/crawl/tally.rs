//! [`UrlTally`]: the distinct URLs of one kind the decider meets (out-links
//! of duplicates it drops, URLs it demotes as mirror copies), counted
//! against the store when the crawl ends (decision stage, after the
//! decider's commits). A URL is kept once by its 64-bit hash, in a
//! [`SpillMap`] set (the newest [`SEEN_MEM`] hashes in memory, the others in
//! sorted runs on disk with a Bloom filter of 1.25 bytes per hash in
//! memory), so a tally's memory does not grow with the crawl; the URLs
//! themselves wait in an unlinked file in the crawl's `index/` directory.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

use crate::hash::feature_hash;
use crate::spillmap::SpillMap;

/// URL hashes a tally keeps in memory before it writes them to a run.
const SEEN_MEM: usize = 1 << 14;

/// Distinct URLs, hashed into a set in bounded memory, written out in full
/// (see the module docs).
#[derive(Debug)]
pub(super) struct UrlTally {
    seen: SpillMap<u64, ()>,
    out: BufWriter<File>,
    dir: PathBuf,
    #[cfg(test)]
    len: usize,
}

impl UrlTally {
    /// An empty tally whose URLs and runs of hashes go to unlinked files in
    /// `dir`.
    pub(super) fn new(dir: &Path) -> std::io::Result<UrlTally> {
        Self::with_memory(dir, SEEN_MEM)
    }

    /// [`UrlTally::new`] with at most `mem` hashes in memory.
    fn with_memory(dir: &Path, mem: usize) -> std::io::Result<UrlTally> {
        Ok(UrlTally {
            seen: SpillMap::spilling(dir, mem),
            out: BufWriter::with_capacity(64 << 10, tempfile::tempfile_in(dir)?),
            dir: dir.to_path_buf(),
            #[cfg(test)]
            len: 0,
        })
    }

    /// Adds `url`, unless it is already in (URLs hold no line breaks).
    pub(super) fn insert(&mut self, url: &str) -> std::io::Result<()> {
        let h = feature_hash(url.as_bytes());
        if self.seen.get(&h)?.is_none() {
            self.seen.insert(h, ())?;
            self.out.write_all(url.as_bytes())?;
            self.out.write_all(b"\n")?;
            #[cfg(test)]
            {
                self.len += 1;
            }
        }
        Ok(())
    }

    /// Distinct URLs added.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.len
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

    #[test]
    fn keeps_each_url_once_when_its_hashes_are_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        // Eight hashes in memory: the rest go to runs, which merge.
        let mut t = UrlTally::with_memory(dir.path(), 8).unwrap();
        // Each round adds every URL again and 50 new ones.
        for round in 0..3 {
            for i in 0..150 + 50 * round {
                t.insert(&format!("http://a/{i}")).unwrap();
            }
        }
        assert_eq!(t.len(), 250);
        let mut read = Vec::new();
        let n = t
            .count(
                |u| {
                    read.push(u.to_string());
                    Ok(true)
                },
                |e| e,
            )
            .unwrap();
        assert_eq!(n, 250);
        let want: Vec<String> = (0..250).map(|i| format!("http://a/{i}")).collect();
        assert_eq!(read, want);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
