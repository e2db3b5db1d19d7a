#!/usr/bin/env bash
# Focused against breadth-first crawls of the real-web corpus, per topic.
#
# Usage: scripts/realweb/focus.sh DATA_DIR OUT_DIR [--pages N] [--topics a,b] [--runs N] [--set SECTION.KEY=VALUE ...]
#
# Needs the corpus served (corpus.sh build|start) and the on-topic truth
# (focus_truth.py extract DATA_DIR, then focus_truth.py topics DATA_DIR).
# Runs $SIMCRAWL (default: release/simcrawl under $CARGO_TARGET_DIR, else
# under the repo's target/) over the seeds of `corpus.sh seeds --all` (one per
# site) with the same settings for every crawl: crawl.concurrency = 4 (fewer
# connections than hosts, so priorities decide), fixed delays off (local
# servers), no per-address cap, max_pages = N (default 3000). One crawl
# with [focus] off (breadth-first: the default priority) and one focused
# crawl per topic of scripts/realweb/topics.tsv (focus.enabled = true,
# focus.keywords = the topic's keywords column, every other [focus] key at
# its default; extra --set arguments apply to the focused crawls only).
# Scores each pair with focus_score.py and writes OUT_DIR/focus.md (table)
# and OUT_DIR/focus.json. OUT_DIR is created and overwritten; each crawl's
# store is deleted once the crawl is done (only pages.jsonl is scored).
# --runs N (N > 1) measures N times, into OUT_DIR/run-1 ... run-N, and
# writes OUT_DIR/focus.md with the mean ratios (focus_mean.py): a crawl's
# order depends on which connection answers first, and one run's ratio
# moves by up to ±0.7.
set -euo pipefail
data=${1:?usage: focus.sh DATA_DIR OUT_DIR [--pages N] [--topics a,b] [--runs N] [--set k=v ...]}
out=${2:?usage: focus.sh DATA_DIR OUT_DIR [--pages N] [--topics a,b] [--runs N] [--set k=v ...]}
shift 2
pages=3000
only=""
runs=1
extra=()
pass=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --runs) runs=$2; shift 2; continue ;;
    esac
    pass+=("$1" "${2:-}")
    case $1 in
        --pages) pages=$2; shift 2 ;;
        --topics) only=$2; shift 2 ;;
        --set) extra+=(--set "$2"); shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")" && pwd)
if [[ $runs -gt 1 ]]; then
    rm -rf "$out"
    mkdir -p "$out"
    for i in $(seq 1 "$runs"); do
        "$0" "$data" "$out/run-$i" "${pass[@]}" >"$out/run-$i.log" 2>&1 || { cat "$out/run-$i.log" >&2; exit 1; }
    done
    py=python3
    [[ -x "$data/venv/bin/python" ]] && py="$data/venv/bin/python"
    "$py" "$here/focus_mean.py" "$out"/run-*/ | tee "$out/focus.md"
    exit 0
fi
repo=$(cd "$here/../.." && pwd)
bin=${SIMCRAWL:-${CARGO_TARGET_DIR:-$repo/target}/release/simcrawl}
[[ -x "$bin" ]] || { echo "missing $bin: cargo build --release" >&2; exit 1; }
topics=${TOPICS:-$here/topics.tsv}
py=python3
[[ -x "$data/venv/bin/python" ]] && py="$data/venv/bin/python"
rm -rf "$out"
mkdir -p "$out"
"$here/corpus.sh" start "$data"
"$here/corpus.sh" seeds "$data" --all >"$out/seeds.txt"
printf '# focus.sh: defaults; see the --set arguments in command.txt\n' >"$out/realweb.toml"
common=(--config "$out/realweb.toml" --seeds "$out/seeds.txt"
        --set politeness.min_delay_ms=0 --set politeness.delay_factor=0.0
        --set politeness.max_in_flight_per_ip=0 --set crawl.concurrency=4
        --set "crawl.max_pages=$pages")
run() {  # run DIR ARGS...: one crawl, quietly, with its command line and times kept
    local dir=$1; shift
    echo "$bin crawl --out $dir ${common[*]} $*" >"$dir.command.txt"
    /usr/bin/time -f "%e s wall, %U s user, %M KiB peak" -o "$dir.time" \
        "$bin" crawl --out "$dir" "${common[@]}" "$@" >"$dir.log" 2>&1
    du -s --block-size=1 "$dir/store" | cut -f1 >"$dir.store-bytes"
    rm -rf "$dir/store"
}
run "$out/bfs"
{
    echo "| topic | on-topic pages (corpus) | breadth-first harvest | focused harvest | ratio | first half: breadth-first | focused | ratio | distinct: breadth-first | focused | ratio | ceiling |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
} >"$out/focus.md"
echo "{" >"$out/focus.json"
first=1
while IFS=$'\t' read -r name minimum phrases keywords; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    if [[ -n "$only" && ",$only," != *",$name,"* ]]; then continue; fi
    truth="$data/focus/truth-$name.txt"
    [[ -f "$truth" ]] || { echo "missing $truth: run focus_truth.py topics $data" >&2; exit 1; }
    kw=$(printf '%s' "$keywords" | "$py" -c 'import json,sys; print(json.dumps([k.strip() for k in sys.stdin.read().split(";") if k.strip()]))')
    run "$out/$name" --set focus.enabled=true --set "focus.keywords=$kw" "${extra[@]}"
    "$py" "$here/focus_score.py" --truth "$truth" --pages "$pages" --mirrors "$data/mirrors.tsv" "bfs=$out/bfs" "focused=$out/$name" | tee "$out/$name.score.txt"
    json=$("$py" "$here/focus_score.py" --truth "$truth" --pages "$pages" --mirrors "$data/mirrors.tsv" --json "bfs=$out/bfs" "focused=$out/$name")
    [[ $first == 1 ]] || echo "," >>"$out/focus.json"
    first=0
    printf '"%s": %s\n' "$name" "$json" >>"$out/focus.json"
    "$py" - "$name" "$truth" "$json" >>"$out/focus.md" <<'PY'
import json, sys
name, truth, j = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
n = sum(1 for l in open(truth) if l.strip())
b, f = j["bfs"], j["focused"]
r = lambda a, c: f"{a / c:.2f}x" if c else "n/a"
print(f"| {name} | {n} | {b['harvest_rate']:.3f} | {f['harvest_rate']:.3f} | {r(f['harvest_rate'], b['harvest_rate'])} "
      f"| {b['first_half_rate']:.3f} | {f['first_half_rate']:.3f} | {r(f['first_half_rate'], b['first_half_rate'])} "
      f"| {b['distinct_rate']:.3f} | {f['distinct_rate']:.3f} | {r(f['distinct_rate'], b['distinct_rate'])} "
      f"| {j['truth']['ceiling']:.2f}x |")
PY
done <"$topics"
echo "}" >>"$out/focus.json"
echo
cat "$out/focus.md"
echo "crawl times:"; for t in "$out"/*.time; do echo "  $(basename "$t" .time): $(cat "$t")"; done
