#!/usr/bin/env python3
"""Harvest rate of crawls against an on-topic truth (focus_truth.py topics).

Usage: focus_score.py --truth DATA_DIR/focus/truth-NAME.txt --pages N
                      [--json] LABEL=CRAWL_DIR [LABEL=CRAWL_DIR ...]

A crawl's first N records of pages.jsonl (every fetch attempt, in log
order; robots.txt fetches are not records) are its pages. A page is
on-topic when its URL, canonical URL or final URL is in the truth file.
Prints, per crawl: the harvest rate over the N pages, over the first half,
the on-topic pages found, and the cumulative harvest curve at tenths of N;
then the ratio of each crawl's rate to the first crawl's. The distinct
harvest rate counts only on-topic records decided `new` (not an exact or
near duplicate of a page fetched before): the truth lists every copy of a
mirrored page, and a crawl that skips copies on purpose finds fewer.
"""

import argparse
import json
import os


def load_truth(path):
    with open(path, encoding="utf-8") as f:
        return {line.strip() for line in f if line.strip()}


def harvest(crawl, truth, n):
    hits, distinct = [], 0
    with open(os.path.join(crawl, "pages.jsonl"), encoding="utf-8") as f:
        for line in f:
            if len(hits) >= n:
                break
            r = json.loads(line)
            urls = {r.get("url"), r.get("canonical"), r.get("final_url")}
            hits.append(1 if urls & truth else 0)
            distinct += hits[-1] if r.get("decision") == "new" else 0
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
        "curve": curve,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--pages", type=int, default=3000)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("crawls", nargs="+", help="LABEL=CRAWL_DIR")
    args = ap.parse_args()
    truth = load_truth(args.truth)
    rows = []
    for spec in args.crawls:
        label, crawl = spec.split("=", 1)
        rows.append((label, harvest(crawl, truth, args.pages)))
    base = rows[0][1]["harvest_rate"] or float("nan")
    if args.json:
        print(json.dumps({label: dict(h, ratio=h["harvest_rate"] / base) for label, h in rows}))
        return
    print(f"truth: {args.truth} ({len(truth)} on-topic URLs); first {args.pages} pages")
    for label, h in rows:
        curve = " ".join(f"{r:.3f}" for _, r in h["curve"])
        print(f"  {label:<10} pages {h['pages']:>5}  on-topic {h['on_topic']:>5}  harvest {h['harvest_rate']:.3f}"
              f"  first half {h['first_half_rate']:.3f}  distinct {h['distinct_rate']:.3f}  ratio {h['harvest_rate'] / base:.2f}x  curve {curve}")


if __name__ == "__main__":
    main()
