//! Simhash (pipeline: after [`crate::features`], before the index):
//! Charikar's construction over weighted features, exactly as in Manku,
//! Jain and Das Sarma (WWW 2007) §2, with f = 64 bits, and the Hamming
//! distance between two fingerprints.
//!
//! # The fingerprint, precisely
//!
//! 1. Every feature is a 64-bit hash [`feature_hash`] of its text (see there)
//!    with a weight `w > 0`.
//! 2. Weights are quantized to integers, `q = round(w × 1024)`, so the sums
//!    below are exact integer arithmetic and identical on every machine
//!    whatever the order of the features (floating-point sums are not).
//! 3. A vector `V` of 64 signed integers starts at zero; for every feature
//!    and every bit `i` (bit 0 = least significant), `V[i] += q` if bit `i`
//!    of the feature hash is 1, else `V[i] -= q`.
//! 4. Bit `i` of the fingerprint is 1 iff `V[i] >= 0` (the note's rule; Manku
//!    only says "the signs of the components"). A document without features
//!    therefore gets `ffffffffffffffff`.
//!
//! This module also holds the `simcrawl fingerprint` command
//! ([`fingerprint_paths`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::config::FeatureSettings;
use crate::extract::{self, Extracted};
use crate::features::{FeatureExtractor, Features, TemplateLearner};

/// Bits per fingerprint (the product uses 64 only).
pub const BITS: u32 = 64;

/// The feature hash and its parts, defined in [`crate::hash`] (re-exported
/// here because the fingerprint is specified in terms of them).
pub use crate::hash::{feature_hash, fmix64, fnv1a_continue, FNV1A_OFFSET};

/// The weight quantum: weights are summed as integer multiples of 1/1024.
pub const WEIGHT_SCALE: f32 = 1024.0;

/// Charikar's simhash of weighted features (see the module docs for the
/// exact construction). Features with non-positive or non-finite weight are
/// skipped.
pub fn simhash(features: &Features) -> u64 {
    simhash_items(&features.items)
}

/// [`simhash`] over bare `(feature hash, weight)` pairs.
pub fn simhash_items(items: &[(u64, f32)]) -> u64 {
    // V[i] = sum(+q where bit i is 1, -q where 0) = 2 S[i] - T, with S[i]
    // the sum of q over features with bit i set and T the sum of all q.
    // S is gathered per nibble: t[j][v] sums q over the features whose
    // nibble j (bits 4j..4j+3) is v, 16 adds per feature instead of 64
    // masked adds; each S[4j + b] is then the sum of the 8 entries of t[j]
    // with bit b set. The same integers, so the same fingerprint
    // (`cargo bench --bench pipeline -- 4_simhash`).
    let mut t = [[0i64; 16]; 16];
    let mut total = 0i64;
    for &(h, w) in items {
        if !(w.is_finite() && w > 0.0) {
            continue;
        }
        let q = round_positive(w * WEIGHT_SCALE);
        total += q;
        for (j, tj) in t.iter_mut().enumerate() {
            tj[((h >> (4 * j)) & 15) as usize] += q;
        }
    }
    let mut fp = 0u64;
    for (j, tj) in t.iter().enumerate() {
        for b in 0..4 {
            let s: i64 = (0..16).filter(|v| v >> b & 1 == 1).map(|v| tj[v]).sum();
            if 2 * s - total >= 0 {
                fp |= 1 << (4 * j + b);
            }
        }
    }
    fp
}

/// `x.round() as i64` for a finite `x > 0`, without the `roundf` call (the
/// default x86-64 target has no rounding instruction): below 2^23 the
/// conversion truncates exactly and `x - trunc(x)` is exact, so rounding half
/// away from zero is `trunc + (fraction >= 0.5)`; larger values are whole.
#[inline]
fn round_positive(x: f32) -> i64 {
    if x < 8_388_608.0 {
        let t = x as i64;
        t + i64::from(x - t as f32 >= 0.5)
    } else {
        x.round() as i64
    }
}

/// Number of differing bits (popcount of the XOR).
#[inline]
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// Fingerprint of one HTML document without a host template (convenience
/// for the CLI and tests).
pub fn fingerprint_html(html: &str, fx: &FeatureExtractor) -> u64 {
    let doc = extract::extract_html(html, fx.max_text_bytes());
    simhash(&fx.features(&doc, None))
}

/// The 16 lowercase hex digits of a fingerprint (the file contract).
pub fn to_hex(fp: u64) -> String {
    format!("{fp:016x}")
}

