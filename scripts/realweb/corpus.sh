#!/usr/bin/env bash
# Real-web development corpus: HTML documentation from Debian packages, served
# by nginx on 127.0.0.1, one port (virtual host) per site.
#
# Usage: scripts/realweb/corpus.sh build|start|stop|seeds DATA_DIR [--all]
#
#   build  installs nginx and the documentation packages when missing
#          (apt-get, needs root), lays out the sites under DATA_DIR/sites/
#          where a package's HTML root needs it, writes DATA_DIR/nginx.conf,
#          DATA_DIR/sites.tsv and DATA_DIR/mirrors.tsv, and (re)starts nginx.
#          Idempotent: rerunning rebuilds the layout and config in place.
#   start  starts nginx on DATA_DIR/nginx.conf (no-op when it runs).
#   stop   stops it.
#   seeds  prints one seed URL per site (its entry page), leaving out the
#          focus-only sites unless --all is given.
#
# DATA_DIR/sites.tsv columns: port, name, doc root, class, entry path, package.
# Classes: original | mirror-of:NAME | banner-mirror-of:NAME | version-of:NAME
# | translated | generated | sphinx | rdoc | manual | boilerplate |
# focus-only (a site may carry several, comma-separated). focus-only sites
# are served for the focused-crawl measurements (focus.sh, focus_truth.py)
# and are not part of the near-duplicate truth (truth.py skips them, and
# run-crawl.sh does not seed them). DATA_DIR/mirrors.tsv lists the TRUE mirror sets
# (same content on several hosts: exact copies and the banner copy), one set
# a line: set name, comma-separated hosts, kind. Version-like sites serve
# different documents under the same paths and are not mirrors.
#
# Environment: RUSTUP_DOCS=DIR (a rustdoc html root; default: the newest
# ~/.rustup/toolchains/*/share/doc/rust/html, skipped when absent),
# NGINX=path (default: nginx).
set -euo pipefail

cmd=${1:-}
data=${2:-}
if [[ -z "$cmd" || -z "$data" ]]; then
    sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
mkdir -p "$data"
data=$(cd "$data" && pwd)
NGINX=${NGINX:-nginx}
HOST=127.0.0.1
BANNER='This page is served by an unofficial community mirror of the documentation. It may lag behind the original site by a few days; report broken links to the mirror operators.'

