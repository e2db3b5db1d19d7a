//! Confirming near-duplicate candidates (pipeline: in the dedup decision,
//! after the simhash index lookup): the sketch each new page keeps
//! ([`Sketch`], by `[dedup] verify`) and the [`SketchIndex`] that holds them,
//! which files content sketches under their smallest shingle hashes to find the
//! candidates simhash misses, and picks the confirmed original.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::cache::SketchCache;
use super::content::SideMemo;
use super::slots::SlotTable;
use crate::features::{HostTemplate, TemplateLearner};
use crate::spillmap::SpillMap;

use crate::model::NearMatch;
use crate::model::PageId;

/// The sketch a near-duplicate candidate is confirmed with
/// (`[dedup] verify`): both pages of a comparison have the same kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Sketch {
    /// Broder min-hash (`verify = "minhash"`).
    MinHash(super::MinHashSketch),
    /// Bottom-k content shingles (`verify = "shingles"`).
    Content(super::ContentSketch),
}

impl Sketch {
    /// Estimated shingle resemblance of the two pages (0 for sketches of
    /// different kinds).
    pub fn resemblance(&self, other: &Sketch) -> f64 {
        match (self, other) {
            (Sketch::MinHash(a), Sketch::MinHash(b)) => a.resemblance(b),
            (Sketch::Content(a), Sketch::Content(b)) => a.resemblance(b),
            _ => 0.0,
        }
    }

    /// The sketch as bytes: a kind tag, then the sketch's own encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        encode(self)
    }

    /// A sketch from [`Sketch::to_bytes`]; `None` when malformed.
    pub fn from_bytes(bytes: &[u8]) -> Option<Sketch> {
        decode(bytes)
    }
}

/// Verification sketches of the new pages, with their fingerprints, and a
/// candidate index over the smallest shingle hashes of content sketches.
///
/// Simhash finds candidates within k bits. Pages whose shingles mostly
/// agree can still lie further apart: a short page whose title differs, a
/// copy inside translated navigation. Two content sketches whose sets have
/// resemblance r share their smallest hash with probability r, so every
/// page is also filed under a few of its smallest shingle hashes (its band
/// keys: the first ones whose bucket is not full, outside its template's
/// blocks), and the pages sharing one are candidates too, as are the pages
/// of the full buckets of its two smallest hashes (pages that are mostly
/// one long shared section are copies of each other and share no other
/// key). Near duplicates are filed like new pages, so a copy of a copy
/// finds the copy it is closest to. Every candidate,
/// from either source, is confirmed by its resemblance; with a template
/// learner ([`SketchIndex::with_templates`]), on the text outside both
/// pages' templates as they are at the comparison, so a page sketched
/// before its site's or section's template settled, or under another
/// section's template, is compared on the same text as its copy.
///
/// Memory: a sketch is about half a kilobyte (its block tags up to a few
/// more), and only the few candidates
/// of a page are ever read again, so a crawl keeps them, each with its
/// page's fingerprint, in a spill file ([`SketchIndex::spilling`]:
/// appended, read back by offset, the last 1 024 read kept
/// decoded: a page of a section whose pages are alike is the candidate of
/// many), and where each page's sketch is (8 bytes per page id) in a table
/// whose older part is in a second unlinked file ([`SlotTable::spilling`]).
/// Its band keys go to a [`SpillMap`] of a key's first page, and the
/// other pages of a key to a second one, keyed by the band
/// key and the page's place in its bucket: in each, the newest
/// [`BAND_MEM_MAX`] entries in memory, the others in runs on disk beside
/// the spill file with 1.25 bytes of Bloom filter each in memory.
/// [`SketchIndex::new`] keeps everything in memory.
#[derive(Debug, Default)]
pub struct SketchIndex {
    /// Page → where its sketch and fingerprint are ([`Slot::pack`]).
    pages: SlotTable,
    /// Band key → the first page filed under it (when its id fits 32 bits):
    /// 8 bytes per key, most keys' only page.
    first: SpillMap<u32, u32>,
    /// ([`more_key`] of a band key and a place in its bucket) → the other
    /// pages filed under it, in the order filed (at most [`BUCKET_MAX`]
    /// with the first), and pages whose id does not fit 32 bits.
    more: SpillMap<u64, PageId>,
    sketches: Sketches,
    /// The crawl's template learner: with it, content sketches tagged with
    /// their blocks are compared on the text outside both pages' templates
    /// as they are at the comparison ([`ContentSketch::resemblance_without`]).
    ///
    /// [`ContentSketch::resemblance_without`]: super::ContentSketch::resemblance_without
    templates: Option<Arc<TemplateLearner>>,
    /// The sketches read from the spill file most recently, decoded.
    cache: parking_lot::Mutex<SketchCache>,
}

