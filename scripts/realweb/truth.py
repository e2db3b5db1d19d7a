#!/usr/bin/env python3
"""Ground truth for the real-web corpus, independent of simcrawl.

Usage: truth.py DATA_DIR [--workers 2] [--threads 8] [--limit N]

Reads DATA_DIR/sites.tsv (written by corpus.sh build), enumerates every
*.html / *.htm file under each site's doc root, fetches it from nginx over
HTTP (so server-side changes such as the banner mirror's injected text are
part of the truth), and computes per page:

- the SHA-256 of the served body;
- the main content, by trafilatura (extract(include_comments=False,
  include_tables=True, favor_recall=True); None counts as empty): recall is
  favoured so that short reference pages keep their few sentences and tables
  instead of coming out empty;
- the full text: all visible text of <body> (lxml; script, style, noscript,
  template and comments dropped), for reference;
- lower-cased word tokens (re.findall(r"\\w+")) and their word 5-shingles
  (1-4 words: one shingle of all of them; no words: no shingles), each hashed
  to 64 bits (blake2b, digest_size=8).

Then an exact all-pairs Jaccard similarity join (prefix filtering, length
filter, exact verification; no sampling) at t = 0.8, for main content and
for full text separately, checked against 20 000 random pairs and 20 000
random same-path pairs on different sites scored exactly (seed 22).

Writes DATA_DIR/truth/:
  pages.tsv         url, site, sha256, main_words, full_words (one row per page)
  pairs-main.tsv    url_a, url_b, jaccard: every pair with main-content J >= 0.8
  pairs-full.tsv    the same for full text
  main.shingles, full.shingles   sorted uint64 shingle hashes of every page,
                    concatenated in pages.tsv order; main.offsets,
                    full.offsets: int64 start offsets (pages + 1 entries).
                    score.py computes J of any pair from them.
  summary.txt / summary.json     the summary printed at the end
"""

import argparse
import concurrent.futures as cf
import hashlib
import json
import multiprocessing as mp
import os
import random
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter, defaultdict

import numpy as np

