#!/usr/bin/env bash
# Headless-browser test of the HTML reports: renders the reports of the stored
# fixture crawl (tests/data/mirror-fixture), loads each page in Debian's
# chromium (installed with apt-get if missing), and checks that
#   - the page loads and its sorting script ran (no "Uncaught" JS error),
#   - the mirrors page shows the expected mirror pairs in the rendered DOM,
#   - a click on a table header sorts without errors (DOM dump after a scripted click).
# A screenshot of each page is written to $OUT (default: target/browser-test/).
#
# Exit codes: 0 pass (or SKIP when chromium is unavailable and cannot be
# installed, with a clear message), 1 a real failure.
set -uo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-target/browser-test}
mkdir -p "$OUT"
fail() { echo "browser-test: FAIL: $*" >&2; exit 1; }

find_chromium() { command -v chromium || command -v chromium-browser || command -v google-chrome || true; }
CHROMIUM=$(find_chromium)
if [ -z "$CHROMIUM" ]; then
    echo "browser-test: chromium not found; installing Debian's chromium (apt-get)..."
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >"$OUT/apt.log" 2>&1 || true
    fi
    CHROMIUM=$(find_chromium)
fi
if [ -z "$CHROMIUM" ]; then
    echo "browser-test: SKIP: chromium is not installed and could not be installed (see $OUT/apt.log)"
    exit 0
fi

# Render the reports with the real binary from the stored crawl.
cargo build --release --quiet --bin simcrawl || fail "cargo build"
BIN="${CARGO_TARGET_DIR:-target}/release/simcrawl"
CRAWL=tests/data/mirror-fixture
for kind in summary clusters mirrors; do
    "$BIN" report "$kind" --crawl "$CRAWL" --format html >"$OUT/$kind.html" || fail "simcrawl report $kind"
done

# A copy of the mirrors page that clicks the "score" header (sorts ascending)
# and the "side B" header twice once loaded, to exercise the sorting code.
sed 's#</body>#<script>(function(){var t=document.getElementById("pairs");var h=t.querySelectorAll("th");h[9].click();h[2].click();h[2].click();document.body.setAttribute("data-clicked",h[2].className);})();</script></body>#' \
    "$OUT/mirrors.html" >"$OUT/mirrors-clicked.html"

chrome() {
    local profile
    profile=$(mktemp -d)
    timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile" --enable-logging=stderr --v=0 "$@"
    local rc=$?
    rm -rf "$profile"
    return $rc
}

for page in summary clusters mirrors mirrors-clicked; do
    url="file://$PWD/$OUT/$page.html"
    chrome --dump-dom "$url" >"$OUT/$page.dom" 2>"$OUT/$page.dom.log" || fail "$page: chromium --dump-dom exited $? (see $OUT/$page.dom.log)"
    chrome --screenshot="$OUT/$page.png" --window-size=1280,1600 "$url" >/dev/null 2>"$OUT/$page.png.log" \
        || fail "$page: chromium --screenshot exited $? (see $OUT/$page.png.log)"
    [ -s "$OUT/$page.png" ] || fail "$page: no screenshot"
    if grep -h "Uncaught" "$OUT/$page.dom.log" "$OUT/$page.png.log"; then
        fail "$page: JavaScript error"
    fi
    grep -q 'data-sort-ready="yes"' "$OUT/$page.dom" || fail "$page: the sorting script did not run"
done

# The expected mirror pairs, as the browser rendered them.
for want in '<code>a.test/</code> ↔ <code>b.test/</code>' \
            '<code>a.test/docs/</code> ↔ <code>c.test/mirror/docs/</code>' \
            '<td>a.test/docs/</td><td>c.test/mirror/docs/</td>'; do
    grep -qF "$want" "$OUT/mirrors.dom" || fail "mirrors page lacks: $want"
done
[ "$(grep -o 'class="full">full<' "$OUT/mirrors.dom" | wc -l)" -ge 1 ] || fail "no full mirror shown"
# After the scripted clicks, side B is sorted descending: c.test's row above b.test's.
grep -q 'data-clicked="sorted-desc"' "$OUT/mirrors-clicked.dom" || fail "header click did not sort"
tbody=$(sed -n '/id="pairs"/,/<\/table>/p' "$OUT/mirrors-clicked.dom" | grep -o '<td>[a-z]\.test/[^<]*</td>' | sed -n '2p;4p;6p' | tr '\n' ' ')
case "$tbody" in
    "<td>d.test/</td> <td>c.test/mirror/docs/</td> <td>b.test/</td> ") ;;
    *) fail "rows not sorted by side B descending: $tbody" ;;
esac
[ "$(grep -o '<svg' "$OUT/summary.dom" | wc -l)" = 2 ] || fail "summary page lacks its two SVG plots"

echo "browser-test: PASS (screenshots: $OUT/*.png)"
