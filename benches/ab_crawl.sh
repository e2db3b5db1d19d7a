#!/usr/bin/env bash
# Alternates `bench crawl --no-peer` between two simcrawl binaries and prints
# each one's median pages/s and CPU-s per 1k pages: how the before/after
# figures in docs/benchmarks.md and CHANGELOG.md are measured on a shared,
# noisy machine (a ratio from runs interleaved in one go, not two
# figures from different minutes).
#
# usage: benches/ab_crawl.sh ROUNDS BIN_A BIN_B [BIN ...] [-- EXTRA BENCH ARGS]
# e.g.   cp target/release/simcrawl /tmp/simcrawl-new
#        benches/ab_crawl.sh 3 /tmp/simcrawl-old /tmp/simcrawl-new
set -euo pipefail
if [ $# -lt 3 ]; then
  sed -n '2,10p' "$0" >&2
  exit 2
fi
rounds=$1
shift
bins=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  bins+=("$1")
  shift
done
[ "${1:-}" = "--" ] && shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for _ in $(seq "$rounds"); do
  for b in "${bins[@]}"; do
    line=$("$b" bench crawl --no-peer "$@" 2>&1 | grep '^simcrawl:' || true)
    if [ -z "$line" ]; then
      echo "$b: no result line" >&2
      exit 1
    fi
    # "simcrawl: N pages in T s = P pages/s, C CPU-s per 1k pages (...)"
    p=$(sed -E 's/.*= ([0-9]+) pages\/s.*/\1/' <<<"$line")
    c=$(sed -E 's/.*, ([0-9.]+) CPU-s per 1k.*/\1/' <<<"$line")
    echo "$b $p $c" | tee -a "$out"
  done
done
python3 - "$out" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    b, p, c = line.split()
    runs.setdefault(b, []).append((int(p), float(c)))
for b, v in runs.items():
    print(f"{b}: median {statistics.median(x[0] for x in v):.0f} pages/s, "
          f"{statistics.median(x[1] for x in v):.3f} CPU-s per 1k pages "
          f"(runs: {', '.join(f'{x[1]:.3f}' for x in v)})")
PY
