#!/usr/bin/env bash
# Full crawl of the real-web corpus with the default config, then its score.
#
# Usage: scripts/realweb/run-crawl.sh DATA_DIR OUT_DIR [--set SECTION.KEY=VALUE ...]
#
# Runs target/release/simcrawl over the seeds of `corpus.sh seeds DATA_DIR`
# with config/default.toml except that the fixed politeness delays are off
# (min_delay_ms = 0, delay_factor = 0: the servers are local), the cap on
# requests in flight per server address is off (one local nginx serves every
# site, as config/test.toml raises it for the test web), and max_pages is
# high enough for the whole corpus. robots.txt, one request in flight per host
# and every dedup/mirror setting stay at their defaults; the default scope
# (same-domain) already covers every 127.0.0.1 port. Extra --set arguments are
# passed through (later ones win), to measure alternatives. Then scores the
# crawl with score.py against DATA_DIR/truth (written by truth.sh) into
# OUT_DIR/score.txt and OUT_DIR/score.json. OUT_DIR must not hold a crawl yet.
set -euo pipefail
data=${1:?usage: run-crawl.sh DATA_DIR OUT_DIR [--set k=v ...]}
out=${2:?usage: run-crawl.sh DATA_DIR OUT_DIR [--set k=v ...]}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bin=${SIMCRAWL:-$repo/target/release/simcrawl}
[[ -x "$bin" ]] || { echo "missing $bin: cargo build --release" >&2; exit 1; }
[[ ! -e "$out/pages.jsonl" ]] || { echo "$out already holds a crawl; pick a new OUT_DIR" >&2; exit 1; }
mkdir -p "$out"
"$here/corpus.sh" start "$data"
"$here/corpus.sh" seeds "$data" >"$out/seeds.txt"
# The config file adds nothing: every setting is the default or a --set below.
printf '# run-crawl.sh: defaults; see the --set arguments in command.txt\n' >"$out/realweb.toml"
args=(crawl --config "$out/realweb.toml" --seeds "$out/seeds.txt" --out "$out"
      --set politeness.min_delay_ms=0 --set politeness.delay_factor=0.0
      --set politeness.max_in_flight_per_ip=0
      --set crawl.max_pages=1000000 "$@")
echo "$bin ${args[*]}" >"$out/command.txt"
start=$(date +%s.%N)
"$bin" "${args[@]}" 2>&1 | tee "$out/crawl.log" | grep -v '^\s*$' | tail -5
end=$(date +%s.%N)
echo "crawl wall time: $(echo "$end - $start" | bc) s" | tee -a "$out/crawl.log"
py=python3
[[ -x "$data/venv/bin/python" ]] && py="$data/venv/bin/python"
if [[ -f "$data/truth/pages.tsv" ]]; then
    nice -n 10 "$py" "$here/score.py" --truth "$data/truth" --crawl "$out" --sites "$data/sites.tsv" --mirrors "$data/mirrors.tsv" | tee "$out/score.txt"
    nice -n 10 "$py" "$here/score.py" --truth "$data/truth" --crawl "$out" --sites "$data/sites.tsv" --mirrors "$data/mirrors.tsv" --json >"$out/score.json"
else
    echo "no $data/truth/pages.tsv: run truth.sh $data, then score.py" >&2
fi
