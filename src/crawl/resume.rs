//! Opening a crawl directory: a new crawl's store and seeds, or a resumed
//! one's store, log repair, flush mark check, index snapshot and the
//! decider's state rebuilt from the store; and the backup that puts a
//! damaged store back as it was.

use super::*;

/// Keep the log lines whose URL the store has as done, once each, and
/// rewrite the log with them (a killed crawl may have logged pages whose
/// store record was lost, or a truncated last line).
pub(super) fn repair_log(path: &Path, store: &dyn Store) -> Result<Vec<PageRecord>> {
    let records = if path.exists() {
        crawllog::read_log(path)?
    } else {
        Vec::new()
    };
    // Lines kept per URL: one per fetch its page records (a revisit adds
    // one; the lines of an uncommitted revisit come after those).
    let mut lines: HashMap<String, u32> = HashMap::new();
    let mut kept = Vec::with_capacity(records.len());
    for r in records {
        let Some(UrlState::Done(id)) = store.url_state(&r.canonical)? else {
            continue;
        };
        let n = lines.get(&r.canonical).copied().unwrap_or(0);
        // The page is read only for a URL's second line.
        let keep = n == 0 || store.page(id)?.is_some_and(|p| n < p.revisit.fetches);
        if keep {
            *lines.entry(r.canonical.clone()).or_insert(0) += 1;
            kept.push(r);
        }
    }
    let seen: HashSet<String> = lines.into_keys().collect();
    // Every page the store recorded has its line: the lines a damaged or
    // deleted log lost are written again from the store's page records.
    let rebuilt = if (kept.len() as u64) < store.pages_recorded()? {
        let rebuilt = records_from_store(store, &seen)?;
        if !rebuilt.is_empty() {
            tracing::warn!(
                "{}: {} of {} records were missing; rewritten from the store (fields the store does not \
                 keep, such as parent and score, are empty in them)",
                path.display(),
                rebuilt.len(),
                kept.len() + rebuilt.len()
            );
        }
        rebuilt
    } else {
        Vec::new()
    };
    kept.extend(rebuilt);
    let tmp = path.with_extension("jsonl.tmp");
    {
        let file = std::fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        let mut w = CrawlLogWriter::new(std::io::BufWriter::new(file));
        for r in &kept {
            w.write(r).map_err(|e| Error::io(&tmp, e))?;
        }
        w.flush().map_err(|e| Error::io(&tmp, e))?;
    }
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))?;
    Ok(kept)
}

/// The crawl-log records of the store's pages whose canonical URL is not in
/// `have`, in page order, from what the store keeps of each page.
pub(super) fn records_from_store(store: &dyn Store, have: &HashSet<String>) -> Result<Vec<PageRecord>> {
    let mut urls: HashMap<PageId, String> = HashMap::new();
    let mut missing = Vec::new();
    for page in store.iter_pages() {
        let page = page?;
        urls.insert(page.id, page.canonical.clone());
        if !have.contains(&page.canonical) {
            missing.push(page);
        }
    }
    Ok(missing
        .into_iter()
        .map(|p| PageRecord {
            url: p.canonical.clone(),
            canonical: p.canonical,
            final_url: p.final_url,
            status: p.status,
            depth: p.depth,
            fetched_at: rfc3339(UNIX_EPOCH + Duration::from_millis(p.fetched_at_ms)),
            bytes: p.bytes,
            content_hash: p.content_hash.as_ref().map(dedup::hex),
            text_hash: p.text_hash.as_ref().map(dedup::hex),
            simhash: p.simhash.map(simhash::to_hex),
            decision: p.decision,
            dup_of: p.dup_of.and_then(|id| urls.get(&id).cloned()),
            distance: p.distance,
            ..PageRecord::default()
        })
        .collect())
}

/// What [`run`] opens before the crawl starts: the store, the frontier, the
/// crawl log's records so far, the decider's state and the crawl's tag.
pub(super) type Opened = (Arc<dyn Store>, Frontier, Vec<PageRecord>, DedupState, u32);

