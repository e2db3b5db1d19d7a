#!/usr/bin/env python3
"""Precision and recall of a crawl's near-duplicate decisions at stricter
verification thresholds, from one crawl run with a low `dedup.verify_threshold`.

Usage: sweep.py --truth DATA_DIR/truth --crawl CRAWL_DIR [--thresholds 0.5,0.6,...]

Each `near_duplicate` record carries the `resemblance` that confirmed it. At
threshold t, a near duplicate with resemblance below t counts as `new`; the
rest is scored as score.py scores a crawl. This is an estimate of a crawl run
at t: a page the stricter crawl calls new could change later decisions (it
would be an original itself), which the sweep does not replay. Use it to pick
the threshold, then confirm with a full crawl at that threshold.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import score  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--truth", required=True)
    ap.add_argument("--crawl", required=True)
    ap.add_argument("--thresholds", default="0.5,0.55,0.6,0.65,0.7,0.75,0.8,0.85,0.9")
    args = ap.parse_args()
    truth = score.Truth(args.truth)
    import json

    recs = [json.loads(l) for l in open(os.path.join(args.crawl, "pages.jsonl"), encoding="utf-8") if l.strip()]
    print("threshold  precision  (correct/near)   recall  (found/eligible)")
    for t in (float(x) for x in args.thresholds.split(",")):
        prec_ok = prec_n = hit = elig = 0
        decided, earlier_sha, seen = set(), set(), set()
        for r in recs:
            dec = r["decision"]
            if dec not in score.FETCHED:
                continue
            if dec == "near_duplicate" and (r.get("resemblance") is None or r["resemblance"] < t):
                dec = "new"
            i = truth.index.get(score.norm(score.page_url(r)))
            if i is None or i in seen:
                continue
            seen.add(i)
            if dec == "near_duplicate":
                j = truth.index.get(score.norm(r.get("dup_of") or ""))
                if j is not None:
                    prec_n += 1
                    prec_ok += truth.sha[i] == truth.sha[j] or truth.jaccard("main", i, j) >= score.NEAR_T
            if any(n in decided for n in truth.near90.get(i, ())) and truth.sha[i] not in earlier_sha:
                elig += 1
                hit += dec in ("near_duplicate", "exact_duplicate")
            decided.add(i)
            earlier_sha.add(truth.sha[i])
        print(f"{t:9.2f}  {score.ratio(prec_ok, prec_n):9.3f}  ({prec_ok}/{prec_n})  {score.ratio(hit, elig):7.3f}  ({hit}/{elig})")


if __name__ == "__main__":
    main()
