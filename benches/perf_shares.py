#!/usr/bin/env python3
"""Where the crawler's CPU goes, from a `perf record` of `bench crawl`.

The CPU breakdown in docs/benchmarks.md comes from this script:

    perf record -F 1000 --call-graph dwarf,16384 -o /tmp/perf.data -- \
        target/release/simcrawl bench crawl --no-peer --pages 20000 --max-pages 20000
    perf script -i /tmp/perf.data -F pid,tid,comm,ip,sym > /tmp/perf.txt
    benches/perf_shares.py /tmp/perf.txt 'sled::' 'simcrawl::features::' 'html5ever'

It keeps the samples of the crawler process (the lowest pid: the test web is
its child) and prints each thread kind's share with its kernel part, the top
kernel and user leaf symbols, and for each REGEX argument the share of
samples with a matching frame anywhere in the stack (inclusive). After
`--in THREAD`, the REGEX arguments count only the samples of threads whose
name starts with THREAD (shares still of all the crawler's samples).
"""
import collections
import re
import sys


def samples(path):
    cur = None
    with open(path, errors="replace") as f:
        for line in f:
            if not line.strip():
                if cur:
                    yield cur
                cur = None
            elif not line[0].isspace():
                m = re.match(r"\s*(.*?)\s+(\d+)/(\d+)\s", line)
                cur = {"pid": int(m.group(2)), "comm": m.group(1), "frames": []} if m else None
            elif cur is not None:
                parts = line.strip().split(None, 1)
                if len(parts) == 2:
                    cur["frames"].append((parts[0].startswith("ffff"), parts[1]))
    if cur:
        yield cur


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    all_samples = [s for s in samples(sys.argv[1]) if s["frames"]]
    pid = min(s["pid"] for s in all_samples)
    crawler = [s for s in all_samples if s["pid"] == pid]
    n = len(crawler)
    print(f"crawler samples {n} (child process: {len(all_samples) - n})")
    by_thread, kernel = collections.Counter(), collections.Counter()
    for s in crawler:
        kind = re.sub(r"[0-9]+$", "", s["comm"])
        by_thread[kind] += 1
        kernel[kind] += s["frames"][0][0]
    for kind, m in by_thread.most_common():
        print(f"  {kind:<18} {100 * m / n:5.1f}%  kernel {100 * kernel[kind] / n:5.1f}%")
    for title, in_kernel in (("kernel leaves", True), ("user leaves", False)):
        leaves = collections.Counter(s["frames"][0][1] for s in crawler if s["frames"][0][0] == in_kernel)
        print(f"{title}: {100 * sum(leaves.values()) / n:.1f}%")
        for sym, m in leaves.most_common(15):
            print(f"  {100 * m / n:5.1f}% {sym[:110]}")
    if len(sys.argv) > 2:
        print("inclusive")
    thread = ""
    args = iter(sys.argv[2:])
    for pattern in args:
        if pattern == "--in":
            # Later patterns count only samples of threads named THREAD...
            thread = next(args, "")
            continue
        p = re.compile(pattern)
        m = sum(
            1
            for s in crawler
            if s["comm"].startswith(thread) and any(p.search(f) for _, f in s["frames"])
        )
        print(f"  {100 * m / n:5.1f}% {thread + ' ' if thread else ''}{pattern}")


if __name__ == "__main__":
    main()
