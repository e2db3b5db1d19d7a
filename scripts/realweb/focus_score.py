#!/usr/bin/env python3
"""Harvest rate of crawls against an on-topic truth (focus_truth.py topics).

Usage: focus_score.py --truth DATA_DIR/focus/truth-NAME.txt --pages N
                      [--mirrors DATA_DIR/mirrors.tsv] [--json]
                      LABEL=CRAWL_DIR [LABEL=CRAWL_DIR ...]

A crawl's first N records of pages.jsonl (every fetch attempt, in log
order; robots.txt fetches are not records) are its pages. A page is
on-topic when its URL, canonical URL or final URL is in the truth file.
Prints, per crawl: the harvest rate over the N pages, over the first half,
the on-topic pages found, and the cumulative harvest curve at tenths of N;
then the ratio of each crawl's rate to the first crawl's. The distinct
harvest rate counts only on-topic records decided `new` (not an exact or
near duplicate of a page fetched before): the truth lists every copy of a
mirrored page, and a crawl that skips copies on purpose finds fewer.

The ceiling is the ratio to the first crawl's on-topic records that a
crawl would reach if it fetched every distinct on-topic page of the truth
once within its N fetches and no copy of one: distinct counts the
truth's URLs with the copies of a page on the hosts of one mirror set
(`--mirrors`, the same path) as one.

For a crawl whose records carry `relevance` (a focused crawl), how well
its page judgement ranks the truth's pages among its records decided
`new`: the ROC AUC, and the precision at k, k = the on-topic ones.
"""

import argparse
import json
import os


def load_truth(path):
    with open(path, encoding="utf-8") as f:
        return {line.strip() for line in f if line.strip()}


def distinct_pages(truth, mirrors_tsv):
    """The truth's URLs with the copies of a page on one mirror set's hosts
    (mirrors.tsv: set, comma-separated host:port list, kind) counted once."""
    canon = {}
    if mirrors_tsv:
        with open(mirrors_tsv, encoding="utf-8") as f:
            next(f, None)
            for line in f:
                hosts = line.rstrip("\n").split("\t")[1].split(",")
                for h in hosts:
                    canon[h] = hosts[0]
    keys = set()
    for u in truth:
        rest = u.split("://", 1)[-1]
        host, _, path = rest.partition("/")
        keys.add((canon.get(host, host), path))
    return len(keys)


def judgement(scored):
    """ROC AUC and precision at k (k = the on-topic pages) of the crawl's page
    relevance over (relevance, on-topic) pairs; None without relevance."""
    if not any(r for r, _ in scored):
        return None
    pos = sum(1 for _, t in scored if t)
    neg = len(scored) - pos
    if not pos or not neg:
        return None
    ranked = sorted(scored, key=lambda x: -x[0])
    above, auc = 0, 0
    for _, t in ranked:
        if t:
            above += 1
        else:
            auc += above
    return {"auc": auc / (pos * neg), "precision_at_k": sum(1 for _, t in ranked[:pos] if t) / pos}


def harvest(crawl, truth, n):
    hits, distinct, scored = [], 0, []
    with open(os.path.join(crawl, "pages.jsonl"), encoding="utf-8") as f:
        for line in f:
            if len(hits) >= n:
                break
            r = json.loads(line)
            urls = {r.get("url"), r.get("canonical"), r.get("final_url")}
            hits.append(1 if urls & truth else 0)
            if r.get("decision") == "new":
                distinct += hits[-1]
                scored.append((r.get("relevance") or 0.0, hits[-1] == 1))
    pages = len(hits)
    half = (pages + 1) // 2
    curve = []
    for k in range(1, 11):
        m = max(1, pages * k // 10)
        curve.append([m, sum(hits[:m]) / m])
    return {
        "pages": pages,
        "on_topic": sum(hits),
        "harvest_rate": sum(hits) / pages if pages else 0.0,
        "first_half_rate": sum(hits[:half]) / half if half else 0.0,
        "distinct_rate": distinct / pages if pages else 0.0,
        "judgement": judgement(scored),
        "curve": curve,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--pages", type=int, default=3000)
    ap.add_argument("--mirrors", help="mirrors.tsv of the corpus (for the ceiling)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("crawls", nargs="+", help="LABEL=CRAWL_DIR")
    args = ap.parse_args()
    truth = load_truth(args.truth)
    rows = []
    for spec in args.crawls:
        label, crawl = spec.split("=", 1)
        rows.append((label, harvest(crawl, truth, args.pages)))
    base = rows[0][1]["harvest_rate"] or float("nan")
    distinct = distinct_pages(truth, args.mirrors)
    ceiling = min(distinct, args.pages) / (rows[0][1]["on_topic"] or float("nan"))
    if args.json:
        out = {label: dict(h, ratio=h["harvest_rate"] / base) for label, h in rows}
        out["truth"] = {"on_topic_urls": len(truth), "distinct_pages": distinct, "ceiling": ceiling}
        print(json.dumps(out))
        return
    print(f"truth: {args.truth} ({len(truth)} on-topic URLs, {distinct} distinct pages); first {args.pages} pages;"
          f" ceiling {ceiling:.2f}x")
    for label, h in rows:
        curve = " ".join(f"{r:.3f}" for _, r in h["curve"])
        j = h["judgement"]
        judged = f"  relevance: AUC {j['auc']:.3f}, precision at k {j['precision_at_k']:.2f}" if j else ""
        print(f"  {label:<10} pages {h['pages']:>5}  on-topic {h['on_topic']:>5}  harvest {h['harvest_rate']:.3f}"
              f"  first half {h['first_half_rate']:.3f}  distinct {h['distinct_rate']:.3f}  ratio {h['harvest_rate'] / base:.2f}x  curve {curve}{judged}")


if __name__ == "__main__":
    main()
