#!/usr/bin/env python3
"""Where a topic's fetches went, per site: breadth-first against focused.

Usage: focus_hosts.py DATA_DIR TOPIC RUN_DIR... [--pages N]

For each RUN_DIR (an OUT_DIR of focus.sh, or one run-N of focus.sh --runs)
reads the first N (default 3000) records of RUN_DIR/bfs/pages.jsonl and
RUN_DIR/TOPIC/pages.jsonl and DATA_DIR/focus/truth-TOPIC.txt, and prints,
per site of DATA_DIR/sites.tsv, the truth's on-topic pages there, then the
fetches and the on-topic records of each crawl: the mean per run over the
runs given. Sites are sorted by the focused crawl's fetches.
"""
import argparse
import collections
import json
import os
from urllib.parse import urlsplit


def tally(path, pages, truth):
    fetches, on = collections.Counter(), collections.Counter()
    with open(path) as f:
        for i, line in enumerate(f):
            if i >= pages:
                break
            url = json.loads(line)["url"]
            site = urlsplit(url).netloc
            fetches[site] += 1
            on[site] += url in truth
    return fetches, on


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("topic")
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--pages", type=int, default=3000)
    a = ap.parse_args()
    names = {}
    with open(os.path.join(a.data, "sites.tsv")) as f:
        for line in f.readlines()[1:]:
            port, name = line.rstrip("\n").split("\t")[:2]
            names["127.0.0.1:" + port] = name
    with open(os.path.join(a.data, "focus", f"truth-{a.topic}.txt")) as f:
        truth = {line.strip() for line in f if line.strip()}
    per_site_truth = collections.Counter(urlsplit(u).netloc for u in truth)
    total = {k: collections.Counter() for k in ("bf", "bo", "ff", "fo")}
    for run in a.runs:
        bf, bo = tally(os.path.join(run, "bfs", "pages.jsonl"), a.pages, truth)
        ff, fo = tally(os.path.join(run, a.topic, "pages.jsonl"), a.pages, truth)
        for k, c in (("bf", bf), ("bo", bo), ("ff", ff), ("fo", fo)):
            total[k].update(c)
    n = len(a.runs)
    sites = set(names) | set(total["bf"]) | set(total["ff"])
    print(f"{a.topic}: mean per run over {n} run(s), first {a.pages} records")
    print(f"{'site':18} {'truth':>5}  {'bfs fetches':>11} {'on':>5}  {'focused fetches':>15} {'on':>5}")
    for s in sorted(sites, key=lambda s: (-total["ff"][s], s)):
        if not (total["bf"][s] or total["ff"][s] or per_site_truth[s]):
            continue
        print(
            f"{names.get(s, s):18} {per_site_truth[s]:5}  {total['bf'][s] / n:11.1f} {total['bo'][s] / n:5.1f}"
            f"  {total['ff'][s] / n:15.1f} {total['fo'][s] / n:5.1f}"
        )


if __name__ == "__main__":
    main()
