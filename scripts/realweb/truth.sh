#!/usr/bin/env bash
# Ground truth for the real-web corpus (see truth.py for the method).
#
# Usage: scripts/realweb/truth.sh DATA_DIR [truth.py options]
#
# Creates a throwaway venv at DATA_DIR/venv (trafilatura, numpy; used only by
# the evaluation, never by the product) unless it already imports them, then
# runs truth.py at low CPU priority. nginx must serve the corpus
# (corpus.sh build or start). Writes DATA_DIR/truth/.
set -euo pipefail
data=${1:?usage: truth.sh DATA_DIR [options]}
shift
here=$(cd "$(dirname "$0")" && pwd)
venv="$data/venv"
# Pinned for reproducible truth; override with TRAFILATURA_SPEC=trafilatura.
spec=${TRAFILATURA_SPEC:-trafilatura==2.3.1}
if ! "$venv/bin/python" -c 'import trafilatura, numpy, lxml.html.clean' 2>/dev/null; then
    ${PYTHON:-python3} -m venv "$venv"
    "$venv/bin/pip" install -q "$spec" lxml_html_clean numpy
fi
exec nice -n 10 "$venv/bin/python" "$here/truth.py" "$data" "$@"
