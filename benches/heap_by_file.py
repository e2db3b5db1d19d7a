#!/usr/bin/env python3
"""The heap at its peak, summed by the source file that allocated it.

Reads heaptrack's peak flame graph of a crawl (docs/benchmarks.md,
"Memory and disk"):

    cargo build --release --no-default-features --target-dir T   # the system allocator, which heaptrack sees
    heaptrack -o ht T/release/simcrawl bench crawl --no-peer --pages N --max-pages N
    heaptrack_print -f ht.zst --flamegraph-cost-type peak -F ht.flame
    benches/heap_by_file.py ht.flame [OTHER.flame]

Each stack's bytes go to its innermost frame in a simcrawl source file
(`src/**/*.rs`, but `lib.rs`, `main.rs`, `error.rs`, `types.rs` and the
`mod.rs` files, which name no structure), or to `fjall` (fjall and
lsm_tree frames), or to `net` (hyper, reqwest, tokio), whichever comes
first from the leaf; else to `other`. With two files it prints both
columns and their difference, sorted by the first file's bytes.
"""
import collections
import os
import re
import sys

SKIP = {"lib.rs", "main.rs", "error.rs", "types.rs", "mod.rs"}


def own_files():
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    names = set()
    for _, _, files in os.walk(src):
        names.update(f for f in files if f.endswith(".rs") and f not in SKIP)
    return names


def load(path, ours):
    total = collections.Counter()
    with open(path, errors="replace") as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            try:
                n = int(n)
            except ValueError:
                continue
            key = "other"
            for frame in reversed(stack.split(";")):
                if "lsm_tree" in frame or "fjall" in frame:
                    key = "fjall"
                    break
                if "hyper" in frame or "reqwest" in frame or "tokio" in frame:
                    key = "net"
                    break
                m = re.search(r"\((\w+\.rs)\)$", frame)
                if m and m.group(1) in ours:
                    key = m.group(1)
                    break
            total[key] += n
    return total


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: heap_by_file.py PEAK.flame [OTHER_PEAK.flame]")
    ours = own_files()
    a = load(sys.argv[1], ours)
    b = load(sys.argv[2], ours) if len(sys.argv) == 3 else None
    print(f"total {sum(a.values()) / 1e6:.1f} MB" + (f", other {sum(b.values()) / 1e6:.1f} MB" if b else ""))
    keys = sorted(set(a) | set(b or {}), key=lambda k: -a[k])
    for k in keys[:40]:
        if b is None:
            print(f"{a[k] / 1e6:7.2f}  {k}")
        else:
            print(f"{a[k] / 1e6:7.2f} {b[k] / 1e6:7.2f} {(a[k] - b[k]) / 1e6:+7.2f}  {k}")


if __name__ == "__main__":
    main()