THRESHOLD_NUM, THRESHOLD_DEN = 4, 5  # t = 0.8, kept as a fraction: no float rounding in the filters
SHINGLE = 5
SEED = 22
WORD = re.compile(r"\w+")
XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.I)
META_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([\w-]+)""", re.I)


# ---------------------------------------------------------------- enumeration

def read_sites(data_dir, focus_only=False):
    """The sites of DATA_DIR/sites.tsv: those of the near-duplicate truth, or
    with focus_only=True the focus-only ones (class `focus-only`)."""
    sites = []
    with open(os.path.join(data_dir, "sites.tsv"), encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            row = dict(zip(header, line.rstrip("\n").split("\t")))
            if ("focus-only" in row["class"].split(",")) == focus_only:
                sites.append(row)
    return sites


def html_files(root):
    """Relative paths of every .html/.htm file under root, following symlinks
    (a directory whose real path is one of its own ancestors' is skipped)."""
    out = []

    def walk(dir_path, rel, ancestors):
        try:
            entries = sorted(os.scandir(dir_path), key=lambda e: e.name)
        except OSError:
            return
        for e in entries:
            path = os.path.join(dir_path, e.name)
            r = rel + e.name
            try:
                if e.is_dir(follow_symlinks=True):
                    real = os.path.realpath(path)
                    if real in ancestors:
                        continue
                    walk(path, r + "/", ancestors | {real})
                elif e.is_file(follow_symlinks=True) and e.name.lower().endswith((".html", ".htm")):
                    out.append(r)
            except OSError:
                continue

    walk(root, "", frozenset([os.path.realpath(root)]))
    return out


def page_url(site, rel):
    """The URL nginx serves the file `rel` of a site (a sites.tsv row) at."""
    return f"http://127.0.0.1:{site['port']}/" + urllib.parse.quote(rel)


# ---------------------------------------------------------------- per page

def fetch(url):
    """(status, content-type, body); status 0 on a network error."""
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, "", b""
    except Exception:  # noqa: BLE001 - any failure means "not in the truth"
        return 0, "", b""


def decode(body, content_type):
    m = re.search(r"charset=([\w-]+)", content_type or "", re.I)
    enc = m.group(1) if m else None
    if not enc:
        m = META_CHARSET.search(body[:4096])
        enc = m.group(1).decode("ascii", "replace") if m else "utf-8"
    try:
        return body.decode(enc, errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


def full_text(html):
    """All visible text of <body>: every text node, joined by spaces."""
    import lxml.etree as etree
    import lxml.html

    try:
        root = lxml.html.document_fromstring(XML_DECL.sub("", html, count=1))
    except (etree.ParserError, ValueError):
        return ""
    for el in list(root.iter("script", "style", "noscript", "template", etree.Comment, etree.ProcessingInstruction)):
        if el.getparent() is not None:
            el.drop_tree()  # keeps the text that follows the element (its tail)
    body = root.find("body")
    node = body if body is not None else root
    return " ".join(t for t in node.itertext())


def tokens(text):
    return WORD.findall(text.lower())


def shingles(toks):
    """Sorted unique 64-bit hashes of the word 5-shingles."""
    if not toks:
        return np.zeros(0, dtype=np.uint64)
    if len(toks) < SHINGLE:
        grams = [" ".join(toks)]
    else:
        grams = [" ".join(toks[i:i + SHINGLE]) for i in range(len(toks) - SHINGLE + 1)]
    h = {int.from_bytes(hashlib.blake2b(g.encode("utf-8"), digest_size=8).digest(), "little") for g in grams}
    return np.array(sorted(h), dtype=np.uint64)


def analyse(item):
    """Worker: (body, content_type) -> sha256, word counts, shingle arrays."""
    import trafilatura

    body, ctype = item
    sha = hashlib.sha256(body).hexdigest()
    html = decode(body, ctype)
    try:
        main = trafilatura.extract(html, include_comments=False, include_tables=True, favor_recall=True) or ""
    except Exception:  # noqa: BLE001 - an extractor failure is an empty main content
        main = ""
    full = full_text(html)
    mt, ft = tokens(main), tokens(full)
    return sha, len(mt), len(ft), shingles(mt).tobytes(), shingles(ft).tobytes()


def worker_init():
    try:
        os.nice(10)
    except OSError:
        pass
    import logging

    logging.getLogger("trafilatura").setLevel(logging.CRITICAL)


# ---------------------------------------------------------------- the join

def ceil_t(n):
    """ceil(t * n) for t = THRESHOLD_NUM / THRESHOLD_DEN, in integers."""
    return -(-THRESHOLD_NUM * n // THRESHOLD_DEN)


def similarity_join(sets):
    """Exact all-pairs Jaccard join at t: {(i, j): J} for i < j, J >= t.

    Identical sets are grouped first (a mirror's copies and untranslated pages
    join once per distinct set); empty sets take part in no pair. Shingles are
    ranked by frequency over the distinct sets, rarest first; sets are processed
    by increasing size; a set probes the inverted index with its prefix of
    |x| - ceil(t|x|) + 1 rarest shingles, keeps candidates with
    |y| >= ceil(t|x|) (length filter), verifies each exactly, then adds its own
    prefix to the index. Any pair with J >= t shares a shingle in both prefixes,
    so no pair is missed.
    """
    groups = defaultdict(list)
    for i, s in enumerate(sets):
        if len(s):
            groups[hashlib.blake2b(s.tobytes(), digest_size=16).digest()].append(i)
    reps = [members[0] for members in groups.values()]
    members = list(groups.values())
    pairs = {}
    for ms in members:  # identical sets: J = 1
        for a in range(len(ms)):
            for b in range(a + 1, len(ms)):
                pairs[(ms[a], ms[b])] = 1.0
    if not reps:
        return pairs, {"distinct": 0, "candidates": 0}
    sizes = np.array([len(sets[r]) for r in reps], dtype=np.int64)
    concat = np.concatenate([sets[r] for r in reps])
    uniq, inverse, counts = np.unique(concat, return_inverse=True, return_counts=True)
    order = np.lexsort((uniq, counts))  # rarest first, ties by hash
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq))
    ranked = rank[inverse]
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    rsets = [np.sort(ranked[bounds[k]:bounds[k + 1]]) for k in range(len(reps))]
    index = defaultdict(list)
    candidates = 0
    for k in sorted(range(len(reps)), key=lambda k: sizes[k]):
        x = rsets[k]
        n = len(x)
        min_size = ceil_t(n)
        p = n - min_size + 1
        prefix = x[:p].tolist()
        cand = set()
        for tok in prefix:
            lst = index.get(tok)
            if lst:
                for y in lst:
                    if sizes[y] >= min_size:
                        cand.add(y)
        candidates += len(cand)
        for y in cand:
            m = int(sizes[y])
            o = int(np.intersect1d(x, rsets[y], assume_unique=True).size)
            union = n + m - o
            if THRESHOLD_DEN * o >= THRESHOLD_NUM * union:
                j = o / union
                for a in members[k]:
                    for b in members[y]:
                        pairs[(min(a, b), max(a, b))] = j
        for tok in prefix:
            index[tok].append(k)
    return pairs, {"distinct": len(reps), "candidates": candidates}


def jaccard(a, b):
    if len(a) == 0 or len(b) == 0:
        return 0.0
    o = np.intersect1d(a, b, assume_unique=True).size
    return o / (len(a) + len(b) - o)


def check_join(sets, pairs, urls, rel_of, rng):
    """Score random pairs exactly; count pairs with J >= t the join missed."""
    n = len(sets)
    out = {}
    samples = {"random": [], "same_path": []}
    for _ in range(20000):
        i, j = rng.randrange(n), rng.randrange(n)
        if i != j:
            samples["random"].append((min(i, j), max(i, j)))
    by_rel = defaultdict(list)
    for i in range(n):
        by_rel[rel_of[i]].append(i)
    multi = [v for v in by_rel.values() if len(v) > 1]
    for _ in range(20000 if multi else 0):
        v = rng.choice(multi)
        i, j = rng.sample(v, 2)
        samples["same_path"].append((min(i, j), max(i, j)))
    for name, sample in samples.items():
        hits = missed = 0
        for i, j in sample:
            a, b = sets[i], sets[j]
            if len(a) and len(b) and THRESHOLD_DEN * np.intersect1d(a, b, assume_unique=True).size >= THRESHOLD_NUM * (
                len(a) + len(b) - np.intersect1d(a, b, assume_unique=True).size
            ):
                hits += 1
                if (i, j) not in pairs:
                    missed += 1
                    print(f"  MISSED by the join: {urls[i]} {urls[j]} J={jaccard(a, b):.4f}", file=sys.stderr)
        out[name] = {"scored": len(sample), "at_or_above_t": hits, "missed": missed}
    return out


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data_dir")
    ap.add_argument("--workers", type=int, default=2, help="extraction processes")
    ap.add_argument("--threads", type=int, default=8, help="fetch threads")
    ap.add_argument("--limit", type=int, default=0, help="pages per site (0 = all; for trials)")
    args = ap.parse_args()
    t0 = time.time()
    data = os.path.abspath(args.data_dir)
    out_dir = os.path.join(data, "truth")
    os.makedirs(out_dir, exist_ok=True)

    jobs = []  # (site, url, rel)
    for s in read_sites(data):
        files = html_files(s["root"])
        if args.limit:
            files = files[: args.limit]
        for rel in files:
            jobs.append((s["name"], page_url(s, rel), rel))
    print(f"{len(jobs)} HTML files under {len(set(j[0] for j in jobs))} doc roots", file=sys.stderr)

    rows, main_sets, full_sets, rels = [], [], [], []
    skipped = Counter()
    chunk = 1000
    t_fetch = t_extract = 0.0
    ctx = mp.get_context("fork")
    with cf.ThreadPoolExecutor(args.threads) as tp, ctx.Pool(args.workers, initializer=worker_init) as pp:
        for c in range(0, len(jobs), chunk):
            part = jobs[c : c + chunk]
            t1 = time.time()
            fetched = list(tp.map(lambda j: fetch(j[1]), part))
            t2 = time.time()
            ok = [(job, f) for job, f in zip(part, fetched) if f[0] == 200]
            for job, f in zip(part, fetched):
                if f[0] != 200:
                    skipped[(job[0], f[0])] += 1
            results = pp.map(analyse, [(f[2], f[1]) for _, f in ok], chunksize=8)
            t3 = time.time()
            t_fetch += t2 - t1
            t_extract += t3 - t2
            for (job, _), (sha, nm, nf, ms, fs) in zip(ok, results):
                rows.append((job[1], job[0], sha, nm, nf))
                rels.append(job[2])
                main_sets.append(np.frombuffer(ms, dtype=np.uint64))
                full_sets.append(np.frombuffer(fs, dtype=np.uint64))
            print(f"  {min(c + chunk, len(jobs))}/{len(jobs)} pages, {time.time() - t0:.0f} s", file=sys.stderr)

    urls = [r[0] for r in rows]
    with open(os.path.join(out_dir, "pages.tsv"), "w", encoding="utf-8") as f:
        f.write("url\tsite\tsha256\tmain_words\tfull_words\n")
        for r in rows:
            f.write("\t".join(map(str, r)) + "\n")
    for name, sets in (("main", main_sets), ("full", full_sets)):
        offsets = np.concatenate([[0], np.cumsum([len(s) for s in sets])]).astype(np.int64)
        offsets.tofile(os.path.join(out_dir, f"{name}.offsets"))
        (np.concatenate(sets) if sets else np.zeros(0, np.uint64)).astype(np.uint64).tofile(
            os.path.join(out_dir, f"{name}.shingles")
        )

    summary = {"pages": len(rows), "skipped": {f"{s}:{st}": n for (s, st), n in skipped.items()},
               "fetch_s": round(t_fetch, 1), "extract_s": round(t_extract, 1), "join": {}}
    # Same body bytes is a stronger fact than J; counted for reference.
    rng = random.Random(SEED)
    for name, sets in (("main", main_sets), ("full", full_sets)):
        t1 = time.time()
        pairs, stats = similarity_join(sets)
        t2 = time.time()
        with open(os.path.join(out_dir, f"pairs-{name}.tsv"), "w", encoding="utf-8") as f:
            f.write("url_a\turl_b\tjaccard\n")
            for (i, j), jv in sorted(pairs.items()):
                f.write(f"{urls[i]}\t{urls[j]}\t{jv:.6f}\n")
        check = check_join(sets, pairs, urls, rels, rng)
        site = [r[1] for r in rows]
        cross = sum(1 for (i, j) in pairs if site[i] != site[j])
        summary["join"][name] = {
            "pairs_0.8": len(pairs),
            "pairs_0.9": sum(1 for v in pairs.values() if v >= 0.9),
            "pairs_1.0": sum(1 for v in pairs.values() if v >= 1.0),
            "cross_site_0.8": cross,
            "empty_pages": sum(1 for s in sets if len(s) == 0),
            "distinct_sets": stats["distinct"],
            "candidates_verified": stats["candidates"],
            "join_s": round(t2 - t1, 1),
            "check": check,
        }

    per_site = Counter(r[1] for r in rows)
    empty_main = Counter(r[1] for r in rows if r[3] == 0)
    words = defaultdict(list)
    for r in rows:
        words[r[1]].append(r[3])
    summary["sites"] = {s: {"pages": per_site[s], "empty_main": empty_main[s],
                            "median_main_words": int(np.median(words[s]))} for s in per_site}
    summary["total_s"] = round(time.time() - t0, 1)

    lines = [f"truth: {len(rows)} pages, {sum(skipped.values())} skipped (non-200), {summary['total_s']} s "
             f"(fetch {summary['fetch_s']} s, extraction {summary['extract_s']} s)"]
    lines.append(f"{'site':<20} {'pages':>6} {'empty main':>10} {'median main words':>18}")
    for s in per_site:
        d = summary["sites"][s]
        lines.append(f"{s:<20} {d['pages']:>6} {d['empty_main']:>10} {d['median_main_words']:>18}")
    for name, d in summary["join"].items():
        lines.append(
            f"{name:>4}: pairs J>=0.8 {d['pairs_0.8']}, J>=0.9 {d['pairs_0.9']}, J=1 {d['pairs_1.0']}, "
            f"cross-site {d['cross_site_0.8']}; {d['distinct_sets']} distinct non-empty sets, "
            f"{d['empty_pages']} empty; {d['candidates_verified']} candidates verified in {d['join_s']} s; "
            + "; ".join(f"check {k}: {v['scored']} pairs, {v['at_or_above_t']} at J>=0.8, {v['missed']} missed"
                        for k, v in d["check"].items())
        )
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(out_dir, "summary.txt"), "w", encoding="utf-8") as f:
        f.write(text + "\n")
    with open(os.path.join(out_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    missed = sum(v["missed"] for d in summary["join"].values() for v in d["check"].values())
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
