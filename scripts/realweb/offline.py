#!/usr/bin/env python3
"""Offline rows: the product's three offline near-duplicate
detectors run on the real-web corpus as files, scored on the same truth.

Usage: offline.py --data DATA_DIR --bin SIMCRAWL --out OUT_DIR
                  [--sites NAME,NAME,...] [--threads 16] [--refetch]
                  [--big-group 50] [--nice 10]

Run it with a Python that has numpy (DATA_DIR/venv/bin/python); nginx must
serve the corpus (corpus.sh start DATA_DIR).

1. Tree: every truth URL (DATA_DIR/truth/pages.tsv) is fetched over HTTP (so
   the banner mirror's injected text is present, as in the truth) and written
   to OUT_DIR/pages/<port>/<percent-decoded path>; OUT_DIR/pages.tsv maps
   file (relative to OUT_DIR/pages) -> truth URL. Each body's SHA-256 is
   checked against the truth. An existing complete tree is reused unless
   --refetch. --sites restricts everything (tree, detectors, truth pairs) to
   the named sites (sites.tsv column `name`).
2. Detectors (each under `nice` and /usr/bin/time -f "%e %M": wall seconds,
   peak RSS):
   - simhash: `simcrawl fingerprint OUT/pages > fps.txt` (template learning
     per directory, as the command does), the hex column cut to fps.hex, then
     `simcrawl hamming --fingerprints fps.hex --queries fps.hex -k K` for
     K = 0 and 3; self-join, so pairs of a line with itself are dropped and
     (q, f) / (f, q) count once. Time = fingerprint + hamming.
   - minhash and bloom: `simcrawl near --corpus OUT/pages --method M` with
     the default settings (pairs output: a, b, score).
3. Scores (unordered page pairs):
   - precision: share of predicted pairs whose two pages have the same body
     SHA-256 or main-content 5-shingle Jaccard >= 0.8 (membership in
     truth/pairs-main.tsv, which is the exact join at 0.8; a sample of the
     other pairs is re-checked with score.Truth.jaccard).
   - recall (all): share of truth pairs with main J >= 0.9 whose bodies differ
     (SHA-256) that the detector predicted.
   - recall (excl. big groups): the same, leaving out every pair with a page
     in a group of identical main content (the same main shingle set) of more
     than --big-group pages: such groups (e.g. pandas' meta-refresh stubs)
     contribute pairs quadratically and swamp the figure.
4. Writes OUT_DIR/offline.md (the table, definitions, commands) and
   OUT_DIR/offline.json, and prints the table.
"""

import argparse
import concurrent.futures as cf
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import score  # noqa: E402

NEAR_T = score.NEAR_T  # 0.8
RECALL_T = score.RECALL_T  # 0.9


def log(msg):
    print(f"[offline {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- tree


def rel_path(url):
    p = urllib.parse.urlsplit(url)
    path = urllib.parse.unquote(p.path)
    assert path.startswith("/") and not path.endswith("/"), url
    parts = [x for x in path.split("/") if x]
    assert all(x not in (".", "..") for x in parts), url
    return os.path.join(str(p.port), *parts)


def fetch(url):
    for attempt in range(3):
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, b""
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if attempt == 2:
                raise
            time.sleep(0.5)


def build_tree(truth, idx, out, threads, refetch):
    pages_dir = os.path.join(out, "pages")
    map_path = os.path.join(out, "pages.tsv")
    rels = [rel_path(truth.urls[i]) for i in idx]
    assert len(set(rels)) == len(rels), "two truth URLs map to the same file"
    if not refetch and os.path.exists(map_path):
        with open(map_path, encoding="utf-8") as f:
            have = [l.rstrip("\n").split("\t") for l in f.readlines()[1:]]
        if [h[1] for h in have] == [truth.urls[i] for i in idx] and all(
                os.path.isfile(os.path.join(pages_dir, r)) for r in rels):
            log(f"tree: reusing {pages_dir} ({len(rels)} files)")
            return {"files": len(rels), "reused": True, "sha_mismatch": None, "non200": None, "seconds": None}
    if os.path.exists(pages_dir):
        shutil.rmtree(pages_dir)
    t0 = time.time()
    bad_sha, non200 = [], []

    def one(k):
        i = idx[k]
        status, body = fetch(truth.urls[i])
        dst = os.path.join(pages_dir, rels[k])
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "wb") as f:
            f.write(body)
        return k, status, hashlib.sha256(body).hexdigest()

    with cf.ThreadPoolExecutor(max_workers=threads) as ex:
        for n, (k, status, sha) in enumerate(ex.map(one, range(len(idx)), chunksize=64)):
            i = idx[k]
            if status != 200:
                non200.append(truth.urls[i])
            elif sha != truth.sha[i]:
                bad_sha.append(truth.urls[i])
            if (n + 1) % 5000 == 0:
                log(f"tree: {n + 1}/{len(idx)} fetched")
    with open(map_path, "w", encoding="utf-8") as f:
        f.write("file\turl\n")
        for k, i in enumerate(idx):
            f.write(f"{rels[k]}\t{truth.urls[i]}\n")
    secs = time.time() - t0
    log(f"tree: {len(idx)} files in {secs:.1f} s; non-200 {len(non200)}, sha256 differs from truth {len(bad_sha)}")
    for u in (non200 + bad_sha)[:10]:
        log(f"  {u}")
    return {"files": len(idx), "reused": False, "sha_mismatch": len(bad_sha), "non200": len(non200),
            "seconds": round(secs, 1)}


