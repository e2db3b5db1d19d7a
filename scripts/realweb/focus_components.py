#!/usr/bin/env python3
"""How well each priority component ranks on-topic pages among those fetched.

Usage: focus_components.py DATA_DIR RUN_DIR... [--skip N] [--pages N]

For each RUN_DIR (an OUT_DIR of focus.sh) and topic of it, reads the
focused crawl's pages.jsonl (records N_skip..N_pages, default 300..3000:
past the seeds' neighbourhood) and DATA_DIR/focus/truth-TOPIC.txt, and
prints the ROC AUC of each component of the `score` a page was fetched
with (and of its priority) for telling the truth's on-topic pages from the
others: 0.5 is no better than chance, below 0.5 ranks on-topic pages
lower. Ties count half.
"""
import argparse
import json
import os

COMPONENTS = ["relevance", "host_relevance", "url_relevance", "inlinks", "depth", "host_novelty"]


def auc(pairs):
    pairs = sorted(pairs, key=lambda p: p[0])
    pos = sum(t for _, t in pairs)
    neg = len(pairs) - pos
    if not pos or not neg:
        return float("nan")
    ranks, i = 0.0, 0
    while i < len(pairs):
        j = i
        while j < len(pairs) and pairs[j][0] == pairs[i][0]:
            j += 1
        ranks += (i + j + 1) / 2 * sum(t for _, t in pairs[i:j])
        i = j
    return (ranks - pos * (pos + 1) / 2) / (pos * neg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--skip", type=int, default=300)
    ap.add_argument("--pages", type=int, default=3000)
    a = ap.parse_args()
    print("run topic on-topic " + " ".join(COMPONENTS) + " priority")
    for run in a.runs:
        for topic in sorted(os.listdir(run)):
            pages = os.path.join(run, topic, "pages.jsonl")
            truth_file = os.path.join(a.data, "focus", f"truth-{topic}.txt")
            if not (os.path.isfile(pages) and os.path.isfile(truth_file)):
                continue
            with open(truth_file) as f:
                truth = {line.strip() for line in f if line.strip()}
            with open(pages) as f:
                records = [json.loads(line) for _, line in zip(range(a.pages), f)][a.skip :]
            labels = [r["canonical"] in truth or r["url"] in truth for r in records]
            cols = [auc([(r["score"][c], t) for r, t in zip(records, labels)]) for c in COMPONENTS]
            cols.append(auc([(r["priority"], t) for r, t in zip(records, labels)]))
            print(f"{run} {topic} {sum(labels)} " + " ".join(f"{x:.2f}" for x in cols))


if __name__ == "__main__":
    main()