/// Parses 16 hex digits (either case) into a fingerprint.
pub fn from_hex(s: &str) -> Option<u64> {
    let s = s.trim();
    if s.len() != 16 {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

/// File name extensions fingerprinted when walking a directory (files named
/// on the command line are always read).
const EXTENSIONS: &[&str] = &["html", "htm", "xhtml", "shtml", "txt", "text", "md"];

/// Bytes read from one file by `fingerprint`, `near` and `eval`; the rest
/// of a larger file is ignored (like a crawl's `max_body_bytes`).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// Files found under `paths`, in a stable order: each argument in turn;
/// directories recurse in byte order of names, keeping regular files (or
/// symbolic links to regular files) with an extension in [`EXTENSIONS`].
/// Symbolic links to directories are not followed, so a link loop
/// (`ln -s . loop`) lists nothing twice; devices, pipes and sockets are
/// skipped. A path named here must be a directory or a regular file.
pub fn collect_files(paths: &[PathBuf]) -> crate::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p)
            .map_err(|e| crate::Error::InvalidInput(format!("{}: cannot read: {}", p.display(), e.kind())))?;
        if meta.is_dir() {
            walk_dir(p, &mut out)?;
        } else if meta.is_file() {
            out.push(p.clone());
        } else {
            return Err(crate::Error::InvalidInput(format!(
                "{}: not a regular file or directory",
                p.display()
            )));
        }
    }
    Ok(out)
}

fn walk_dir(dir: &Path, out: &mut Vec<PathBuf>) -> crate::Result<()> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let mut entries: Vec<(PathBuf, std::fs::FileType)> = std::fs::read_dir(&d)
            .map_err(|e| crate::Error::io(&d, e))?
            .filter_map(|e| e.ok().and_then(|e| e.file_type().ok().map(|t| (e.path(), t))))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut subdirs = Vec::new();
        for (e, kind) in entries {
            // `file_type` does not follow symbolic links: a link counts only
            // when it points at a regular file.
            let regular = kind.is_file() || (kind.is_symlink() && std::fs::metadata(&e).is_ok_and(|m| m.is_file()));
            if kind.is_dir() {
                subdirs.push(e);
            } else if regular
                && e.extension()
                    .and_then(|x| x.to_str())
                    .is_some_and(|x| EXTENSIONS.iter().any(|k| x.eq_ignore_ascii_case(k)))
            {
                out.push(e);
            }
        }
        // Depth-first in name order: push in reverse.
        stack.extend(subdirs.into_iter().rev());
    }
    Ok(())
}