# ---------------------------------------------------------------- runs


def timed(argv, stdout_path, out, tag, nice):
    """Run argv (under nice and /usr/bin/time when present) with stdout to a
    file; returns (wall seconds, peak RSS MB or None)."""
    time_path = os.path.join(out, f"{tag}.time")
    err_path = os.path.join(out, f"{tag}.stderr")
    full = list(argv)
    use_time = os.path.exists("/usr/bin/time")
    if use_time:
        full = ["/usr/bin/time", "-f", "%e %M", "-o", time_path] + full
    if nice:
        full = ["nice", "-n", str(nice)] + full
    log(f"run: {' '.join(shlex.quote(a) for a in argv)} > {stdout_path}")
    t0 = time.time()
    with open(stdout_path, "wb") as so, open(err_path, "wb") as se:
        rc = subprocess.call(full, stdout=so, stderr=se)
    wall = time.time() - t0
    rss = None
    if use_time and os.path.exists(time_path):
        last = open(time_path).read().strip().splitlines()[-1].split()
        try:
            wall, rss = float(last[0]), int(last[1]) / 1024
        except (ValueError, IndexError):
            pass
    errs = open(err_path, errors="replace").read().strip()
    if rc != 0:
        log(f"  exit {rc}; stderr: {errs[-2000:]}")
        if not os.path.getsize(stdout_path):
            raise SystemExit(f"{argv[1]} failed (exit {rc})")
    elif errs:
        log(f"  stderr: {errs[-500:]}")
    log(f"  {wall:.1f} s, peak RSS {rss if rss is None else round(rss)} MB")
    return wall, rss, rc


# ---------------------------------------------------------------- scoring


def pair_keys(a, b, n):
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keep = lo != hi
    return np.unique(lo[keep] * n + hi[keep])