/// Opens (or creates) the store and reads (or seeds) the crawl. On an error
/// every thread that used the store has ended and the store is closed.
pub(super) fn open_crawl(
    settings: &Settings,
    opts: &CrawlOptions,
    store_dir: &Path,
    log_path: &Path,
    snapshot: &Path,
    seeds: &[Url],
) -> Result<Opened> {
    if let Some(id) = opts.worker {
        return open_worker(settings, opts, store_dir, snapshot, seeds, id);
    }
    let store: Arc<dyn Store> = match settings.store.backend {
        // Combining: queue updates go to the store with the next group commit.
        StoreBackend::Disk => Arc::new(
            DiskStore::open_cached(
                store_dir,
                settings.store.engine,
                settings.frontier.seen_cache_urls,
                settings.store.cache_bytes,
            )?
            .combining(),
        ),
        StoreBackend::Redis => Arc::new(open_redis(settings, opts, store_dir)?),
    };
    if opts.resume {
        check_flush_mark(store_dir, store.pages_recorded()?)?;
    } else {
        // A snapshot left beside a removed store belongs to another crawl.
        let _ = std::fs::remove_file(snapshot);
    }
    let crawl_tag = crawl_tag(store.as_ref())?;
    // The decider's starting state is read on its own thread while the
    // frontier reads the seen-set and the queue: on resume the two are
    // independent scans of different keys, each seconds per million pages.
    let loader = {
        let (store, settings, snapshot) = (store.clone(), settings.clone(), snapshot.to_path_buf());
        let warc = CrawlDir::new(&opts.out).warc();
        std::thread::Builder::new()
            .name("simcrawl-load".into())
            .spawn(move || DedupState::load(store.as_ref(), &settings, &snapshot, &warc, crawl_tag))
            .map_err(|e| Error::io("loader thread", e))?
    };
    let setup = if opts.resume {
        Frontier::resume(store.clone(), settings).map_err(Error::from)
    } else {
        Frontier::new(store.clone(), settings, seeds).map_err(Error::from)
    };
    // Joined before any error returns, so no thread outlives `run` holding
    // the store open.
    let loaded = loader.join();
    let frontier = setup?;
    let dedup_state = loaded.map_err(|_| Error::thread_panicked("loader"))??;
    let previous = if opts.resume {
        // The page records themselves, not only the counter, before the
        // log is repaired from them.
        check_flush_mark(store_dir, dedup_state.pages)?;
        repair_log(log_path, store.as_ref())?
    } else {
        write_flush_mark(store_dir, store.as_ref());
        Vec::new()
    };
    Ok((store, frontier, previous, dedup_state, crawl_tag))
}

/// [`open_crawl`] for worker `id` of a shared crawl: joins (or seeds) the
/// crawl in Redis; the decider starts empty and replays the crawl's shared
/// decisions.
fn open_worker(
    settings: &Settings,
    opts: &CrawlOptions,
    store_dir: &Path,
    snapshot: &Path,
    seeds: &[Url],
    id: u16,
) -> Result<Opened> {
    let store: Arc<dyn Store> = Arc::new(shared_crawl::open_worker_store(settings, opts, store_dir)?);
    let _ = std::fs::remove_file(snapshot);
    let crawl_tag = crawl_tag(store.as_ref())?;
    let (frontier, seeded) = match Frontier::for_worker(store.clone(), settings, seeds, id) {
        Err(crate::frontier::FrontierError::NothingToResume) => {
            return Err(Error::InvalidInput(
                "no crawl under this name in Redis yet: give the first worker the seed URLs".into(),
            ))
        }
        r => r?,
    };
    tracing::info!("worker {id}: {} the crawl", if seeded { "seeded" } else { "joined" });
    let dedup_state = DedupState::empty(settings, snapshot)?;
    Ok((store, frontier, Vec::new(), dedup_state, crawl_tag))
}

