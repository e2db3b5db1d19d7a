#!/usr/bin/env python3
"""Score a crawl's own near-duplicate decisions against the real-web truth.

Usage: score.py --truth DATA_DIR/truth --crawl CRAWL_DIR [--json]
                [--sites DATA_DIR/sites.tsv] [--mirrors DATA_DIR/mirrors.tsv]

Reads CRAWL_DIR/pages.jsonl in line order (the order of decisions) and the
truth written by truth.py. A record's page is the one at its `final_url`
(else `canonical`); URLs are compared by host:port and percent-decoded path,
a final index.html/index.htm folded into its directory (as the crawler's
canonical form does), query and fragment dropped. Records whose page is not
in the truth (not an .html/.htm file, or not served with 200) are counted
apart and take no part.

- precision: among `near_duplicate` records, the share whose `dup_of` page
  has the same body (SHA-256) or main-content Jaccard >= 0.8 with it. The
  same with full-text Jaccard is printed for reference.
- recall: among fetched pages (new, exact_duplicate, near_duplicate) that
  have an earlier-decided fetched page at main-content J >= 0.9 and no
  earlier fetched page with the same body bytes, the share decided
  `near_duplicate` or `exact_duplicate`.
- mirror check: CRAWL_DIR/reports/mirrors.json against DATA_DIR/mirrors.tsv.

Breakdowns by site and by main-content length (words) show which class of
page fails. --json prints one summary line instead of the text report.
"""

import argparse
import json
import os
import sys
from collections import Counter, defaultdict
from urllib.parse import unquote, urlsplit

import numpy as np

NEAR_T = 0.8  # precision: dup_of must be at least this close
RECALL_T = 0.9  # recall: pages with an earlier page at least this close
FETCHED = ("new", "exact_duplicate", "near_duplicate")
LENGTH_BUCKETS = ((0, 0, "0 words"), (1, 49, "1-49"), (50, 199, "50-199"), (200, 999, "200-999"), (1000, 10**12, ">=1000"))


def norm(url):
    p = urlsplit(url)
    path = unquote(p.path) or "/"
    head, _, last = path.rpartition("/")
    if last in ("index.html", "index.htm"):
        path = head + "/"
    return f"{(p.hostname or '').lower()}:{p.port or 80}{path}"


def bucket(words):
    for lo, hi, name in LENGTH_BUCKETS:
        if lo <= words <= hi:
            return name
    return "?"


class Truth:
    def __init__(self, d):
        self.urls, self.site, self.sha, self.main_words, self.full_words = [], [], [], [], []
        with open(os.path.join(d, "pages.tsv"), encoding="utf-8") as f:
            f.readline()
            for line in f:
                url, site, sha, mw, fw = line.rstrip("\n").split("\t")
                self.urls.append(url)
                self.site.append(site)
                self.sha.append(sha)
                self.main_words.append(int(mw))
                self.full_words.append(int(fw))
        self.index = {norm(u): i for i, u in enumerate(self.urls)}
        self.sets = {}
        for name in ("main", "full"):
            off = np.fromfile(os.path.join(d, f"{name}.offsets"), dtype=np.int64)
            sh = np.fromfile(os.path.join(d, f"{name}.shingles"), dtype=np.uint64)
            self.sets[name] = (off, sh)
        # Main-content neighbours at J >= RECALL_T (the recall denominator).
        self.near90 = defaultdict(list)
        with open(os.path.join(d, "pairs-main.tsv"), encoding="utf-8") as f:
            f.readline()
            for line in f:
                a, b, j = line.rstrip("\n").split("\t")
                if float(j) >= RECALL_T:
                    ia, ib = self.index[norm(a)], self.index[norm(b)]
                    self.near90[ia].append(ib)
                    self.near90[ib].append(ia)

    def shingles(self, name, i):
        off, sh = self.sets[name]
        return sh[off[i]:off[i + 1]]

    def jaccard(self, name, i, j):
        a, b = self.shingles(name, i), self.shingles(name, j)
        if len(a) == 0 or len(b) == 0:
            return 0.0
        o = np.intersect1d(a, b, assume_unique=True).size
        return o / (len(a) + len(b) - o)


def page_url(rec):
    return rec.get("final_url") or rec.get("canonical") or rec.get("url")


def ratio(a, b):
    return a / b if b else float("nan")