# The sites, in port order (18001, 18002, ...). Fields, separated by '|':
#   name | class | package(s) (space separated) | HTML root | entries to serve [| entry page]
# The entry page (the seed's path) defaults to index.html, else the first
# .html file of the served root.
# An empty "entries" serves the root as is (following its symlinks); a list of
# top-level names serves only those, through a directory of symlinks under
# DATA_DIR/sites/NAME (with a generated index page when the root has none).
# "@debref" lays out Debian Reference's flat name.LANG.html files as /LANG/.
# The mirror and banner copies serve the same root as their original.
SITES=(
  "django|sphinx,original|python-django-doc|/usr/share/doc/python-django-doc/html|"
  "django-mirror1|mirror-of:django|python-django-doc|/usr/share/doc/python-django-doc/html|"
  "django-mirror2|mirror-of:django|python-django-doc|/usr/share/doc/python-django-doc/html|"
  "python3.11|sphinx,original|python3.11-doc|/usr/share/doc/python3.11/html|"
  "python3.11-mirror|mirror-of:python3.11|python3.11-doc|/usr/share/doc/python3.11/html|"
  "python3.11-banner|banner-mirror-of:python3.11|python3.11-doc|/usr/share/doc/python3.11/html|"
  "debian-reference|translated|debian-reference-en debian-reference-fr debian-reference-de debian-reference-it debian-reference-es debian-reference-pt debian-reference-ja debian-reference-id debian-reference-pt-br debian-reference-zh-cn debian-reference-zh-tw|/usr/share/debian-reference|@debref"
  "debian-handbook|translated|debian-handbook|/usr/share/doc/debian-handbook/html|*"
  "glib|generated|libglib2.0-doc|/usr/share/gtk-doc/html|glib gobject gio"
  "gtk4|generated|libgtk-4-doc|/usr/share/doc/libgtk-4-doc|gtk4 gdk4 gsk4 gdk4-x11 gdk4-wayland"
  "gtk3|generated,version-of:gtk4|libgtk-3-doc|/usr/share/gtk-doc/html|gtk3 gdk3"
  "sphinx|sphinx|sphinx-doc|/usr/share/doc/sphinx-doc/html|"
  "scipy|sphinx,boilerplate|python-scipy-doc|/usr/share/doc/python-scipy-doc/html|"
  "pandas|sphinx,boilerplate|python-pandas-doc|/usr/share/doc/python-pandas-doc/html|"
  "nodejs|generated|nodejs-doc|/usr/share/doc/nodejs/api|"
  "golang|spec|golang-1.19-doc|/usr/share/doc/golang-1.19-doc/html|*"
  "ruby-mocha|rdoc,boilerplate|ruby-mocha-doc|/usr/share/doc/ruby-mocha/docs|"
  "clang-14|sphinx|clang-14-doc|/usr/share/doc/clang-14/html|"
  "clang-15|sphinx,version-of:clang-14|clang-15-doc|/usr/share/doc/clang-15/html|"
  "clang-16|sphinx,version-of:clang-14|clang-16-doc|/usr/share/doc/clang-16/html|"
  "rust-1.63|generated|rust-doc|/usr/share/doc/rust-doc/html|std alloc proc_macro test book reference nomicon edition-guide rust-by-example"
  "rust-rustup|generated,version-of:rust-1.63|@rustup|@rustup|std alloc proc_macro test book reference nomicon edition-guide rust-by-example"
  # General manuals and references whose topics reach deep into the site:
  # more distinct on-topic pages for the focused-crawl measurements (docs/focus.md).
  "postgresql|manual,focus-only|postgresql-doc-15|/usr/share/doc/postgresql-doc-15/html|"
  "erlang|manual,focus-only|erlang-doc|/usr/share/doc/erlang-doc||doc/index.html"
  "sqlite|manual,focus-only|sqlite3-doc|/usr/share/doc/sqlite3|"
  "git|manual,focus-only|git-doc|/usr/share/doc/git-doc|"
  "tornado|sphinx,focus-only|python-tornado-doc|/usr/share/doc/python-tornado-doc/html|"
  "boost|generated,focus-only|libboost1.74-doc|/usr/share/doc/libboost1.74-doc/doc/html|"
)
BASE_PORT=18001