/// A sketch of the index: borrowed from memory, or read from the spill file
/// (shared with the cache).
enum Got<'a> {
    Held(&'a Sketch),
    Read(Arc<(Sketch, u64)>),
}

impl std::ops::Deref for Got<'_> {
    type Target = Sketch;
    fn deref(&self) -> &Sketch {
        match self {
            Got::Held(s) => s,
            Got::Read(v) => &v.0,
        }
    }
}

/// Where a recorded page's sketch and fingerprint are in [`Sketches`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    at: u64,
    len: u32,
}

/// Bits of a packed slot's length: a spilled record of at most 16 MiB, at
/// an offset below 2⁴⁰ (a terabyte).
const LEN_BITS: u32 = 24;

impl Slot {
    /// The slot in one nonzero word (what [`SlotTable`] keeps): `at + 1`
    /// in memory (`len` 0), else the offset above the length (at least 9).
    fn pack(self) -> std::io::Result<u64> {
        if self.len == 0 {
            return Ok(self.at + 1);
        }
        if self.len >= 1 << LEN_BITS || self.at >= 1 << (64 - LEN_BITS) {
            return Err(std::io::Error::other(format!(
                "sketch spill file past its limits (a record of {} bytes at offset {})",
                self.len, self.at
            )));
        }
        Ok(self.at << LEN_BITS | u64::from(self.len))
    }

    fn unpack(v: u64, held: bool) -> Slot {
        if held {
            Slot { at: v - 1, len: 0 }
        } else {
            Slot {
                at: v >> LEN_BITS,
                len: (v & ((1 << LEN_BITS) - 1)) as u32,
            }
        }
    }
}

/// Where the sketches are.
#[derive(Debug)]
enum Sketches {
    /// In memory, each with its page's fingerprint; a slot's `at` is the index.
    Held(Vec<(Sketch, u64)>),
    /// In a spill file, each record the page's fingerprint (8 bytes, little
    /// endian) and the sketch ([`Sketch::to_bytes`]); a slot's `at` and
    /// `len` are its bytes.
    Spilled {
        file: std::fs::File,
        path: PathBuf,
        end: u64,
    },
}

impl Default for Sketches {
    fn default() -> Self {
        Sketches::Held(Vec::new())
    }
}

impl Drop for Sketches {
    /// A spill file holds one run's sketches only: it goes with the index.
    fn drop(&mut self) {
        if let Sketches::Spilled { path, .. } = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Tags of a spilled sketch's kind.
const CONTENT: u8 = 0;
const MINHASH: u8 = 1;
const CONTENT_TAGGED: u8 = 2;

fn encode(sketch: &Sketch) -> Vec<u8> {
    let (tag, bytes) = match sketch {
        Sketch::Content(c) if c.is_tagged() => (CONTENT_TAGGED, c.to_tagged_bytes()),
        Sketch::Content(c) => (CONTENT, c.to_bytes()),
        Sketch::MinHash(m) => (MINHASH, m.to_bytes()),
    };
    let mut out = Vec::with_capacity(1 + bytes.len());
    out.push(tag);
    out.extend_from_slice(&bytes);
    out
}

fn decode(bytes: &[u8]) -> Option<Sketch> {
    let (&tag, rest) = bytes.split_first()?;
    match tag {
        CONTENT => super::ContentSketch::from_bytes(rest).map(Sketch::Content),
        MINHASH => super::MinHashSketch::from_bytes(rest).map(Sketch::MinHash),
        CONTENT_TAGGED => super::ContentSketch::from_tagged_bytes(rest).map(Sketch::Content),
        _ => None,
    }
}

/// The resemblance a candidate needs to be confirmed (`[dedup]
/// verify_threshold`, `short_page_threshold`, `short_page_shingles`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// For two content sketches of at least `short_below` shingles each, and
    /// for any other sketches.
    pub long: f64,
    /// For two content sketches either of which has fewer than
    /// `short_below` shingles.
    pub short: f64,
    /// Shingles below which a content sketch's page is short (0: none is).
    pub short_below: u32,
}

impl Thresholds {
    /// `threshold` whatever the pages' length.
    pub fn uniform(threshold: f64) -> Self {
        Thresholds {
            long: threshold,
            short: threshold,
            short_below: 0,
        }
    }