class Scorer:
    def __init__(self, truth, idx, big_group):
        self.truth = truth
        self.n = len(truth.urls)
        n = self.n
        inset = np.zeros(n, dtype=bool)
        inset[idx] = True
        self.inset = inset
        shas = {}
        self.sha_id = np.array([shas.setdefault(s, len(shas)) for s in truth.sha], dtype=np.int64)
        # Groups of identical main content (the same main shingle set),
        # over the pages in the run.
        gid, groups = np.full(n, -1, dtype=np.int64), {}
        for i in idx:
            sh = truth.shingles("main", i)
            key = hashlib.blake2b(sh.tobytes(), digest_size=16).digest()
            gid[i] = groups.setdefault(key, len(groups))
        gsize = np.bincount(gid[gid >= 0])
        self.big_page = np.zeros(n, dtype=bool)
        self.big_page[inset] = gsize[gid[inset]] > big_group
        big = [(int(s), int(g)) for g, s in enumerate(gsize) if s > big_group]
        self.big_groups = []
        for s, g in sorted(big, reverse=True):
            first = int(np.flatnonzero(gid == g)[0])
            sites = Counter(truth.site[i] for i in np.flatnonzero(gid == g))
            self.big_groups.append({"pages": s, "example": truth.urls[first], "sites": dict(sites),
                                    "main_words": truth.main_words[first]})
        # Truth pairs from pairs-main.tsv (every pair at main J >= 0.8).
        a, b, j = [], [], []
        with open(os.path.join(truth_dir(truth), "pairs-main.tsv"), encoding="utf-8") as f:
            f.readline()
            for line in f:
                u, v, x = line.rstrip("\n").split("\t")
                a.append(truth.index[score.norm(u)])
                b.append(truth.index[score.norm(v)])
                j.append(float(x))
        a, b, j = np.array(a), np.array(b), np.array(j)
        both = inset[a] & inset[b]
        a, b, j = a[both], b[both], j[both]
        self.near80 = pair_keys(a, b, n)
        r = (j >= RECALL_T) & (self.sha_id[a] != self.sha_id[b])
        self.recall_all = pair_keys(a[r], b[r], n)
        lo, hi = self.recall_all // n, self.recall_all % n
        self.recall_excl = self.recall_all[~(self.big_page[lo] | self.big_page[hi])]
        log(f"truth: {int(inset.sum())} pages; pairs J>=0.8 {len(self.near80)}; recall pairs "
            f"(J>=0.9, bodies differ) {len(self.recall_all)}, excluding groups > {big_group}: "
            f"{len(self.recall_excl)}; {len(self.big_groups)} big groups")

    def score(self, keys):
        n = self.n
        lo, hi = keys // n, keys % n
        same = self.sha_id[lo] == self.sha_id[hi]
        near = np.isin(keys, self.near80, assume_unique=True)
        ok = same | near
        wrong = keys[~ok]
        # Cross-check: pairs outside pairs-main must be below 0.8 (sampled).
        rng = np.random.default_rng(22)
        sample = wrong if len(wrong) <= 2000 else rng.choice(wrong, 2000, replace=False)
        js = [self.truth.jaccard("main", int(k // n), int(k % n)) for k in sample]
        assert all(x < NEAR_T for x in js), "a pair outside pairs-main.tsv has main J >= 0.8"
        fp_sites = Counter(f"{self.truth.site[int(k // n)]}~{self.truth.site[int(k % n)]}" for k in wrong)
        hit_all = int(np.isin(self.recall_all, keys, assume_unique=True).sum())
        hit_excl = int(np.isin(self.recall_excl, keys, assume_unique=True).sum())
        in_big = self.big_page[lo] & self.big_page[hi]
        return {
            "pairs": int(len(keys)), "same_body": int(same.sum()), "correct": int(ok.sum()),
            "precision": float(ok.mean()) if len(keys) else float("nan"),
            "precision_excl": float(ok[~(self.big_page[lo] | self.big_page[hi])].mean())
            if (~(self.big_page[lo] | self.big_page[hi])).any() else float("nan"),
            "pairs_in_big_groups": int(in_big.sum()),
            "recall_all": hit_all / len(self.recall_all) if len(self.recall_all) else float("nan"),
            "recall_all_found": hit_all, "recall_all_eligible": int(len(self.recall_all)),
            "recall_excl": hit_excl / len(self.recall_excl) if len(self.recall_excl) else float("nan"),
            "recall_excl_found": hit_excl, "recall_excl_eligible": int(len(self.recall_excl)),
            "fp_main_j_sample": {f"{b / 10:.1f}": c for b, c in
                                 sorted(Counter(min(int(x * 10), 7) for x in js).items())},
            "fp_by_sites": dict(fp_sites.most_common(8)),
        }


def truth_dir(truth):
    return truth._dir


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--sites", help="comma-separated site names (default: all)")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--refetch", action="store_true")
    ap.add_argument("--big-group", type=int, default=50)
    ap.add_argument("--nice", type=int, default=10)
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    data = os.path.abspath(args.data)
    binp = os.path.abspath(args.bin)
    os.makedirs(out, exist_ok=True)
    t_start = time.time()

    log("loading truth")
    tdir = os.path.join(data, "truth")
    truth = score.Truth(tdir)
    truth._dir = tdir
    sites = set(args.sites.split(",")) if args.sites else None
    if sites:
        unknown = sites - set(truth.site)
        if unknown:
            raise SystemExit(f"--sites: unknown {sorted(unknown)}")
    idx = [i for i in range(len(truth.urls)) if sites is None or truth.site[i] in sites]

    tree = build_tree(truth, idx, out, args.threads, args.refetch)
    pages_dir = os.path.join(out, "pages")
    file_to_truth = {rel_path(truth.urls[i]): i for i in idx}
    scorer = Scorer(truth, idx, args.big_group)
    n = scorer.n

    rows = []
    # simhash: fingerprint, then hamming self-join at each k.
    fps_txt = os.path.join(out, "fps.txt")
    fp_wall, fp_rss, _ = timed([binp, "fingerprint", pages_dir], fps_txt, out, "fingerprint", args.nice)
    hexes, names = [], []
    with open(fps_txt, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            h, p = line.rstrip("\n").split("\t", 1)
            hexes.append(h)
            names.append(os.path.relpath(p, pages_dir))
    fps_hex = os.path.join(out, "fps.hex")
    with open(fps_hex, "w") as f:
        f.write("".join(h + "\n" for h in hexes))
    line_to_truth = np.array([file_to_truth[p] for p in names], dtype=np.int64)
    missing = len(idx) - len(set(names))
    if missing:
        log(f"fingerprint: {missing} files not fingerprinted")
    for k in (0, 3):
        hp = os.path.join(out, f"hamming-k{k}.tsv")
        h_wall, h_rss, _ = timed([binp, "hamming", "--fingerprints", fps_hex, "--queries", fps_hex, "-k", str(k)],
                                 hp, out, f"hamming-k{k}", args.nice)
        arr = np.fromfile(hp, dtype=np.int64, sep=" ").reshape(-1, 3)
        arr = arr[arr[:, 0] < arr[:, 1]]  # self-join: drop (q, q); (q, f) and (f, q) once
        keys = pair_keys(line_to_truth[arr[:, 0] - 1], line_to_truth[arr[:, 1] - 1], n)
        s = scorer.score(keys)
        s.update(detector="simhash", setting=f"k={k} (fingerprint + hamming)",
                 wall=fp_wall + h_wall, wall_detail=f"{fp_wall:.1f} + {h_wall:.1f}",
                 rss_mb=max(x for x in (fp_rss, h_rss) if x is not None) if fp_rss or h_rss else None,
                 command=f"$BIN fingerprint $OUT/pages > fps.txt; cut -f1 fps.txt > fps.hex; "
                         f"$BIN hamming --fingerprints fps.hex --queries fps.hex -k {k}")
        rows.append(s)
        log(f"simhash k={k}: {s['pairs']} pairs, precision {s['precision']:.3f}, "
            f"recall {s['recall_all']:.3f} / {s['recall_excl']:.3f}")

    for method in ("minhash", "bloom"):
        npth = os.path.join(out, f"near-{method}.tsv")
        wall, rss, _ = timed([binp, "near", "--corpus", pages_dir, "--method", method], npth, out,
                             f"near-{method}", args.nice)
        a, b = [], []
        with open(npth, encoding="utf-8", errors="surrogateescape") as f:
            for line in f:
                c = line.rstrip("\n").split("\t")
                a.append(file_to_truth[c[0]])
                b.append(file_to_truth[c[1]])
        keys = pair_keys(a, b, n)
        s = scorer.score(keys)
        setting = {"minhash": "defaults: 6 super-shingles of 14, >= 2 match",
                   "bloom": "defaults: CDC 256 B chunks, similarity >= 0.7"}[method]
        s.update(detector=method, setting=setting, wall=wall, wall_detail=f"{wall:.1f}", rss_mb=rss,
                 command=f"$BIN near --corpus $OUT/pages --method {method}")
        rows.append(s)
        log(f"{method}: {s['pairs']} pairs, precision {s['precision']:.3f}, "
            f"recall {s['recall_all']:.3f} / {s['recall_excl']:.3f}")

    md = render(rows, scorer, tree, args, out, binp, data, sites, len(idx))
    with open(os.path.join(out, "offline.md"), "w", encoding="utf-8") as f:
        f.write(md)
    with open(os.path.join(out, "offline.json"), "w", encoding="utf-8") as f:
        json.dump({"rows": rows, "big_groups": scorer.big_groups, "tree": tree, "pages": len(idx),
                   "sites": sorted(sites) if sites else "all"}, f, indent=1)
    print(md)
    log(f"done in {time.time() - t_start:.0f} s; wrote {out}/offline.md, offline.json")


def pct(x):
    return "n/a" if x != x else f"{x:.3f}"


def render(rows, sc, tree, args, out, binp, data, sites, npages):
    L = []
    L.append(f"## Offline detectors on the real-web corpus ({npages} pages, "
             f"{'all 22 sites' if not sites else 'sites ' + ', '.join(sorted(sites))})\n")
    L.append(f"`BIN={binp}`, `OUT={out}`; reproduce with\n")
    me = os.path.relpath(os.path.abspath(__file__), os.getcwd())
    L.append(f"    {data}/venv/bin/python {me} --data {data} --bin {binp} --out {out}"
             + (f" --sites {','.join(sorted(sites))}" if sites else "") + "\n")
    L.append("| detector | setting | predicted pairs | of which same body | precision | "
             f"recall, all (of {sc.recall_all.size}) | recall, excl. big groups (of {sc.recall_excl.size}) | "
             "wall s | peak RSS MB | command |")
    L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        rss = "?" if r["rss_mb"] is None else f"{r['rss_mb']:.0f}"
        L.append(f"| {r['detector']} | {r['setting']} | {r['pairs']} | {r['same_body']} | {pct(r['precision'])} | "
                 f"{pct(r['recall_all'])} ({r['recall_all_found']}) | {pct(r['recall_excl'])} "
                 f"({r['recall_excl_found']}) | {r['wall_detail']} | {rss} | `{r['command']}` |")
    L.append("")
    L.append("- Pairs are unordered page pairs; a hamming self-join's (q, q) and duplicate (f, q) lines are dropped.")
    L.append(f"- precision: share of predicted pairs with the same body SHA-256 or main-content 5-shingle "
             f"Jaccard >= {NEAR_T} (truth/pairs-main.tsv). Same-body pairs (mirrors) are counted correct, "
             f"so the column beside it shows how much of each set is exact copies.")
    L.append(f"- recall, all: share of truth pairs with main J >= {RECALL_T} and different body SHA-256 "
             f"that were predicted (found count in parentheses).")
    L.append(f"- recall, excl. big groups: the same, leaving out every pair with a page in a group of "
             f"identical main content (same main shingle set) of more than {args.big_group} pages; "
             f"those groups alone hold {sc.recall_all.size - sc.recall_excl.size} of the "
             f"{sc.recall_all.size} recall pairs.")
    L.append("- wall s: elapsed seconds (simhash: fingerprint + hamming), under `nice -n "
             f"{args.nice}` on a shared 2-core machine; peak RSS from /usr/bin/time (%M).")
    L.append("- `simcrawl fingerprint` learns one boilerplate template per directory (its stand-in for a host); "
             "`simcrawl near` sketches pages without templates. Both use the product's own extraction.")
    if tree.get("sha_mismatch"):
        L.append(f"- {tree['sha_mismatch']} fetched bodies differ from the truth's SHA-256.")
    L.append("")
    L.append(f"Groups of identical main content with more than {args.big_group} pages:\n")
    L.append("| pages | main words | sites | example |")
    L.append("|---:|---:|---|---|")
    for g in sc.big_groups[:20]:
        s = ", ".join(f"{k} {v}" for k, v in sorted(g["sites"].items(), key=lambda x: -x[1]))
        L.append(f"| {g['pages']} | {g['main_words']} | {s} | {g['example']} |")
    if len(sc.big_groups) > 20:
        L.append(f"| ... {len(sc.big_groups) - 20} more | | | |")
    L.append("")
    L.append("Precision excluding pairs that touch a big group, and the sites of false positives:\n")
    L.append("| detector | setting | precision excl. big groups | pairs inside big groups | top false-positive site pairs |")
    L.append("|---|---|---:|---:|---|")
    for r in rows:
        fps = ", ".join(f"{k} {v}" for k, v in list(r["fp_by_sites"].items())[:4])
        L.append(f"| {r['detector']} | {r['setting']} | {pct(r['precision_excl'])} | {r['pairs_in_big_groups']} | {fps} |")
    L.append("")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