rustup_docs() {
    if [[ -n "${RUSTUP_DOCS:-}" ]]; then echo "$RUSTUP_DOCS"; return; fi
    ls -d "$HOME"/.rustup/toolchains/*/share/doc/rust/html 2>/dev/null | sort -V | tail -1 || true
}

# Install the packages that are missing (dpkg -s decides).
ensure_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    ((${#missing[@]})) || return 0
    echo "installing: ${missing[*]}" >&2
    apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
}

# A generated entry page linking to each served entry (a directory's
# index.html, or a top-level .html file). Used only when a root has none.
write_index() {
    local dir=$1 title=$2 e
    {
        echo "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>$title</title></head><body><h1>$title</h1><ul>"
        for e in $(ls "$dir"); do
            [[ "$e" == index.html ]] && continue
            if [[ -d "$dir/$e" ]]; then
                if [[ -f "$dir/$e/index.html" ]]; then
                    echo "<li><a href=\"$e/index.html\">$e</a></li>"
                else
                    local f
                    for f in $(cd "$dir/$e" && ls *.html 2>/dev/null | sort | head -1); do
                        echo "<li><a href=\"$e/$f\">$e</a></li>"
                    done
                fi
            elif [[ "$e" == *.html ]]; then
                echo "<li><a href=\"$e\">$e</a></li>"
            fi
        done
        echo "</ul></body></html>"
    } >"$dir/index.html"
}

# Lay out one site; prints its served doc root.
layout_site() {
    local name=$1 root=$2 entries=$3 dir="$data/sites/$name" e
    if [[ -z "$entries" ]]; then
        echo "$root"
        return
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    if [[ "$entries" == "@debref" ]]; then
        # name.LANG.html -> /LANG/name.LANG.html (the pages' relative links
        # keep working); images/ is shared by every language.
        local f lang
        for f in "$root"/*.html; do
            f=${f##*/}
            lang=${f#*.}
            lang=${lang%.html}
            mkdir -p "$dir/$lang"
            ln -s "$root/$f" "$dir/$lang/$f"
            [[ -e "$dir/$lang/images" || ! -d "$root/images" ]] || ln -s "$root/images" "$dir/$lang/images"
        done
        {
            echo '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Debian Reference</title></head><body><h1>Debian Reference</h1><ul>'
            for lang in $(cd "$dir" && ls -d */ | tr -d /); do
                echo "<li><a href=\"$lang/index.$lang.html\">$lang</a></li>"
            done
            echo '</ul></body></html>'
        } >"$dir/index.html"
        echo "$dir"
        return
    fi
    if [[ "$entries" == "*" ]]; then
        entries=$(ls -A "$root")
    fi
    for e in $entries; do
        [[ -e "$root/$e" ]] && ln -s "$root/$e" "$dir/$e"
    done
    # Top-level static files (stylesheets, scripts, fonts) that pages link to
    # with ../ paths stay reachable.
    for e in "$root"/*; do
        [[ -f "$e" && ! -e "$dir/${e##*/}" && "$e" != *.html ]] && ln -s "$e" "$dir/${e##*/}"
    done
    for e in static.files; do
        [[ -d "$root/$e" && ! -e "$dir/$e" ]] && ln -s "$root/$e" "$dir/$e"
    done
    if [[ ! -e "$dir/index.html" ]]; then
        if [[ -f "$root/index.html" ]]; then ln -s "$root/index.html" "$dir/index.html"; else write_index "$dir" "$name"; fi
    fi
    echo "$dir"
}

