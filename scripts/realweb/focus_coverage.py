#!/usr/bin/env python3
"""How many of a topic's keywords pages hold, on-topic pages against the others.

Usage: focus_coverage.py DATA_DIR [--topics scripts/realweb/topics.tsv]

For each topic of the topics file, reads the main content of every page
(DATA_DIR/focus/main.jsonl.gz, from focus_truth.py extract) and the truth
(DATA_DIR/focus/truth-TOPIC.txt), counts the keywords the focused crawl is
given (the topics file's last column) that each page's main content holds
(lower-cased, whole words, a plural or -ed/-ing ending allowed), and prints,
among the pages holding at least one, the distribution for on-topic and
other pages, then the precision and recall of "holds at least k keywords"
as a judgement of the truth. Reads nothing the product computes.
"""
import argparse
import collections
import gzip
import json
import os
import re


def read_topics(path):
    topics = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, _, _, keywords = line.rstrip("\n").split("\t")[:4]
            topics[name] = [k.strip().lower() for k in keywords.split(";") if k.strip()]
    return topics


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--topics", default=os.path.join(here, "topics.tsv"))
    a = ap.parse_args()
    topics = read_topics(a.topics)
    truth = {}
    for t in topics:
        with open(os.path.join(a.data, "focus", f"truth-{t}.txt"), encoding="utf-8") as f:
            truth[t] = {line.strip() for line in f if line.strip()}
    patterns = {
        t: [re.compile(r"\b" + re.escape(k).replace(r"\ ", r"\s+") + r"(s|es|ed|ing)?\b") for k in kws]
        for t, kws in topics.items()
    }
    held = {t: {"on-topic": collections.Counter(), "other": collections.Counter()} for t in topics}
    with gzip.open(os.path.join(a.data, "focus", "main.jsonl.gz"), "rt", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            text = r["text"].lower()
            for t in topics:
                n = sum(1 for p in patterns[t] if p.search(text))
                if n:
                    held[t]["on-topic" if r["url"] in truth[t] else "other"][n] += 1
    for t in topics:
        print(f"{t} ({len(topics[t])} keywords)")
        for group, c in held[t].items():
            total = sum(c.values())
            mean = sum(k * v for k, v in c.items()) / max(1, total)
            print(f"  {group:8} {total:5} pages, mean {mean:.2f} keywords: {dict(sorted(c.items()))}")
        on, other = held[t]["on-topic"], held[t]["other"]
        for k in range(1, 5):
            a_ = sum(v for n, v in on.items() if n >= k)
            b_ = sum(v for n, v in other.items() if n >= k)
            print(f"  >= {k} keywords: precision {a_ / max(1, a_ + b_):.2f}, recall {a_ / max(1, sum(on.values())):.2f}")


if __name__ == "__main__":
    main()