/// The crawl's Redis store ([`RedisStore`]): a new crawl takes the name
/// `[store] crawl_name` (or the crawl directory's name), refuses one that
/// already holds a crawl and records it in `DIR/store/` ([`RedisMarker`]);
/// `--resume` reopens the crawl the marker names.
fn open_redis(settings: &Settings, opts: &CrawlOptions, store_dir: &Path) -> Result<RedisStore> {
    let configured = &settings.store.crawl_name;
    if opts.resume {
        let Some(marker) = RedisMarker::read(store_dir)? else {
            return Err(Error::InvalidInput(format!(
                "{}: this crawl's store is not in Redis (no {}); resume it with [store] backend = \"sled\"",
                store_dir.display(),
                RedisMarker::FILE
            )));
        };
        if !configured.is_empty() && *configured != marker.name {
            return Err(Error::InvalidInput(format!(
                "[store] crawl_name is {configured:?} but this crawl is {:?} in Redis",
                marker.name
            )));
        }
        let store = RedisStore::open(&settings.store.redis_nodes, &marker.name)?;
        if store.fresh() {
            return Err(Error::InvalidInput(format!(
                "Redis holds no crawl named {:?} (removed, or lost with a node without persistence); start a new crawl",
                marker.name
            )));
        }
        return Ok(store);
    }
    let name = if configured.is_empty() {
        crawl_name_of(&opts.out, &opts.out)?
    } else {
        configured.clone()
    };
    let store = RedisStore::open(&settings.store.redis_nodes, &name)?;
    if !store.fresh() {
        return Err(Error::InvalidInput(format!(
            "Redis already holds a crawl named {name:?}; pass --resume to continue it (from its directory) or set another [store] crawl_name"
        )));
    }
    RedisMarker {
        name,
        nodes: settings.store.redis_nodes.clone(),
    }
    .write(store_dir)?;
    Ok(store)
}

/// The crawl name `dir`'s name makes (when `[store] crawl_name` is `""`):
/// at most 100 characters of A-Z a-z 0-9 - _ . (`out`: the crawl
/// directory, for the error).
pub(super) fn crawl_name_of(dir: &Path, out: &Path) -> Result<String> {
    let name = std::fs::canonicalize(dir)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let ok = !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.'));
    if !ok {
        return Err(Error::InvalidInput(format!(
            "{}: the directory's name {name:?} is not a valid crawl name; set [store] crawl_name",
            out.display()
        )));
    }
    Ok(name)
}

/// The seeds, canonicalized (at least one).
pub(super) fn parse_seeds(canon: &Canonicalizer, seeds: &[String]) -> Result<Vec<Url>> {
    let mut parsed = Vec::new();
    for s in seeds {
        parsed.push(
            canon
                .parse(s)
                .map_err(|e| Error::InvalidInput(format!("seed {s:?}: {e}")))?,
        );
    }
    if parsed.is_empty() {
        return Err(Error::InvalidInput("no seed URLs (give --seeds FILE)".into()));
    }
    Ok(parsed)
}

/// Removes what a new crawl that failed to start created in `out` (the
/// crawl log only when there was none before).
pub(super) fn remove_new_crawl(out: &Path, created_out: bool, had_log: bool) {
    for name in [CrawlDir::STORE_DIR, "index"] {
        let _ = std::fs::remove_dir_all(out.join(name));
    }
    if !had_log {
        let _ = std::fs::remove_file(out.join(CrawlDir::LOG_FILE));
    }
    // Only when empty: files are created with the first page.
    let _ = std::fs::remove_dir(out.join(CrawlDir::WARC_DIR));
    if created_out {
        // Only when empty: never anything the user put there.
        let _ = std::fs::remove_dir(out);
    }
}

/// The file in the store directory that holds how many pages the store
/// held when simcrawl last flushed it (a lower bound for any later open).
pub(super) const FLUSH_MARK: &str = "simcrawl-flushed";