    /// The thresholds `[dedup]` sets.
    pub fn from_settings(s: &crate::config::DedupSettings) -> Self {
        Thresholds {
            long: s.verify_threshold,
            short: s.short_page_threshold,
            short_below: s.short_page_shingles,
        }
    }

    /// The threshold for a comparison of these two sketches.
    pub fn between(&self, a: &Sketch, b: &Sketch) -> f64 {
        match (a, b) {
            (Sketch::Content(a), Sketch::Content(b)) if a.shingles().min(b.shingles()) < self.short_below => self.short,
            _ => self.long,
        }
    }
}

impl From<f64> for Thresholds {
    fn from(t: f64) -> Self {
        Thresholds::uniform(t)
    }
}

/// Pages kept per band key: the first ones filed (the originals). A key
/// shared by more pages is a phrase of many pages, not evidence of a copy.
const BUCKET_MAX: usize = 32;

/// Smallest hashes of a sketch whose full buckets are searched for its
/// copies too ([`SketchIndex::confirm`]): at most this many times
/// [`BUCKET_MAX`] extra comparisons.
const FULL_BUCKET_LOOKUPS: usize = 4;

/// Smallest hashes of a sketch looked at for its band keys: a page is
/// filed under (and looks up) the first [`BAND_KEYS`] of them whose bucket
/// is not full. Deep enough that a page of a family of a few hundred
/// pages around one long shared section (the iterators of an API
/// reference), whose smallest hashes are mostly the section's and full,
/// still reaches hashes of its own part, which only its copies share.
///
/// [`BAND_KEYS`]: super::content::BAND_KEYS
const BAND_SCAN: usize = 64;

/// Band keys a spilling index holds in memory (about 0.8 MB); the others
/// are in runs beside its sketch file ([`SpillMap`]).
const BAND_MEM_MAX: usize = 1 << 16;

/// The key of the page at `place` (from 0) among the pages filed under band
/// key `key` after its first.
fn more_key(key: u32, place: usize) -> u64 {
    u64::from(key) << 8 | place as u64
}

// A place in a bucket fits the 8 bits `more_key` gives it.
const _: () = assert!(BUCKET_MAX <= 1 << 8);

impl SketchIndex {
    /// An empty index that keeps the sketches in memory.
    pub fn new() -> Self {
        SketchIndex::default()
    }

    /// An empty index that keeps the sketches in the file `path` (created,
    /// or emptied: it holds one crawl run's sketches, rebuilt at each start).
    pub fn spilling(path: &Path) -> std::io::Result<Self> {
        Self::spilling_with(path, BAND_MEM_MAX)
    }

    /// [`SketchIndex::spilling`] with `band_mem_max` band keys in memory.
    fn spilling_with(path: &Path, band_mem_max: usize) -> std::io::Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        Ok(SketchIndex {
            pages: SlotTable::spilling(dir)?,
            first: SpillMap::spilling(dir, band_mem_max),
            more: SpillMap::spilling(dir, band_mem_max),
            sketches: Sketches::Spilled {
                file,
                path: path.to_path_buf(),
                end: 0,
            },
            ..SketchIndex::default()
        })
    }

    /// Compare tagged content sketches on the text outside the templates
    /// `templates` holds at the time of each comparison (see
    /// [`SketchIndex::confirm`]).
    pub fn with_templates(mut self, templates: Option<Arc<TemplateLearner>>) -> Self {
        self.templates = templates;
        self
    }

    /// The template learner the comparisons consult, if any.
    pub fn templates(&self) -> Option<Arc<TemplateLearner>> {
        self.templates.clone()
    }

    /// Whether comparisons leave out the blocks of each tagged sketch's
    /// template at the time ([`SketchIndex::with_templates`]): a sketch
    /// taken before blocks joined its template is compared as one taken
    /// after.
    pub fn cuts_templates(&self) -> bool {
        self.templates.is_some()
    }

    /// The template of a sketch's page now, when comparisons consult templates.
    fn template_of(&self, sketch: &Sketch) -> Option<Arc<HostTemplate>> {
        match sketch {
            Sketch::Content(c) => self.templates.as_ref()?.template_shared(c.template_key()?),
            Sketch::MinHash(_) => None,
        }
    }