def score(truth, crawl_dir):
    recs = []
    with open(os.path.join(crawl_dir, "pages.jsonl"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                recs.append(json.loads(line))
    decisions = Counter(r["decision"] for r in recs)
    not_in_truth = Counter()
    prec = {"main": [0, 0], "full": [0, 0]}
    fps, tps = [], []
    fp_site, nd_site = Counter(), Counter()
    fp_len, nd_len = Counter(), Counter()
    dupof_missing = 0
    decided = set()
    earlier_sha = set()
    rec_total = rec_hit = 0
    miss_site, elig_site = Counter(), Counter()
    miss_len, elig_len = Counter(), Counter()
    misses = []
    recall_by_decision = Counter()
    seen_pages = set()
    for r in recs:
        dec = r["decision"]
        if dec not in FETCHED:
            continue
        i = truth.index.get(norm(page_url(r)))
        if i is None:
            not_in_truth[dec] += 1
            continue
        if i in seen_pages:  # the same truth page under a second URL form
            not_in_truth["repeat"] += 1
            continue
        seen_pages.add(i)
        site = truth.site[i]
        if dec == "near_duplicate":
            j = truth.index.get(norm(r.get("dup_of") or ""))
            if j is None:
                dupof_missing += 1
            else:
                same = truth.sha[i] == truth.sha[j]
                jm = truth.jaccard("main", i, j)
                jf = truth.jaccard("full", i, j)
                ok_main = same or jm >= NEAR_T
                ok_full = same or jf >= NEAR_T
                prec["main"][0] += ok_main
                prec["main"][1] += 1
                prec["full"][0] += ok_full
                prec["full"][1] += 1
                short = min(truth.main_words[i], truth.main_words[j])
                nd_site[site] += 1
                nd_len[bucket(short)] += 1
                item = (site, jm, jf, truth.main_words[i], truth.main_words[j], r.get("distance"),
                        truth.urls[i], truth.urls[j])
                if ok_main:
                    tps.append(item)
                else:
                    fps.append(item)
                    fp_site[site] += 1
                    fp_len[bucket(short)] += 1
        # Recall: an earlier page at J >= 0.9, no earlier exact copy.
        if any(n in decided for n in truth.near90.get(i, ())) and truth.sha[i] not in earlier_sha:
            rec_total += 1
            elig_site[site] += 1
            b = bucket(truth.main_words[i])
            elig_len[b] += 1
            recall_by_decision[dec] += 1
            if dec in ("near_duplicate", "exact_duplicate"):
                rec_hit += 1
            else:
                best = max(truth.jaccard("main", i, n) for n in truth.near90[i] if n in decided)
                misses.append((site, truth.main_words[i], best, truth.urls[i]))
                miss_site[site] += 1
                miss_len[b] += 1
        decided.add(i)
        earlier_sha.add(truth.sha[i])
    return {
        "records": len(recs),
        "decisions": dict(decisions),
        "not_in_truth": dict(not_in_truth),
        "near_duplicate_scored": prec["main"][1],
        "near_duplicate_dup_of_not_in_truth": dupof_missing,
        "precision": ratio(*prec["main"]),
        "precision_correct": prec["main"][0],
        "precision_full_text": ratio(*prec["full"]),
        "recall": ratio(rec_hit, rec_total),
        "recall_found": rec_hit,
        "recall_eligible": rec_total,
        "recall_eligible_by_decision": dict(recall_by_decision),
        "fp_by_site": dict(fp_site), "near_by_site": dict(nd_site),
        "fp_by_length": dict(fp_len), "near_by_length": dict(nd_len),
        "miss_by_site": dict(miss_site), "eligible_by_site": dict(elig_site),
        "miss_by_length": dict(miss_len), "eligible_by_length": dict(elig_len),
        "fp_by_main_j": dict(Counter(f"{min(int(it[1] * 10), 7) / 10:.1f}" for it in fps)),
        "coverage": {site: [sum(1 for i in seen_pages if truth.site[i] == site), n]
                     for site, n in Counter(truth.site).items()},
        "_fps": fps, "_misses": misses,
    }


def mirror_check(crawl_dir, mirrors_tsv, sites_tsv):
    names = {}
    if sites_tsv and os.path.exists(sites_tsv):
        with open(sites_tsv, encoding="utf-8") as f:
            f.readline()
            for line in f:
                c = line.rstrip("\n").split("\t")
                names[f"127.0.0.1:{c[0]}"] = c[1]
    true_sets = []
    with open(mirrors_tsv, encoding="utf-8") as f:
        f.readline()
        for line in f:
            c = line.rstrip("\n").split("\t")
            true_sets.append((c[0], frozenset(c[1].split(","))))
    set_of = {h: k for k, (_, hs) in enumerate(true_sets) for h in hs}

    def same_set(a, b):
        return a in set_of and set_of.get(a) == set_of.get(b)

    path = os.path.join(crawl_dir, "reports", "mirrors.json")
    rep = json.load(open(path, encoding="utf-8"))
    out = {"pairs": [], "sets": [], "missed_pairs": [], "missed_sets": []}
    covered = set()
    for kind_key in ("pairs", "implied"):
        for p in rep.get(kind_key, []):
            if p["kind"] not in ("full", "partial"):
                continue
            ok = same_set(p["host_a"], p["host_b"])
            if ok:
                covered.add(frozenset((p["host_a"], p["host_b"])))
            out["pairs"].append({
                "source": kind_key, "kind": p["kind"], "true": ok,
                "a": f"{p['host_a']}{p['prefix_a']}", "b": f"{p['host_b']}{p['prefix_b']}",
                "a_name": names.get(p["host_a"], "?"), "b_name": names.get(p["host_b"], "?"),
                "compared": p.get("compared"), "score": p.get("score"), "coverage": p.get("coverage"),
                "only_a": p.get("only_a"), "only_b": p.get("only_b"),
            })
    reported = []
    for s in rep.get("sets", []):
        hs = frozenset(s["hosts"])
        reported.append(hs)
        exact = any(hs == t for _, t in true_sets)
        within = any(hs <= t for _, t in true_sets)
        out["sets"].append({"hosts": sorted(hs), "names": [names.get(h, "?") for h in sorted(hs)],
                            "true": within, "complete": exact, "canonical": s.get("canonical")})
    for name, hs in true_sets:
        hl = sorted(hs)
        for x in range(len(hl)):
            for y in range(x + 1, len(hl)):
                if frozenset((hl[x], hl[y])) not in covered:
                    out["missed_pairs"].append(f"{names.get(hl[x], hl[x])} ~ {names.get(hl[y], hl[y])}")
        if hs not in reported:
            out["missed_sets"].append(name)
    out["pairs_reported"] = len(out["pairs"])
    out["pairs_false"] = sum(1 for p in out["pairs"] if not p["true"])
    out["sets_reported"] = len(out["sets"])
    out["sets_false"] = sum(1 for s in out["sets"] if not s["true"])
    return out


def fmt_ratio(n, d):
    return f"{n / d:.3f} ({n}/{d})" if d else f"- (0/0)"


def print_report(s, m, truth):
    print(f"records {s['records']}: " + ", ".join(f"{k} {v}" for k, v in sorted(s["decisions"].items(), key=lambda x: -x[1])))
    print(f"fetched pages not in the truth (excluded): {s['not_in_truth'] or 0}")
    crawled = sum(c for c, _ in s["coverage"].values())
    total = sum(n for _, n in s["coverage"].values())
    print(f"truth pages crawled: {crawled}/{total}; per site: "
          + ", ".join(f"{k} {c}/{n}" for k, (c, n) in s["coverage"].items()))
    n = s["near_duplicate_scored"]
    print(f"\nprecision (main content, same body or J>=0.8): {fmt_ratio(s['precision_correct'], n)}"
          f"   [dup_of not in truth: {s['near_duplicate_dup_of_not_in_truth']}]")
    print(f"precision (full text, for reference):          {s['precision_full_text']:.3f}")
    print(f"recall (earlier page at main J>=0.9, no earlier exact copy): {fmt_ratio(s['recall_found'], s['recall_eligible'])}"
          f"   eligible pages decided: {s['recall_eligible_by_decision']}")
    print("\nnear_duplicate decisions by site: false / all (precision)")
    for site, tot in sorted(s["near_by_site"].items(), key=lambda x: -s["fp_by_site"].get(x[0], 0)):
        fp = s["fp_by_site"].get(site, 0)
        print(f"  {site:<20} {fp:>6} / {tot:<6} {1 - fp / tot:.3f}")
    print("near_duplicate decisions by length (main words of the shorter page): false / all")
    for _, _, b in LENGTH_BUCKETS:
        tot = s["near_by_length"].get(b, 0)
        if tot:
            fp = s["fp_by_length"].get(b, 0)
            print(f"  {b:<10} {fp:>6} / {tot:<6} {1 - fp / tot:.3f}")
    hist = Counter(min(int(it[1] * 10), 7) for it in s["_fps"])
    print("false positives by main J: " + ", ".join(
        f"{'<0.1' if k == 0 else f'{k / 10:.1f}-{(k + 1) / 10:.1f}'} {hist[k]}" for k in range(8) if hist[k]))
    print("\nworst false positives (lowest main J), up to 4 per site: J_main J_full words(page, dup_of) distance")
    by_site = defaultdict(list)
    for it in sorted(s["_fps"], key=lambda x: x[1]):
        by_site[it[0]].append(it)
    for site, items in sorted(by_site.items(), key=lambda x: -len(x[1])):
        print(f"  {site} ({len(items)} false)")
        for site_, jm, jf, wa, wb, dist, ua, ub in items[:4]:
            print(f"    {jm:.3f} {jf:.3f} ({wa}, {wb}) d={dist}  {ua}  dup_of {ub}")
    print("\nmissed recall by site: missed / eligible")
    for site, tot in sorted(s["eligible_by_site"].items(), key=lambda x: -s["miss_by_site"].get(x[0], 0)):
        print(f"  {site:<20} {s['miss_by_site'].get(site, 0):>6} / {tot}")
    print("missed recall by length (main words): missed / eligible")
    for _, _, b in LENGTH_BUCKETS:
        tot = s["eligible_by_length"].get(b, 0)
        if tot:
            print(f"  {b:<10} {s['miss_by_length'].get(b, 0):>6} / {tot}")
    ms = defaultdict(list)
    for it in s["_misses"]:
        ms[it[0]].append(it)
    print("missed examples, up to 3 per site: words, best J to an earlier page, url")
    for site, items in sorted(ms.items(), key=lambda x: -len(x[1])):
        for _, w, j, u in items[:3]:
            print(f"  {site:<20} {w:>6} {j:.3f} {u}")
    if m is not None:
        print("\nmirror check (reports/mirrors.json vs mirrors.tsv)")
        for p in m["pairs"]:
            print(f"  {'TRUE ' if p['true'] else 'FALSE'} {p['source']:<7} {p['kind']:<7} {p['a_name']} {p['a']} ~ {p['b_name']} {p['b']}"
                  f"  compared {p['compared']} score {p['score']} coverage {p['coverage']} only_a {p['only_a']} only_b {p['only_b']}")
        for st in m["sets"]:
            tag = "TRUE " if st["true"] else "FALSE"
            print(f"  {tag} set {', '.join(st['names'])}{'' if st['complete'] or not st['true'] else ' (incomplete)'}  canonical {st['canonical']}")
        print(f"  missed true mirror pairs: {m['missed_pairs'] or 'none'}")
        print(f"  true mirror sets not reported whole: {m['missed_sets'] or 'none'}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--crawl", required=True)
    ap.add_argument("--sites", help="sites.tsv (default: next to the truth dir)")
    ap.add_argument("--mirrors", help="mirrors.tsv (default: next to the truth dir)")
    ap.add_argument("--json", action="store_true", help="one machine-readable summary line")
    a = ap.parse_args()
    base = os.path.dirname(os.path.abspath(a.truth))
    sites = a.sites or os.path.join(base, "sites.tsv")
    mirrors = a.mirrors or os.path.join(base, "mirrors.tsv")
    truth = Truth(a.truth)
    s = score(truth, a.crawl)
    m = None
    if os.path.exists(os.path.join(a.crawl, "reports", "mirrors.json")) and os.path.exists(mirrors):
        m = mirror_check(a.crawl, mirrors, sites)
    if a.json:
        out = {k: v for k, v in s.items() if not k.startswith("_")}
        if m is not None:
            out["mirrors"] = {k: m[k] for k in ("pairs_reported", "pairs_false", "sets_reported", "sets_false",
                                                "missed_pairs", "missed_sets")}
        print(json.dumps(out, sort_keys=True))
    else:
        print_report(s, m, truth)


if __name__ == "__main__":
    sys.exit(main())