/// Every this often the decider flushes the store and updates the mark.
pub(super) const FLUSH_MARK_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Records the store's page count after a flush (best effort: a missing
/// mark only weakens the check on the next resume).
pub(super) fn write_flush_mark(store_dir: &Path, store: &dyn Store) {
    let Ok(pages) = store.pages_recorded() else { return };
    let path = store_dir.join(FLUSH_MARK);
    let tmp = store_dir.join(format!("{FLUSH_MARK}.tmp"));
    if std::fs::write(&tmp, format!("{pages}\n")).is_ok() {
        let _ = std::fs::rename(&tmp, &path);
    }
}

/// Refuses a store that holds fewer pages than at its last flush (part of
/// it was lost, e.g. a truncated file the engine recovered a prefix of).
/// `found` is the store's page counter, or the page records a scan read
/// (a damaged file can keep the counter and lose records).
pub(super) fn check_flush_mark(store_dir: &Path, found: u64) -> Result<()> {
    let Ok(text) = std::fs::read_to_string(store_dir.join(FLUSH_MARK)) else {
        return Ok(());
    };
    let expected: u64 = text.trim().parse().unwrap_or(0);
    if found < expected {
        return Err(crate::store::StoreError::Lost {
            path: store_dir.to_path_buf(),
            expected,
            found,
        }
        .into());
    }
    Ok(())
}

/// The crawl's 32-bit tag (never 0), kept in the store's `crawl_id` meta
/// value (made on first use) and written into index snapshots, so a
/// snapshot of another crawl is never loaded.
pub(super) fn crawl_tag(store: &dyn Store) -> Result<u32> {
    let id = match store.meta("crawl_id")? {
        Some(v) if v.len() == 8 => u64::from_be_bytes([v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]]),
        _ => {
            let mut h = blake3::Hasher::new();
            h.update(&now_ms(SystemTime::now()).to_le_bytes());
            h.update(&std::process::id().to_le_bytes());
            h.update(&(store as *const dyn Store as *const u8 as usize).to_le_bytes());
            let b = h.finalize();
            let mut id = [0u8; 8];
            id.copy_from_slice(&b.as_bytes()[..8]);
            store.set_meta("crawl_id", &id)?;
            u64::from_be_bytes(id)
        }
    };
    Ok((id as u32).max(1))
}

/// A copy of the store taken before a resume opens it, put back when the
/// store turns out unreadable: the storage engine repairs what it can at
/// open (it cuts a damaged log), and a failed resume must leave the store
/// exactly as it found it.
pub(super) struct StoreBackup {
    store: PathBuf,
    copy: PathBuf,
}

impl StoreBackup {
    pub(super) fn take(store: &Path) -> Result<StoreBackup> {
        let copy = store.with_file_name("store.before-resume");
        if copy.is_dir() {
            // A resume stopped while it checked the store: the copy is the
            // store as it was before that attempt.
            std::fs::remove_dir_all(store).map_err(|e| Error::io(store, e))?;
            std::fs::rename(&copy, store).map_err(|e| Error::io(&copy, e))?;
        }
        copy_dir(store, &copy).map_err(|e| Error::io(&copy, e))?;
        Ok(StoreBackup {
            store: store.to_path_buf(),
            copy,
        })
    }

    pub(super) fn discard(self) {
        let _ = std::fs::remove_dir_all(&self.copy);
    }

    pub(super) fn restore(self) {
        let restored = std::fs::remove_dir_all(&self.store).and_then(|()| std::fs::rename(&self.copy, &self.store));
        if let Err(e) = restored {
            tracing::error!(
                "{}: could not put the store back ({e}); its copy is in {}",
                self.store.display(),
                self.copy.display()
            );
        }
    }
}

