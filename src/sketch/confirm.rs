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
/// many) and holds per page id only where its sketch is (8 bytes). Its band
/// keys go to a [`SpillMap`] of a key's first
/// page, and the other pages of a key to a second one, keyed by the band
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
        self.pages.set(page, slot.pack()?);
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
                    match chrome {
                        Some((_, recurring)) => {
                            let cut = |h: u64| template(h) || recurring.contains(&h);
                            match a.resemblance_without_only_memo(b, &cut, memo) {
                                Some(r) => r,
                                None => continue,
                            }
                        }
                        None => a.resemblance_without_memo(b, &template, memo),
                    }
                }
                _ => sketch.resemblance(&other),
            };
            if r < thresholds.between(sketch, &other) {
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
mod tests {
    use super::*;
    use crate::sketch::ContentSketch;

    /// A content sketch of `n` words from `base` on, with `shared` of them
    /// taken from base 0 (so sketches overlap as much as their words do).
    fn sketch(base: u64, n: u64, shared: u64) -> Sketch {
        let words: Vec<u64> = (0..n).map(|i| if i < shared { i } else { base + i }).collect();
        Sketch::Content(ContentSketch::from_words(&words))
    }

    /// Pages sharing a long section (an API reference's provided methods)
    /// fill the buckets of its smallest hashes, so a later page of the kind
    /// shares no band key with them; the full buckets of its smallest
    /// hashes still give it candidates.
    #[test]
    fn pages_sharing_a_long_section_are_found_through_full_buckets() {
        let mut ix = SketchIndex::new();
        // 2 000 shared words, then 3 words of each page's own.
        let page = |id: u64| -> Sketch {
            let words: Vec<u64> = (0..2000u64).chain((0..3).map(|i| 1_000_000 * (id + 1) + i)).collect();
            Sketch::Content(ContentSketch::from_words(&words))
        };
        for id in 1..=600u64 {
            ix.insert(id, page(id), id).unwrap();
        }
        let q = page(1000);
        assert!(q.resemblance(&page(1)) >= 0.9);
        // Each of the first band-scan keys is full, or no page is filed
        // under it (the query's own words): no open bucket gives a candidate.
        let Sketch::Content(c) = &q else { unreachable!() };
        assert!(c.key_candidates(&|_| false, BAND_SCAN).iter().all(|&k| {
            let n = ix.bucket_len(k).unwrap();
            n == 0 || n >= BUCKET_MAX
        }));
        let (m, r) = ix
            .confirm(&q, 0, &[], 0.9)
            .unwrap()
            .expect("a copy among the full buckets");
        assert!(m.page <= 600 && r >= 0.9);
    }

    /// Pages around a long shared section, each with a part of its own:
    /// the section fills the buckets of the smallest hashes, and a page is
    /// filed under the smallest hashes further down its sketch whose
    /// buckets are not full, often those of its own part, which only its
    /// copies share.
    #[test]
    fn a_copy_of_one_page_of_a_family_finds_that_page() {
        let mut ix = SketchIndex::new();
        // 2 000 shared words, then 150 of the page's own.
        let page = |id: u64| -> Sketch {
            let words: Vec<u64> = (0..2000u64).chain((0..150).map(|i| 1_000_000 * (id + 1) + i)).collect();
            Sketch::Content(ContentSketch::from_words(&words))
        };
        for id in 1..=300u64 {
            ix.insert(id, page(id), id).unwrap();
        }
        let full = |id: u64, n: usize| {
            let Sketch::Content(c) = page(id) else { unreachable!() };
            c.key_candidates(&|_| false, n)
                .iter()
                .all(|&k| ix.bucket_len(k).unwrap() >= BUCKET_MAX)
        };
        let found = (1..=300u64)
            .filter(|&id| {
                ix.confirm(&page(id), 0, &[], 0.99)
                    .unwrap()
                    .is_some_and(|(m, r)| m.page == id && r == 1.0)
            })
            .count();
        // The section fills the 16 smallest hashes' buckets of many pages
        // and never all of the 64 scanned.
        assert!((1..=300u64).filter(|&id| full(id, 16)).count() > 100);
        assert!((1..=300u64).all(|id| !full(id, BAND_SCAN)));
        // 222 of the 300 copies find their page (a scan of the 16 smallest
        // hashes: 183).
        assert!(found >= 220, "{found}");
    }

    /// A short page needs `short` resemblance, a long one `long`.
    #[test]
    fn short_pages_need_the_short_page_threshold() {
        let text = |n: u64, changed: u64| -> Sketch {
            let words: Vec<u64> = (0..n).map(|i| if i == changed { 99_999 } else { i }).collect();
            Sketch::Content(ContentSketch::from_words(&words))
        };
        let t = Thresholds {
            long: 0.86,
            short: 0.92,
            short_below: 50,
        };
        // 44 words (40 shingles), the second to last changed: 38 of 42
        // shingles shared; 104 words, one changed: 95 of 105.
        let (short_a, short_b) = (text(44, 42), text(44, 1000));
        let (long_a, long_b) = (text(104, 50), text(104, 1000));
        for (x, y) in [(&short_a, &short_b), (&long_a, &long_b)] {
            let r = x.resemblance(y);
            assert!((0.86..0.92).contains(&r), "{r}");
        }
        assert_eq!(t.between(&long_a, &long_b), 0.86);
        assert_eq!(t.between(&short_a, &short_b), 0.92);
        assert_eq!(t.between(&short_a, &long_b), 0.92);
        assert_eq!(Thresholds::uniform(0.7).between(&short_a, &short_b), 0.7);
        let mut ix = SketchIndex::new();
        ix.insert(1, short_b, 0).unwrap();
        ix.insert(2, long_b, 0).unwrap();
        let near = [NearMatch { page: 1, distance: 0 }, NearMatch { page: 2, distance: 0 }];
        let page = |got: Option<(NearMatch, f64)>| got.map(|(m, _)| m.page);
        assert_eq!(page(ix.confirm(&long_a, 0, &near, t).unwrap()), Some(2));
        assert_eq!(page(ix.confirm(&short_a, 0, &near, t).unwrap()), None);
        assert_eq!(page(ix.confirm(&short_a, 0, &near, 0.86).unwrap()), Some(1));
    }

    #[test]
    fn a_spilled_index_confirms_exactly_as_one_in_memory() {
        spilled_index_confirms_exactly_as_one_in_memory(BAND_MEM_MAX);
    }

    /// The same with all but 8 band keys on disk.
    #[test]
    fn an_index_with_its_band_keys_on_disk_confirms_exactly_as_one_in_memory() {
        spilled_index_confirms_exactly_as_one_in_memory(8);
    }

    /// The same with a cache of 3 decoded sketches, so that most reads
    /// evict one.
    #[test]
    fn an_index_with_a_small_cache_of_sketches_confirms_exactly_as_one_in_memory() {
        spilled_index_confirms_exactly_as_one_in_memory_with(BAND_MEM_MAX, 3);
    }

    fn spilled_index_confirms_exactly_as_one_in_memory(band_mem_max: usize) {
        spilled_index_confirms_exactly_as_one_in_memory_with(band_mem_max, super::super::cache::SKETCH_CACHE);
    }

    fn spilled_index_confirms_exactly_as_one_in_memory_with(band_mem_max: usize, cached: usize) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sketches.bin");
        let mut held = SketchIndex::new();
        let mut spilled = SketchIndex::spilling_with(&path, band_mem_max).unwrap();
        spilled.cache = parking_lot::Mutex::new(SketchCache::with_capacity(cached));
        // Pages 1..=60: families of near copies (same base words, a few
        // differ), so band keys are shared and buckets fill.
        for id in 1..=60u64 {
            let sk = sketch(1000 * (id % 7 + 1), 300, 200 + (id % 5) * 20);
            held.insert(id, sk.clone(), id * 31).unwrap();
            spilled.insert(id, sk, id * 31).unwrap();
        }
        // A re-fingerprinted page: its sketch and fingerprint replaced.
        let again = sketch(5000, 300, 250);
        held.update(4, again.clone(), 7).unwrap();
        spilled.update(4, again, 7).unwrap();
        assert_eq!(held.len(), spilled.len());
        let mut confirmed = 0;
        for q in 0..40u64 {
            let sk = sketch(1000 * (q % 7 + 1), 300, 180 + (q % 6) * 20);
            // Every other query has no simhash candidate: band keys alone.
            let near: Vec<NearMatch> = (1..=3)
                .filter(|_| q % 2 == 0)
                .map(|p| NearMatch {
                    page: q + p,
                    distance: (p % 4) as u32,
                })
                .collect();
            for threshold in [0.3, 0.6, 0.9] {
                let a = held.confirm(&sk, q, &near, threshold).unwrap();
                let b = spilled.confirm(&sk, q, &near, threshold).unwrap();
                assert_eq!(a, b, "query {q} at {threshold}");
                confirmed += usize::from(a.is_some());
            }
        }
        assert!(confirmed > 10, "only {confirmed} confirmations: the test checks little");
        assert!(std::fs::metadata(&path).unwrap().len() > 60 * 4 * 100);
        // The spill file holds one run's sketches: it goes with the index.
        drop(spilled);
        assert!(!path.exists());
    }

    /// A fingerprint set beside a page's sketch is the one a ruling
    /// measures distance from: in memory, in the spill file's cache, and
    /// read back from the file once the cache has let it go. A page
    /// without a sketch takes nothing.
    #[test]
    fn a_fingerprint_set_beside_a_sketch_is_the_one_a_ruling_measures() {
        let dir = tempfile::tempdir().unwrap();
        let (page, other) = (sketch(1000, 300, 250), sketch(7000, 300, 0));
        let near = |page| [NearMatch { page, distance: 0 }];
        let distance = |ix: &SketchIndex| ix.confirm(&page, 0, &near(1), 0.9).unwrap().map(|(m, _)| m.distance);
        let mut held = SketchIndex::new();
        let mut cached = SketchIndex::spilling(&dir.path().join("cached.bin")).unwrap();
        let mut evicted = SketchIndex::spilling(&dir.path().join("evicted.bin")).unwrap();
        evicted.cache = parking_lot::Mutex::new(SketchCache::with_capacity(1));
        for ix in [&mut held, &mut cached, &mut evicted] {
            ix.insert(1, page.clone(), 0).unwrap();
            ix.insert(2, other.clone(), 0).unwrap();
            assert_eq!(distance(ix), Some(0));
            ix.set_fingerprint(1, 0b1011).unwrap();
            ix.set_fingerprint(3, 1).unwrap();
        }
        // Reading page 2 takes the only slot of `evicted`'s cache.
        assert!(evicted.confirm(&other, 0, &near(2), 0.9).unwrap().is_some());
        for ix in [&held, &cached, &evicted] {
            assert_eq!(distance(ix), Some(3));
            assert_eq!(ix.len(), 2);
        }
    }

    /// A page sketched before its site's chrome was learned is confirmed
    /// against a copy sketched after, once the index consults the learner;
    /// an index without it compares the sketches as taken.
    #[test]
    fn tagged_sketches_are_compared_outside_the_current_templates() {
        let learner = Arc::new(TemplateLearner::new(
            &crate::Settings::from_layers(&[], &[]).expect("defaults").features,
        ));
        let (chrome, content, other) = (
            (0..40u64).map(|i| 9000 + i).collect::<Vec<_>>(),
            (0..80u64).collect::<Vec<_>>(),
            (0..80u64).map(|i| 5000 + i).collect::<Vec<_>>(),
        );
        let tagged = |parts: &[(u64, &[u64])], key: &str| {
            let mut words = Vec::new();
            let mut runs = Vec::new();
            for (block, w) in parts {
                words.extend_from_slice(w);
                runs.push((words.len() as u32, *block));
            }
            Sketch::Content(ContentSketch::from_blocks(&words, &runs, key))
        };
        let early = tagged(&[(77, &chrome), (1, &content)], "h");
        let stranger = tagged(&[(77, &chrome), (2, &other)], "h");
        let late = tagged(&[(1, &content)], "h");
        let mut with = SketchIndex::new().with_templates(Some(learner.clone()));
        let mut without = SketchIndex::new();
        for ix in [&mut with, &mut without] {
            ix.insert(1, early.clone(), 0).unwrap();
            ix.insert(2, stranger.clone(), 0).unwrap();
        }
        let near = [1, 2].map(|page| NearMatch { page, distance: 0 });
        // No template yet: the chrome counts on both sides.
        assert_eq!(with.confirm(&late, 0, &near, 0.9).unwrap(), None);
        // The chrome (block 77) is on every page of the site now.
        for i in 0..40u64 {
            learner.observe_hashes("h", &[77, 100 + i]);
        }
        assert!(learner.template("h").is_some_and(|t| t.blocks.contains(&77)));
        let (m, r) = with.confirm(&late, 0, &near, 0.9).unwrap().expect("confirmed");
        assert_eq!((m.page, r), (1, 1.0));
        assert_eq!(without.confirm(&late, 0, &near, 0.9).unwrap(), None);
        // Round trip through the spill encoding keeps the tags.
        assert_eq!(Sketch::from_bytes(&early.to_bytes()), Some(early));
    }

    /// Pages that share a long common text (a reference section on every
    /// page) fill the buckets of its smallest shingles; a page filed later
    /// goes under the next keys, and its copy finds it there.
    #[test]
    fn band_keys_pass_over_full_buckets() {
        let common: Vec<u64> = (0..300).map(|i| 70_000 + i).collect();
        let page = |id: u64| -> Sketch {
            let mut words = common.clone();
            words.extend((0..200).map(|i| id * 1000 + i));
            Sketch::Content(ContentSketch::from_words(&words))
        };
        let mut ix = SketchIndex::new();
        for id in 1..=60 {
            ix.insert(id, page(id), id).unwrap();
        }
        for id in [45, 60] {
            let (m, r) = ix.confirm(&page(id), 0, &[], 0.9).unwrap().expect("its copy is found");
            assert_eq!((m.page, r), (id, 1.0));
        }
        // The common text's smallest shingle: its bucket holds the first
        // pages only, and the last page is filed elsewhere.
        let c = ContentSketch::from_words(&common);
        let mut first = Vec::new();
        ix.bucket(c.band_keys()[0], &mut first).unwrap();
        assert_eq!(first.len(), BUCKET_MAX);
        assert!(!first.contains(&60));
    }

    #[test]
    fn a_bucket_keeps_its_first_pages_once() {
        // In memory, and with all but 4 entries of each band-key map on disk.
        let dir = tempfile::tempdir().unwrap();
        let spilled = |name: &str| SketchIndex::spilling_with(&dir.path().join(name), 4).unwrap();
        for (mut ix, mut only_big) in [
            (SketchIndex::new(), SketchIndex::new()),
            (spilled("a.bin"), spilled("b.bin")),
        ] {
            let sk = sketch(0, 50, 50);
            // Page ids past 32 bits are filed too.
            let big = u64::from(u32::MAX) + 5;
            for id in (1..=40).chain([big]) {
                ix.insert(id, sk.clone(), 0).unwrap();
            }
            ix.insert(3, sk.clone(), 0).unwrap();
            let Sketch::Content(c) = &sk else { unreachable!() };
            for &key in c.band_keys() {
                let mut pages = Vec::new();
                ix.bucket(key, &mut pages).unwrap();
                assert_eq!(pages, (1..=BUCKET_MAX as u64).collect::<Vec<_>>());
            }
            only_big.insert(big, sk.clone(), 0).unwrap();
            let mut pages = Vec::new();
            only_big.bucket(c.band_keys()[0], &mut pages).unwrap();
            assert_eq!(pages, vec![big]);
        }
    }
}
