#!/usr/bin/env python3
"""Which on-topic pages a focused crawl missed, and whether it had found them.

Usage: focus_missed.py DATA_DIR CRAWL_DIR TOPIC [--pages N]

Reads the first N (default 3000) records of CRAWL_DIR/pages.jsonl (a crawl
of focus.sh, e.g. OUT/timezones) and DATA_DIR/focus/truth-TOPIC.txt. A
missed on-topic page is *discovered* when a page the crawl fetched links to
it: the links are read from the corpus's HTML files (the href attributes of
each fetched page, resolved against its URL, fragment dropped), so no store
is needed. Prints the counts, then per site.
"""
import argparse
import collections
import json
import os
import re
from urllib.parse import urldefrag, urljoin


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("crawl")
    ap.add_argument("topic")
    ap.add_argument("--pages", type=int, default=3000)
    a = ap.parse_args()
    sites = {}
    with open(os.path.join(a.data, "sites.tsv")) as f:
        for line in f.readlines()[1:]:
            port, name, root = line.rstrip("\n").split("\t")[:3]
            sites["127.0.0.1:" + port] = (name, root)

    def file_of(url):
        name, root = sites[url.split("/")[2]]
        local = os.path.join(a.data, "sites", name)
        path = url.split("/", 3)[3] if url.count("/") >= 3 else ""
        path = os.path.join(local if os.path.isdir(local) else root, path.split("?")[0].split("#")[0])
        return os.path.join(path, "index.html") if path.endswith("/") or os.path.isdir(path) else path

    with open(os.path.join(a.data, "focus", f"truth-{a.topic}.txt")) as f:
        truth = {line.strip() for line in f if line.strip()}
    records = []
    with open(os.path.join(a.crawl, "pages.jsonl")) as f:
        for line in f:
            if len(records) >= a.pages:
                break
            records.append(json.loads(line))
    got = {r["canonical"] for r in records} | {r["url"] for r in records}
    linked = set()
    for r in records:
        if r.get("status") != 200:
            continue
        base = r.get("final_url") or r["url"]
        try:
            with open(file_of(base), errors="replace") as f:
                html = f.read()
        except (OSError, KeyError):
            continue
        for href in re.findall(r"href=[\"']([^\"'#]+)", html):
            u = urldefrag(urljoin(base, href))[0]
            if u in truth and u not in got:
                linked.add(u)
    missed = truth - got
    site = lambda u: sites.get(u.split("/")[2], ("?",))[0]
    print(f"{a.crawl} {a.topic}: {len(missed)} on-topic pages missed, {len(linked)} of them discovered")
    per = collections.Counter(site(u) for u in missed)
    found = collections.Counter(site(u) for u in linked)
    for name, n in per.most_common():
        print(f"  {name:<20} missed {n:4}  discovered {found[name]:4}")


if __name__ == "__main__":
    main()
