#!/usr/bin/env bash
# Check a crawl's WARC files with warcio (https://github.com/webrecorder/warcio):
# `warcio check` (digests) and `warcio index` (every record parses) on each
# file under DIR/warc.
#
#   scripts/warcio-check.sh DIR
#
# warcio is installed into a throwaway virtualenv (removed on exit); set
# WARCIO_VENV=PATH to keep and reuse one. Exit codes: 0 all files pass,
# 1 a check failed, 2 bad usage, 3 warcio cannot be installed here (no
# python3, no venv module even after `apt-get install python3-venv`, or no
# package index).
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 DIR  (a crawl directory with warc/ in it)" >&2
    exit 2
fi
dir="$1/warc"
shopt -s nullglob
files=("$dir"/*.warc.gz)
if [ ${#files[@]} -eq 0 ]; then
    echo "warcio-check: no *.warc.gz files in $dir" >&2
    exit 1
fi

cannot_install() {
    echo "warcio-check: cannot install warcio: $1" >&2
    exit 3
}

command -v python3 >/dev/null || cannot_install "no python3"
venv="${WARCIO_VENV:-}"
if [ -z "$venv" ]; then
    venv="$(mktemp -d "${TMPDIR:-/tmp}/simcrawl-warcio.XXXXXX")"
    trap 'rm -rf "$venv"' EXIT
fi
if [ ! -x "$venv/bin/warcio" ]; then
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        # Debian and Ubuntu ship the venv module separately.
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            apt-get install -y python3-venv >/dev/null 2>&1 ||
                { apt-get update >/dev/null 2>&1 && apt-get install -y python3-venv >/dev/null 2>&1; } ||
                true
        fi
        python3 -m venv "$venv" >/dev/null 2>&1 || cannot_install "python3 -m venv fails (install python3-venv)"
    fi
    "$venv/bin/pip" install --quiet --disable-pip-version-check warcio >/dev/null 2>&1 ||
        cannot_install "pip install warcio fails (no package index?)"
fi

status=0
records=0
for f in "${files[@]}"; do
    if ! out="$("$venv/bin/warcio" check -v "$f" 2>&1)"; then
        echo "warcio check FAILED: $f"
        echo "$out"
        status=1
    fi
    if ! index="$("$venv/bin/warcio" index -f warc-type,warc-target-uri,offset "$f" 2>&1)"; then
        echo "warcio index FAILED: $f"
        echo "$index"
        status=1
    else
        records=$((records + $(printf '%s\n' "$index" | grep -c .)))
    fi
done
if [ "$status" = 0 ]; then
    echo "warcio check: ok (${#files[@]} files, $records records indexed, $("$venv/bin/warcio" --version 2>&1 | tail -1))"
fi
exit "$status"