/// Copies the regular files of `from` into a new directory `to`, recursively.
pub(super) fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// What the decider starts from: the exact-duplicate maps and the
/// near-duplicate index, as the store's page records leave them.
pub(crate) struct DedupState {
    /// The simhash index: the snapshot of the last clean stop plus the
    /// fingerprints of pages decided after it, or, without a usable
    /// snapshot, every fingerprint in the store (the source of truth).
    pub(crate) index: LiveIndex,
    /// The first page of each body hash and text hash.
    pub(crate) exact: ExactIndex,
    /// The per-host template learner as the recorded pages left it.
    pub(crate) templates: TemplateLearner,
    /// The verification sketches of the recorded new pages.
    pub(crate) sketches: SketchIndex,
    /// Page records the scan read.
    pub(crate) pages: u64,
    /// The live fingerprint of each revisited page (see [`Deduper::with_live`]).
    pub(crate) live: HashMap<PageId, Option<u64>>,
    /// Where the per-page maps write their runs (`DIR/index/`).
    pub(crate) spill: PathBuf,
}

impl DedupState {
    /// The state of a crawl with no page recorded.
    pub(crate) fn empty(s: &Settings, snapshot: &Path) -> Result<Self> {
        let sketch_file = snapshot.with_file_name(SKETCH_FILE);
        let dir = spill_dir(snapshot)?;
        let index = LiveIndex::from_settings(&s.index, s.simhash.k);
        index.spill_to(&dir).map_err(|e| Error::io(&dir, e))?;
        Ok(DedupState {
            index,
            exact: ExactIndex::spilling(&dir),
            spill: dir.clone(),
            templates: TemplateLearner::new(&s.features),
            sketches: SketchIndex::spilling(&sketch_file).map_err(|e| Error::io(&sketch_file, e))?,
            pages: 0,
            live: HashMap::new(),
        })
    }

    /// Reads both from one scan of the page records (the exact maps need
    /// every page; the index the `New` pages past the snapshot's
    /// watermark); templates and sketches from the bodies in the WARC files
    /// of `warc` ([`replay_analysis`]). The sketches are kept in
    /// `sketches.bin` beside `snapshot` (see [`SketchIndex::spilling`]).
    pub(crate) fn load(store: &dyn Store, s: &Settings, snapshot: &Path, warc: &Path, crawl_tag: u32) -> Result<Self> {
        let started = std::time::Instant::now();
        let fresh = LiveIndex::from_settings(&s.index, s.simhash.k);
        let (index, first, from) = match LiveIndex::load_tagged(snapshot, fresh.design().clone(), s.simhash.k) {
            Ok((idx, mark, tag)) if tag == crawl_tag && mark <= store.next_page_id() => (idx, mark, "the snapshot"),
            Ok((_, _, tag)) if tag != crawl_tag => {
                tracing::warn!(
                    "{}: the snapshot belongs to another crawl; rebuilding the index from the store",
                    snapshot.display()
                );
                (fresh, 0, "no snapshot")
            }
            Ok(_) => {
                tracing::warn!("{}: newer than the store; rebuilding the index", snapshot.display());
                (fresh, 0, "no snapshot")
            }
            Err(e) if e.is_missing() => (fresh, 0, "no snapshot"),
            Err(e) => {
                tracing::warn!("{e}; rebuilding the index from the store");
                (fresh, 0, "no snapshot")
            }
        };
        let spill = spill_dir(snapshot)?;
        index.spill_to(&spill).map_err(|e| Error::io(&spill, e))?;
        let mut exact = ExactIndex::spilling(&spill);
        let mut fps = Vec::new();
        let mut analysed = Vec::new();
        let mut pages = 0u64;
        let mut live = HashMap::new();
        for r in store.iter_pages() {
            let page = r?;
            pages += 1;
            let indexed = page.decision.is_indexed().then_some(page.simhash).flatten();
            if page.revisit.fetches > 1 {
                // Revisited: the snapshot may hold its older fingerprints
                // and may lack this one (the page keeps its id).
                live.insert(page.id, indexed);
                if let (Some(fp), true) = (indexed, page.id < first) {
                    fps.push((fp, page.id));
                }
            }
            exact
                .insert(page.content_hash.as_ref(), page.text_hash.as_ref(), page.id)
                .map_err(|e| Error::io(&spill, e))?;
            if page.simhash.is_some() || page.decision == Decision::Noindex {
                analysed.push((page.id, page.canonical, page.decision, page.simhash.unwrap_or(0)));
            }
            if let (true, Some(fp), true) = (page.decision.is_indexed(), page.simhash, page.id >= first) {
                fps.push((fp, page.id));
            }
        }
        let (kept, added) = (index.len(), fps.len());
        if added > kept / 8 {
            index.bulk_load(fps).map_err(|e| Error::io(&spill, e))?;
        } else {
            for (fp, id) in fps {
                index.insert(fp, id);
            }
        }
        if !index.is_empty() {
            tracing::info!(
                "index: {} fingerprints ({kept} from {from}, {added} from page records); exact maps and index read in {:.2} s",
                index.len(),
                started.elapsed().as_secs_f64()
            );
        }
        let Replayed {
            templates,
            sketches,
            refreshed,
        } = replay_analysis(store, s, warc, &snapshot.with_file_name(SKETCH_FILE), &analysed)?;
        // Young hosts' pages fingerprinted again under their settled
        // template are indexed under both fingerprints, as in the live crawl.
        for (fp, id) in refreshed {
            index.insert(fp, id);
        }
        Ok(DedupState {
            index,
            exact,
            templates,
            sketches,
            pages,
            live,
            spill,
        })
    }
}