nginx_running() {
    local pid
    pid=$(cat "$data/nginx/nginx.pid" 2>/dev/null) && [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null
}

do_start() {
    [[ -f "$data/nginx.conf" ]] || { echo "no $data/nginx.conf: run build first" >&2; exit 1; }
    if nginx_running; then
        "$NGINX" -p "$data" -c "$data/nginx.conf" -s reload
    else
        "$NGINX" -p "$data" -c "$data/nginx.conf"
    fi
    # Wait until every port answers.
    local port i
    for port in $(cut -f1 "$data/sites.tsv" | tail -n +2); do
        for i in $(seq 50); do
            (exec 3<>"/dev/tcp/$HOST/$port") 2>/dev/null && break
            sleep 0.1
        done
    done
}

do_stop() {
    if nginx_running; then
        "$NGINX" -p "$data" -c "$data/nginx.conf" -s quit
        local i
        for i in $(seq 50); do nginx_running || break; sleep 0.1; done
    fi
}

do_build() {
    local pkgs=(nginx) spec name class pkg root entries page
    for spec in "${SITES[@]}"; do
        IFS='|' read -r name class pkg root entries page <<<"$spec"
        [[ "$pkg" == @* ]] || pkgs+=($pkg)
    done
    ensure_packages "${pkgs[@]}"
    do_stop
    mkdir -p "$data/nginx/logs" "$data/nginx/tmp" "$data/sites"
    local tsv="$data/sites.tsv" conf="$data/nginx.conf" port=$BASE_PORT served entry
    printf 'port\tname\troot\tclass\tentry\tpackage\n' >"$tsv"
    cat >"$conf" <<EOF
# Generated by scripts/realweb/corpus.sh build; one server per site.
user root;
daemon on;
worker_processes 2;
pid $data/nginx/nginx.pid;
error_log $data/nginx/logs/error.log;
events { worker_connections 1024; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log $data/nginx/logs/access.log;
    client_body_temp_path $data/nginx/tmp/body;
    proxy_temp_path $data/nginx/tmp/proxy;
    fastcgi_temp_path $data/nginx/tmp/fastcgi;
    uwsgi_temp_path $data/nginx/tmp/uwsgi;
    scgi_temp_path $data/nginx/tmp/scgi;
    sendfile on;
    autoindex off;
    disable_symlinks off;
    index index.html index.htm;
    gzip off;
EOF
    for spec in "${SITES[@]}"; do
        IFS='|' read -r name class pkg root entries page <<<"$spec"
        if [[ "$root" == @rustup ]]; then
            root=$(rustup_docs)
            pkg=rustup
            if [[ -z "$root" || ! -d "$root" ]]; then
                echo "skipping $name: no rustup html docs" >&2
                port=$((port + 1))
                continue
            fi
        fi
        served=$(layout_site "$name" "$root" "$entries")
        entry=$page
        [[ -n "$entry" || -e "$served/index.html" || -e "$served/index.htm" ]] || entry=$(cd "$served" && ls *.html | sort | head -1)
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$port" "$name" "$served" "$class" "$entry" "${pkg// /,}" >>"$tsv"
        {
            echo "    server {  # $name ($class)"
            echo "        listen $HOST:$port;"
            echo "        root $served;"
            if [[ "$class" == *banner-mirror-of:* ]]; then
                echo "        sub_filter '</body>' '<div class=\"banner\">$BANNER</div></body>';"
                echo "        sub_filter_once on;"
            fi
            echo "    }"
        } >>"$conf"
        port=$((port + 1))
    done
    echo "}" >>"$conf"
    # True mirror sets: every original with its exact and banner copies.
    local mtsv="$data/mirrors.tsv" orig hosts kind
    printf 'set\thosts\tkind\n' >"$mtsv"
    for orig in $(awk -F'\t' 'NR>1 && $4 ~ /mirror-of:/ {n=$4; sub(/.*mirror-of:/, "", n); sub(/,.*/, "", n); print n}' "$tsv" | sort -u); do
        hosts=$(awk -F'\t' -v o="$orig" -v h="$HOST" 'NR>1 && ($2 == o || $4 ~ ("(^|,)(banner-)?mirror-of:" o "(,|$)")) {printf "%s%s:%s", sep, h, $1; sep=","}' "$tsv")
        kind=exact
        awk -F'\t' -v o="$orig" 'NR>1 && $4 ~ ("banner-mirror-of:" o "(,|$)") {f=1} END {exit !f}' "$tsv" && kind=exact+banner
        printf '%s\t%s\t%s\n' "$orig" "$hosts" "$kind" >>"$mtsv"
    done
    "$NGINX" -t -p "$data" -c "$conf" 2>&1 | grep -v 'syntax is ok\|test is successful' >&2 || true
    do_start
    echo "built $(($(wc -l <"$tsv") - 1)) sites; config $conf" >&2
}

case "$cmd" in
    build) do_build ;;
    start) do_start ;;
    stop) do_stop ;;
    seeds)
        all=0
        [[ "${3:-}" == --all ]] && all=1
        awk -F'\t' -v h="$HOST" -v all=$all 'NR>1 && (all || $4 !~ /(^|,)focus-only(,|$)/) {print "http://" h ":" $1 "/" $5}' "$data/sites.tsv"
        ;;
    *)
        echo "unknown command: $cmd (build|start|stop|seeds)" >&2
        exit 2
        ;;
esac
