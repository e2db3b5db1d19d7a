#!/usr/bin/env python3
"""Mean harvest ratios over several focus.sh runs.

Usage: focus_mean.py RUN_DIR...   (each an OUT_DIR of focus.sh with focus.json)

Prints one Markdown table row per topic: the corpus's on-topic pages, the
breadth-first and focused harvest rates (means over the runs), the ratio of
the focused crawls' on-topic records to breadth-first's (each summed over
the runs) with each run's ratio, the same for distinct on-topic records
(decided `new`), the range of the ceiling, and the focused crawls' mean
precision at k.
"""
import json
import os
import sys


def main():
    runs = [json.load(open(os.path.join(d, "focus.json"))) for d in sys.argv[1:]]
    if not runs:
        sys.exit("usage: focus_mean.py RUN_DIR...")
    print(f"{len(runs)} runs")
    print("| topic | on-topic pages | breadth-first harvest | focused harvest | ratio (runs) | distinct ratio (runs) | ceiling | precision at k |")
    print("|---|---|---|---|---|---|---|---|")
    mean = lambda xs: sum(xs) / len(xs)
    for topic in runs[0]:
        per = [r[topic] for r in runs if topic in r]
        b = [p["bfs"] for p in per]
        f = [p["focused"] for p in per]
        ratio = sum(x["on_topic"] for x in f) / max(1, sum(x["on_topic"] for x in b))
        distinct = sum(x["distinct_rate"] for x in f) / max(1e-9, sum(x["distinct_rate"] for x in b))
        each = " / ".join(f"{x['ratio']:.2f}" for x in f)
        each_d = " / ".join(f"{x['distinct_rate'] / y['distinct_rate']:.2f}" if y["distinct_rate"] else "n/a" for x, y in zip(f, b))
        ceil = [p["truth"]["ceiling"] for p in per]
        pk = [x["judgement"]["precision_at_k"] for x in f if x.get("judgement")]
        pk = f"{mean(pk):.2f}" if pk else "n/a"
        print(
            f"| {topic} | {per[0]['truth']['on_topic_urls']} | {mean([x['harvest_rate'] for x in b]):.3f} "
            f"| {mean([x['harvest_rate'] for x in f]):.3f} | {ratio:.2f}x ({each}) | {distinct:.2f}x ({each_d}) "
            f"| {min(ceil):.2f}–{max(ceil):.2f}x | {pk} |"
        )


if __name__ == "__main__":
    main()
