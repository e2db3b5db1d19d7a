#!/usr/bin/env python3
"""On-topic truth for focused-crawl measurements on the real-web corpus,
independent of simcrawl.

Usage:
  focus_truth.py extract DATA_DIR [--workers 2]
  focus_truth.py topics  DATA_DIR [--topics scripts/realweb/topics.tsv]

extract: fetches every page of DATA_DIR/truth/pages.tsv (written by
truth.py) and of the focus-only sites of DATA_DIR/sites.tsv from nginx, takes its main content with trafilatura (the same
settings as truth.py: extract(include_comments=False, include_tables=True,
favor_recall=True)) and writes DATA_DIR/focus/main.jsonl.gz, one
{"url", "site", "text"} object per page. Computed once (~18 minutes on 2
cores); a later run extracts only the pages not in that file yet.

topics: for each topic of the topics file (tab-separated: name, minimum
count, defining phrases separated by ";", and the crawl's keywords, which
only focus.sh reads), a page is on-topic when the defining phrases
together occur at least `minimum` times in its main content
(lower-cased, whole words: "regex" does not count inside "regexp_like" but
does count in "regex." or "(regex)"). Writes DATA_DIR/focus/truth-NAME.txt,
the on-topic URLs, and prints per topic the number of on-topic pages and
how they spread over sites. Never reads anything the product computes.
"""

import argparse
import concurrent.futures as cf
import gzip
import json
import os
import re
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import truth  # noqa: E402  (fetch, decode, worker_init)


def read_pages(data_dir):
    """The pages of the near-duplicate truth (truth/pages.tsv), then every
    .html/.htm file of the focus-only sites of sites.tsv."""
    with open(os.path.join(data_dir, "truth", "pages.tsv"), encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        pages = [dict(zip(header, line.rstrip("\n").split("\t"))) for line in f]
    for s in truth.read_sites(data_dir, focus_only=True):
        for rel in truth.html_files(s["root"]):
            pages.append({"url": truth.page_url(s, rel), "site": s["name"]})
    return pages


def main_text(url):
    import trafilatura

    status, ctype, body = truth.fetch(url)
    if status != 200:
        return ""
    html = truth.decode(body, ctype)
    try:
        return trafilatura.extract(html, include_comments=False, include_tables=True, favor_recall=True) or ""
    except Exception:  # noqa: BLE001 - an extractor failure is an empty main content
        return ""


def extract(args):
    pages = read_pages(args.data)
    out_dir = os.path.join(args.data, "focus")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, "main.jsonl.gz")
    tmp = out + ".tmp"
    start = time.time()
    # Pages extracted by an earlier run are kept (the corpus's files do not
    # change); only pages of sites added since are extracted.
    known = {}
    if os.path.exists(out):
        with gzip.open(out, "rt", encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                known[r["url"]] = r["text"]
    todo = [p["url"] for p in pages if p["url"] not in known]
    # A server that does not answer would give every page an empty main
    # content (and the empty texts would be kept as extracted).
    if todo and truth.fetch(todo[0])[0] == 0:
        sys.exit(f"{todo[0]}: no answer; start the corpus's server first: scripts/realweb/corpus.sh start {args.data}")
    print(f"{len(pages)} pages, {len(pages) - len(todo)} extracted before, {len(todo)} to extract", file=sys.stderr)
    with cf.ProcessPoolExecutor(args.workers, initializer=truth.worker_init) as pool:
        for i, text in enumerate(pool.map(main_text, todo, chunksize=32)):
            known[todo[i]] = text
            if (i + 1) % 2000 == 0:
                print(f"  {i + 1}/{len(todo)} pages, {time.time() - start:.0f} s", file=sys.stderr)
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        for p in pages:
            f.write(json.dumps({"url": p["url"], "site": p["site"], "text": known[p["url"]]}) + "\n")
    os.replace(tmp, out)
    print(f"wrote {out}: {len(pages)} pages ({len(todo)} extracted) in {time.time() - start:.0f} s")


def read_topics(path):
    topics = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            name, minimum, phrases = line.rstrip("\n").split("\t")[:3]
            topics.append((name, int(minimum), [p.strip() for p in phrases.split(";") if p.strip()]))
    return topics


def phrase_pattern(phrases):
    alts = "|".join(re.escape(p.lower()).replace(r"\ ", r"\s+") for p in phrases)
    return re.compile(rf"(?<![\w-])(?:{alts})(?![\w-])")


def topics(args):
    src = os.path.join(args.data, "focus", "main.jsonl.gz")
    specs = [(name, minimum, phrase_pattern(ph), ph) for name, minimum, ph in read_topics(args.topics)]
    on = {name: [] for name, *_ in specs}
    by_site = {name: Counter() for name, *_ in specs}
    total = Counter()
    with gzip.open(src, "rt", encoding="utf-8") as f:
        for line in f:
            page = json.loads(line)
            total[page["site"]] += 1
            text = page["text"].lower()
            for name, minimum, pat, _ in specs:
                if len(pat.findall(text)) >= minimum:
                    on[name].append(page["url"])
                    by_site[name][page["site"]] += 1
    n = sum(total.values())
    for name, minimum, _, phrases in specs:
        path = os.path.join(args.data, "focus", f"truth-{name}.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(sorted(on[name])) + "\n")
        spread = ", ".join(f"{s} {c}" for s, c in by_site[name].most_common(8))
        print(f"{name}: {len(on[name])}/{n} pages on-topic ({len(on[name]) / n:.3%}); "
              f">= {minimum} of {phrases}; {len(by_site[name])} sites: {spread}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("extract")
    e.add_argument("data")
    e.add_argument("--workers", type=int, default=2)
    t = sub.add_parser("topics")
    t.add_argument("data")
    t.add_argument("--topics", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "topics.tsv"))
    args = ap.parse_args()
    {"extract": extract, "topics": topics}[args.cmd](args)


if __name__ == "__main__":
    main()