    /// The spill file, if the sketches are in one.
    pub fn spill_path(&self) -> Option<&Path> {
        match &self.sketches {
            Sketches::Spilled { path, .. } => Some(path),
            _ => None,
        }
    }

    fn io_error(what: String) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, what)
    }

    /// Keep a sketch and its page's fingerprint; its slot.
    fn put(&mut self, sketch: Sketch, simhash: u64) -> std::io::Result<Slot> {
        match &mut self.sketches {
            Sketches::Held(v) => {
                v.push((sketch, simhash));
                Ok(Slot {
                    at: v.len() as u64 - 1,
                    len: 0,
                })
            }
            Sketches::Spilled { file, end, .. } => {
                use std::os::unix::fs::FileExt;
                let mut bytes = simhash.to_le_bytes().to_vec();
                bytes.extend_from_slice(&encode(&sketch));
                let slot = Slot {
                    at: *end,
                    len: u32::try_from(bytes.len()).map_err(|_| Self::io_error("a sketch past 4 GiB".into()))?,
                };
                file.write_all_at(&bytes, *end)?;
                *end += bytes.len() as u64;
                Ok(slot)
            }
        }
    }

    /// The slot of a recorded page.
    fn slot(&self, page: PageId) -> Option<Slot> {
        let held = matches!(self.sketches, Sketches::Held(_));
        self.pages.get(page).map(|v| Slot::unpack(v, held))
    }

    /// The sketch in `slot` and its page's fingerprint: from memory, from
    /// the cache of recently read ones, or read from the spill file and
    /// cached.
    fn get(&self, slot: Slot) -> std::io::Result<(Got<'_>, u64)> {
        match &self.sketches {
            Sketches::Held(v) => v
                .get(slot.at as usize)
                .map(|(s, h)| (Got::Held(s), *h))
                .ok_or_else(|| Self::io_error(format!("no sketch at {}", slot.at))),
            Sketches::Spilled { file, path, .. } => {
                use std::os::unix::fs::FileExt;
                if let Some(v) = self.cache.lock().get(slot.at) {
                    let h = v.1;
                    return Ok((Got::Read(v), h));
                }
                let mut bytes = vec![0; slot.len as usize];
                file.read_exact_at(&mut bytes, slot.at)?;
                let damaged = || Self::io_error(format!("{}: damaged sketch at offset {}", path.display(), slot.at));
                let (head, rest) = bytes.split_first_chunk::<8>().ok_or_else(damaged)?;
                let v = Arc::new((decode(rest).ok_or_else(damaged)?, u64::from_le_bytes(*head)));
                self.cache.lock().insert(slot.at, v.clone());
                let h = v.1;
                Ok((Got::Read(v), h))
            }
        }
    }

    /// The band keys of a page, from its [`SketchIndex::scan_keys`]: the
    /// first [`BAND_KEYS`] of its [`BAND_SCAN`] smallest shingle hashes
    /// whose bucket is not full — outside the blocks of its template now
    /// when the index consults templates. A full bucket is a phrase of many pages (a shared
    /// reference section, a licence), and the blocks of a page's template
    /// are its site's chrome: neither tells its copies apart.
    ///
    /// [`BAND_KEYS`]: super::content::BAND_KEYS
    fn band_keys(&self, scanned: &[u32]) -> std::io::Result<Vec<u32>> {
        let mut keys = Vec::with_capacity(super::content::BAND_KEYS);
        for &key in scanned {
            if keys.len() == super::content::BAND_KEYS {
                break;
            }
            if self.bucket_len(key)? < BUCKET_MAX {
                keys.push(key);
            }
        }
        Ok(keys)
    }

    /// A content sketch's [`BAND_SCAN`] smallest shingle hashes outside the
    /// blocks of its template now (nothing for other sketches): where its
    /// band keys ([`SketchIndex::band_keys`]) and the full buckets it
    /// searches ([`SketchIndex::full_buckets`]) come from.
    fn scan_keys(&self, sketch: &Sketch) -> Vec<u32> {
        let Sketch::Content(c) = sketch else {
            return Vec::new();
        };
        let template = self.template_of(sketch);
        let cut = |h: u64| template.as_ref().is_some_and(|t| t.blocks.contains(&h));
        c.key_candidates(&cut, BAND_SCAN)
    }

    /// Pages filed under band key `key`.
    fn bucket_len(&self, key: u32) -> std::io::Result<usize> {
        let mut n = usize::from(self.first.get(&key)?.is_some());
        self.for_more_pages(key, |_| n += 1)?;
        Ok(n)
    }

    /// The pages filed under band key `key`.
    fn bucket(&self, key: u32, out: &mut Vec<PageId>) -> std::io::Result<()> {
        if let Some(p) = self.first.get(&key)? {
            out.push(PageId::from(p));
        }
        self.more_pages(key, out)
    }

    /// The pages filed under band key `key` after its first, in order.
    fn more_pages(&self, key: u32, out: &mut Vec<PageId>) -> std::io::Result<()> {
        self.for_more_pages(key, |p| out.push(p))
    }

    /// Calls `f` with each page filed under band key `key` after its first,
    /// in order.
    fn for_more_pages(&self, key: u32, mut f: impl FnMut(PageId)) -> std::io::Result<()> {
        for place in 0..BUCKET_MAX {
            match self.more.get(&more_key(key, place))? {
                Some(p) => f(p),
                None => break,
            }
        }
        Ok(())
    }

    /// File `page` under band key `key` (a bucket keeps its first
    /// [`BUCKET_MAX`] pages, each once).
    fn file_under(&mut self, key: u32, page: PageId) -> std::io::Result<()> {
        let first = self.first.get(&key)?;
        let mut more = Vec::new();
        self.more_pages(key, &mut more)?;
        if usize::from(first.is_some()) + more.len() >= BUCKET_MAX
            || first.is_some_and(|p| PageId::from(p) == page)
            || more.contains(&page)
        {
            return Ok(());
        }
        match (first, u32::try_from(page)) {
            (None, Ok(small)) => self.first.insert(key, small)?,
            _ => self.more.insert(more_key(key, more.len()), page)?,
        }
        Ok(())
    }

    /// Record a new page's sketch and fingerprint.
    pub fn insert(&mut self, page: PageId, sketch: Sketch, simhash: u64) -> std::io::Result<()> {
        for key in self.band_keys(&self.scan_keys(&sketch))? {
            self.file_under(key, page)?;
        }
        let slot = self.put(sketch, simhash)?;
        self.pages.set(page, slot.pack()?)?;
        Ok(())
    }

    /// Replace a recorded page's sketch and fingerprint (its template
    /// changed); its band keys stay filed.
    pub fn update(&mut self, page: PageId, sketch: Sketch, simhash: u64) -> std::io::Result<()> {
        if self.pages.get(page).is_some() {
            self.insert(page, sketch, simhash)?;
        }
        Ok(())
    }

    /// Record a page's new fingerprint beside the sketch it has (its
    /// template changed, its sketch did not need to): the fingerprint a
    /// ruling against it measures distance from. Nothing when the page has
    /// no sketch.
    pub fn set_fingerprint(&mut self, page: PageId, simhash: u64) -> std::io::Result<()> {
        let Some(slot) = self.slot(page) else {
            return Ok(());
        };
        match &mut self.sketches {
            Sketches::Held(v) => {
                if let Some(e) = v.get_mut(slot.at as usize) {
                    e.1 = simhash;
                }
            }
            Sketches::Spilled { file, .. } => {
                use std::os::unix::fs::FileExt;
                file.write_all_at(&simhash.to_le_bytes(), slot.at)?;
                self.cache.lock().set_fingerprint(slot.at, simhash);
            }
        }
        Ok(())
    }

    /// Forget a page's sketch (its content changed; its band keys stay
    /// filed and find nothing).
    pub fn remove(&mut self, page: PageId) {
        self.pages.remove(page);
    }

    /// Pages recorded.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// Whether no page is recorded.
    pub fn is_empty(&self) -> bool {
        self.pages.len() == 0
    }

    /// The pages of the full buckets of a sketch's first
    /// [`FULL_BUCKET_LOOKUPS`] smallest hashes (outside its template): its
    /// copies among pages that share a long common section (the provided
    /// methods of every iterator of an API reference, a shared licence) —
    /// the section fills the buckets of its smallest hashes, so the pages
    /// are filed under their own few other shingles, which a copy need not
    /// share.
    fn full_buckets(&self, scanned: &[u32], out: &mut Vec<PageId>) -> std::io::Result<()> {
        for &key in scanned.iter().take(FULL_BUCKET_LOOKUPS) {
            if self.bucket_len(key)? >= BUCKET_MAX {
                self.bucket(key, out)?;
            }
        }
        Ok(())
    }

    /// The best confirmed original for a page with this sketch and
    /// fingerprint among `near` (simhash matches), the pages sharing a
    /// band key and those of the full buckets of its smallest hashes: the
    /// highest resemblance at or above its threshold ([`Thresholds`]), then the
    /// nearest fingerprint, then the earliest page. With a template learner
    /// two tagged content sketches are compared without the shingles of
    /// blocks in either page's template now
    /// ([`ContentSketch::resemblance_without`]). Fails only when a spilled
    /// sketch cannot be read back.
    ///
    /// [`ContentSketch::resemblance_without`]: super::ContentSketch::resemblance_without
    pub fn confirm(
        &self,
        sketch: &Sketch,
        simhash: u64,
        near: &[NearMatch],
        thresholds: impl Into<Thresholds>,
    ) -> std::io::Result<Option<(NearMatch, f64)>> {
        let thresholds = thresholds.into();
        let mut ids: Vec<PageId> = near.iter().map(|m| m.page).collect();
        let scanned = self.scan_keys(sketch);
        for key in self.band_keys(&scanned)? {
            self.bucket(key, &mut ids)?;
        }
        self.full_buckets(&scanned, &mut ids)?;
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return Ok(None);
        }
        let mut best: Option<(NearMatch, f64)> = None;
        let own = self.template_of(sketch);
        // A young site's chrome, not yet its template
        // ([`TemplateLearner::young_recurring`]): a page of the same site is
        // compared without it too, or not at all when too little is left.
        let young = match (sketch, &self.templates) {
            (Sketch::Content(a), Some(t)) => a
                .template_key()
                .and_then(|k| Some((crate::features::template_site(k), t.young_recurring(k)?))),
            _ => None,
        };
        // This page's side of the comparisons, per cut: the other page's
        // template (held here, so a pointer is not reused while the memo
        // is) and whether the young site's chrome is cut too.
        let mut memos: Vec<(Option<Arc<HostTemplate>>, bool, SideMemo)> = Vec::new();
        for page in ids {
            let Some(slot) = self.slot(page) else {
                continue;
            };
            let (other, other_simhash) = self.get(slot)?;
            let threshold = thresholds.between(sketch, &other);
            let r = match (sketch, &*other) {
                (Sketch::Content(a), Sketch::Content(b)) if self.templates.is_some() => {
                    let theirs = self.template_of(&other);
                    let template = |h: u64| {
                        own.as_ref().is_some_and(|t| t.blocks.contains(&h))
                            || theirs.as_ref().is_some_and(|t| t.blocks.contains(&h))
                    };
                    let chrome = young
                        .as_ref()
                        .filter(|(site, _)| b.template_key().map(crate::features::template_site) == Some(site));
                    let same = |t: &Option<Arc<HostTemplate>>| match (t, &theirs) {
                        (Some(x), Some(y)) => Arc::ptr_eq(x, y),
                        (None, None) => true,
                        _ => false,
                    };
                    let at = match memos.iter().position(|(t, c, _)| *c == chrome.is_some() && same(t)) {
                        Some(at) => at,
                        None => {
                            memos.push((theirs.clone(), chrome.is_some(), SideMemo::default()));
                            memos.len() - 1
                        }
                    };
                    let memo = &mut memos[at].2;
                    // None: no comparison, or one that cannot reach the threshold.
                    let r = match chrome {
                        Some((_, recurring)) => {
                            let cut = |h: u64| template(h) || recurring.contains(&h);
                            a.resemblance_without_only_memo(b, &cut, memo, threshold)
                        }
                        None => a.resemblance_without_memo(b, &template, memo, threshold),
                    };
                    match r {
                        Some(r) => r,
                        None => continue,
                    }
                }
                _ => sketch.resemblance(&other),
            };
            if r < threshold {
                continue;
            }
            let m = NearMatch {
                page,
                distance: crate::simhash::hamming(simhash, other_simhash),
            };
            // Higher resemblance, then nearer, then earlier (ids ascend:
            // an equal one found later is never better).
            let better = best.as_ref().is_none_or(|(bm, br)| {
                r.total_cmp(br)
                    .then_with(|| (bm.distance, bm.page).cmp(&(m.distance, m.page)))
                    .is_gt()
            });
            if better {
                best = Some((m, r));
            }
        }
        Ok(best)
    }
}

#[cfg(test)]
#[path = "confirm_tests.rs"]
mod tests;