/// The directory of the index snapshot, where the per-page maps write their
/// runs (unlinked temporary files: see `spillmap`), created if missing.
fn spill_dir(snapshot: &Path) -> Result<PathBuf> {
    let dir = snapshot.parent().unwrap_or(Path::new(".")).to_path_buf();
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    Ok(dir)
}

/// The file of the crawl's content sketches, beside the index snapshot
/// (`DIR/index/`): written while the crawl runs, removed when it ends.
pub(super) const SKETCH_FILE: &str = "sketches.bin";

/// Pages parsed at once by [`replay_analysis`] (in parallel, then observed
/// in id order).
pub(super) const REPLAY_CHUNK: usize = 512;

/// The template learner and verification sketches that the analysis of the
/// recorded pages built, rebuilt from their bodies (read from the WARC files
/// in `warc` at the store's [`BodyRef`]s): every analysed
/// page (`pages`, in id order: the order the decider recorded them) is
/// parsed again, its blocks are observed by a fresh learner, and each new
/// page's sketch is taken under the template as it stood at that page. A
/// resumed crawl then weighs and confirms like one that was never stopped.
/// A page without a readable body (`output.warc = false`, or a WARC file
/// removed or damaged) is left out, with a warning.
pub(super) fn replay_analysis(
    store: &dyn Store,
    s: &Settings,
    warc: &Path,
    sketch_file: &Path,
    pages: &[(PageId, String, Decision, u64)],
) -> Result<Replayed> {
    use rayon::prelude::*;
    let templates = TemplateLearner::new(&s.features);
    let mut sketches = SketchIndex::spilling(sketch_file).map_err(|e| Error::io(sketch_file, e))?;
    let spill = |e| Error::io(sketch_file, e);
    let (fx, verifier) = (feature_extractor(s), verifier(s));
    let sketching = verifier.is_some() || fx.keeps_words();
    let mut refreshed = Vec::new();
    if pages.is_empty() || (!s.features.template_learning && !sketching) {
        return Ok(Replayed {
            templates,
            sketches,
            refreshed,
        });
    }
    let started = std::time::Instant::now();
    let mut missing = 0u64;
    let mut unreadable: Option<crate::warc::WarcError> = None;
    let mut young = Vec::new();
    for chunk in pages.chunks(REPLAY_CHUNK) {
        let refs = chunk
            .iter()
            .map(|(id, ..)| store.body_ref(*id))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let bodies: Vec<Option<Vec<u8>>> = refs
            .par_iter()
            .map(|r| r.as_ref().map(|r| crate::warc::read_body(warc, r)))
            .collect::<Vec<_>>()
            .into_iter()
            .map(|r| match r {
                Some(Ok(b)) => Some(b),
                Some(Err(e)) => {
                    unreadable.get_or_insert(e);
                    None
                }
                None => None,
            })
            .collect();
        let docs: Vec<Option<(Extracted, Vec<u64>)>> = bodies
            .par_iter()
            .map(|body| {
                let body = body.as_deref()?;
                let (text, _) = crate::fetch::decode_text(body, None);
                // Templates and sketches read no link text.
                let opts = extract::ExtractOptions::new(s.features.max_text_bytes).without_link_text();
                let doc = extract_body(&text, !extract::looks_like_html(body), opts);
                let blocks = crate::features::block_hashes(&doc);
                Some((doc, blocks))
            })
            .collect();
        for ((id, canonical, decision, simhash), doc) in chunk.iter().zip(docs) {
            let Some((doc, blocks)) = doc else {
                missing += 1;
                continue;
            };
            let host = crate::host::host_key_of_serialized(canonical).unwrap_or_default();
            let path = crate::host::split_url(canonical).map_or("/", |(_, p)| p);
            let host = crate::features::template_key(host, path, doc.lang.as_deref());
            templates.observe_hashes(&host, &blocks);
            if sketching && decision.is_indexed() {
                let template = templates.template_shared(&host);
                let features = fx.features_hashed(&doc, &blocks, template.as_deref());
                if let Some(sk) = page_sketch(&fx, verifier.as_ref(), Some(&doc), &features, &host) {
                    sketches.insert(*id, sk, *simhash).map_err(spill)?;
                }
            }
            if *decision == Decision::New
                && templates.pages(&host) as usize <= PROVISIONAL_PER_HOST
                && young.len() < PROVISIONAL_MAX
            {
                young.push((*id, host, doc, blocks, *simhash));
            }
        }
    }
    // A young host's first pages were sketched again as its template
    // settled (`Decider::refresh_provisional`): take them under the
    // template the recorded pages leave.
    for (id, host, doc, blocks, stored) in young {
        let template = templates.template_shared(&host);
        let features = fx.features_hashed(&doc, &blocks, template.as_deref());
        let fp = simhash::simhash(&features);
        if fp != stored {
            refreshed.push((fp, id));
        }
        if let Some(sk) = page_sketch(&fx, verifier.as_ref(), Some(&doc), &features, &host) {
            sketches.update(id, sk, fp).map_err(spill)?;
        }
    }
    if missing > 0 {
        let why = match &unreadable {
            Some(e) => format!("a body could not be read: {e}"),
            None => "output.warc = false?".to_string(),
        };
        tracing::warn!(
            "{missing} of {} recorded pages have no body in the WARC files ({why}): host templates and near-duplicate sketches resume without them",
            pages.len()
        );
    }
    tracing::info!(
        "host templates and sketches of {} recorded pages rebuilt in {:.2} s",
        pages.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(Replayed {
        templates,
        sketches,
        refreshed,
    })
}

/// What [`replay_analysis`] rebuilds.
pub(super) struct Replayed {
    templates: TemplateLearner,
    sketches: SketchIndex,
    /// `(fingerprint, page)` of young hosts' pages fingerprinted again.
    refreshed: Vec<(u64, PageId)>,
}

/// Writes the index snapshot; a failure only costs a rebuild at the next start.
pub(super) fn save_index(index: &LiveIndex, path: &Path, watermark: u64, crawl_tag: u32) {
    let saved = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .map_err(|e| e.to_string())
        .and_then(|()| index.save_tagged(path, watermark, crawl_tag).map_err(|e| e.to_string()));
    if let Err(e) = saved {
        tracing::warn!("index snapshot not written ({e}); the next start rebuilds it from the store");
    }
}