/// Reads and extracts one file: HTML when its name ends in .htm(l)/.xhtml or
/// its first non-blank byte is `<`, plain text otherwise. Bytes that are not
/// UTF-8 are replaced (U+FFFD). Only a regular file is read, and at most
/// [`MAX_FILE_BYTES`] of it.
pub fn extract_file(path: &Path, max_text_bytes: usize) -> crate::Result<Extracted> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| crate::Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| crate::Error::io(path, e))?;
    if !meta.is_file() {
        return Err(crate::Error::InvalidInput(format!(
            "{}: not a regular file",
            path.display()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len().min(MAX_FILE_BYTES) as usize);
    file.take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| crate::Error::io(path, e))?;
    let text = String::from_utf8_lossy(&bytes);
    let by_name = path.extension().and_then(|x| x.to_str()).is_some_and(|x| {
        ["html", "htm", "xhtml", "shtml"]
            .iter()
            .any(|k| x.eq_ignore_ascii_case(k))
    });
    Ok(if by_name || extract::looks_like_html(&bytes) {
        extract::extract_html(&text, max_text_bytes)
    } else {
        extract::extract_plain(&text, max_text_bytes)
    })
}

/// The "host" of a file for template learning: its parent directory.
fn file_host(path: &Path) -> String {
    path.parent()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// What `simcrawl fingerprint` did: files written and files that failed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FingerprintRun {
    /// Files fingerprinted.
    pub ok: usize,
    /// Files that could not be read (reported on `err`).
    pub failed: usize,
}

/// `simcrawl fingerprint [--features] PATH...`: writes
/// `<16 hex digits>\t<path>` per file to `out` (or, with `top = Some(n)`, the
/// path followed by its `n` heaviest features as `weight\tfeature` lines).
///
/// Two passes: the first extracts every file and, when
/// `features.template_learning` is on, learns one template per directory
/// (the directory plays the role of a crawl's host); the second fingerprints
/// every file against its directory's template. A file that cannot be read
/// is reported on `err` and skipped.
pub fn fingerprint_paths(
    paths: &[PathBuf],
    settings: &FeatureSettings,
    top: Option<usize>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> crate::Result<FingerprintRun> {
    let files = collect_files(paths)?;
    let fx = FeatureExtractor::new(settings).with_labels(top.is_some());
    let learner = TemplateLearner::new(settings);
    let mut docs = Vec::with_capacity(files.len());
    let mut run = FingerprintRun::default();
    for f in files {
        match extract_file(&f, settings.max_text_bytes) {
            Ok(doc) => {
                learner.observe(&file_host(&f), &doc);
                docs.push((f, doc));
            }
            Err(e) => {
                run.failed += 1;
                let _ = writeln!(err, "simcrawl: {e}");
            }
        }
    }
    let io = |e: std::io::Error| crate::Error::io("<stdout>", e);
    for (path, doc) in &docs {
        let template = learner.template(&file_host(path));
        let feats = fx.features(doc, template.as_ref());
        match top {
            None => writeln!(out, "{}\t{}", to_hex(simhash(&feats)), path.display()).map_err(io)?,
            Some(n) => {
                writeln!(out, "{}\t{}", to_hex(simhash(&feats)), path.display()).map_err(io)?;
                for (label, w) in feats.top(n) {
                    writeln!(out, "  {w:8.3}\t{label}").map_err(io)?;
                }
            }
        }
        run.ok += 1;
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The quick rounding equals `round` on every positive finite `f32`
        /// (any bit pattern, and values near halves).
        #[test]
        fn round_positive_equals_round(bits in 0u32..0x7f80_0000, n in 0u32..20_000_000) {
            let x = f32::from_bits(bits);
            if x > 0.0 {
                prop_assert_eq!(round_positive(x), x.round() as i64);
            }
            for y in [n as f32 + 0.5, n as f32 + 0.499_999_97, f32::from_bits((n as f32 + 0.5).to_bits() + 1)] {
                if y > 0.0 {
                    prop_assert_eq!(round_positive(y), y.round() as i64, "{}", y);
                }
            }
        }
    }

    #[test]
    fn round_positive_examples() {
        for (x, q) in [
            (0.25f32, 0i64),
            (0.5, 1),
            (0.499_999_97, 0),
            (1.5, 2),
            (2.5, 3),
            (8_388_607.5, 8_388_608),
            (1e20, 1e20 as i64),
        ] {
            assert_eq!(round_positive(x), q, "{x}");
        }
    }

    proptest! {
        #[test]
        fn fnv_state_continues_over_concatenation(a in ".{0,20}", b in ".{0,20}") {
            let joined = format!("{a}{b}");
            let state = fnv1a_continue(fnv1a_continue(FNV1A_OFFSET, a.as_bytes()), b.as_bytes());
            prop_assert_eq!(fmix64(state), feature_hash(joined.as_bytes()));
        }
    }

    #[test]
    fn feature_hash_is_fixed() {
        // Pinned values, computed by an independent Python implementation of
        // the documented definition. A change here changes every stored
        // fingerprint.
        assert_eq!(feature_hash(b""), 0xefd0_1f60_ba99_2926);
        assert_eq!(feature_hash(b"a"), 0x82a2_a958_a9be_ce5b);
        assert_eq!(feature_hash(b"simhash"), 0x91be_d202_841f_2537);
        assert_eq!(feature_hash(b"web crawl"), 0xb889_f4f1_a5c1_45da);
    }

    #[test]
    fn simhash_matches_the_definition() {
        // One feature: the fingerprint is the feature's hash.
        let h = feature_hash(b"x");
        assert_eq!(simhash_items(&[(h, 1.0)]), h);
        // Two features of different weight: the heavier wins every bit.
        let g = feature_hash(b"y");
        assert_eq!(simhash_items(&[(h, 1.0), (g, 2.0)]), g);
        // Equal weights: bits where they agree keep the value; where they
        // disagree V = 0, which is >= 0, so 1.
        assert_eq!(simhash_items(&[(h, 1.0), (g, 1.0)]), (h & g) | (h ^ g));
        assert_eq!(simhash_items(&[]), u64::MAX);
        assert_eq!(hamming(0, u64::MAX), 64);
        assert_eq!(hamming(0b1011, 0b0001), 2);
        assert_eq!(from_hex(&to_hex(0x00ab_cdef_0123_4567)), Some(0x00ab_cdef_0123_4567));
        assert_eq!(to_hex(0xab), "00000000000000ab");
    }

    #[test]
    fn same_page_under_alias_urls_gets_the_same_fingerprint() {
        // What differs between a page's URLs (session ids and tracking
        // parameters in its own links, its canonical, its base) is not a
        // feature: hrefs are never hashed, only visible text.
        let page = |sid: &str, base: &str| {
            format!(
                "<html><head><title>Widgets</title><base href='{base}'><link rel=canonical href='{base}w?sid={sid}'>\
                 </head><body><nav><a href='/?sid={sid}'>Home</a></nav><h1>Blue widgets</h1><p>Blue widgets are \
                 <a href='/w/blue?sid={sid}&utm_source=x'>cheap</a> and sturdy.</p></body></html>"
            )
        };
        let st = crate::Settings::from_layers(&[], &[]).expect("defaults").features;
        let fx = FeatureExtractor::new(&st);
        let fps: Vec<u64> = [
            ("a1", "http://shop.test/"),
            ("zz9", "http://shop.test/index.html"),
            ("", "https://SHOP.test:443/"),
        ]
        .iter()
        .map(|(sid, base)| fingerprint_html(&page(sid, base), &fx))
        .collect();
        assert!(fps.iter().all(|&f| f == fps[0]), "{fps:x?}");
        // ...and the run is deterministic: a fresh extractor gives the same.
        assert_eq!(
            fingerprint_html(&page("a1", "http://shop.test/"), &FeatureExtractor::new(&st)),
            fps[0]
        );
    }

    #[test]
    fn cli_walks_directories_in_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sub = dir.path().join("site");
        std::fs::create_dir(&sub).expect("mkdir");
        std::fs::write(sub.join("b.html"), "<p>second page about crawling</p>").expect("write");
        std::fs::write(sub.join("a.txt"), "first page about robots").expect("write");
        std::fs::write(sub.join("skip.bin"), [0u8, 1, 2]).expect("write");
        let st = crate::Settings::from_layers(&[], &[]).expect("defaults").features;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let run = fingerprint_paths(&[dir.path().to_path_buf()], &st, None, &mut out, &mut err).expect("run");
        assert_eq!(run, FingerprintRun { ok: 2, failed: 0 });
        let out = String::from_utf8(out).expect("utf8");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].ends_with("a.txt") && lines[1].ends_with("b.html"), "{out}");
        assert!(lines.iter().all(|l| from_hex(&l[..16]).is_some() && &l[16..17] == "\t"));
    }

    /// Brute-force oracle: V in f64 by the paper's words.
    fn oracle(items: &[(u64, f32)]) -> u64 {
        let mut v = [0i64; 64];
        for &(h, w) in items {
            let q = (w * WEIGHT_SCALE).round() as i64;
            for (i, vi) in v.iter_mut().enumerate() {
                if h >> i & 1 == 1 {
                    *vi += q;
                } else {
                    *vi -= q;
                }
            }
        }
        (0..64).filter(|&i| v[i] >= 0).fold(0u64, |fp, i| fp | 1 << i)
    }

    proptest! {
        #[test]
        fn simhash_equals_oracle_and_ignores_order(
            mut items in proptest::collection::vec((any::<u64>(), 0.01f32..50.0), 0..40)
        ) {
            let fp = simhash_items(&items);
            prop_assert_eq!(fp, oracle(&items));
            items.reverse();
            prop_assert_eq!(simhash_items(&items), fp);
        }

        #[test]
        fn hamming_is_popcount(a in any::<u64>(), b in any::<u64>()) {
            let naive = (0..64).filter(|i| (a >> i & 1) != (b >> i & 1)).count() as u32;
            prop_assert_eq!(hamming(a, b), naive);
        }
    }
}

#[cfg(all(test, unix))]
mod hostile_tree_tests {
    use super::*;

    /// Directory link loops list each file once; links to devices are
    /// skipped; a device named on the command line is refused.
    #[test]
    fn hostile_tree_symlink_loops_and_devices() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("a.txt"), "alpha beta gamma").unwrap();
        std::fs::write(root.join("sub/b.html"), "<p>delta</p>").unwrap();
        std::os::unix::fs::symlink(".", root.join("loop")).unwrap();
        std::os::unix::fs::symlink("..", root.join("sub/up")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", root.join("zero.txt")).unwrap();
        std::os::unix::fs::symlink(root.join("a.txt"), root.join("link.txt")).unwrap();
        let files = collect_files(&[root.to_path_buf()]).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|f| f.strip_prefix(root).unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.txt", "link.txt", "sub/b.html"]);
        assert!(collect_files(&[PathBuf::from("/dev/zero")]).is_err());
        assert!(extract_file(Path::new("/dev/zero"), 1 << 20).is_err());
        assert!(extract_file(&root.join("zero.txt"), 1 << 20).is_err());
    }
}
