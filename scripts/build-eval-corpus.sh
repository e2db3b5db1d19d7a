#!/usr/bin/env bash
# Build the evaluation corpus of docs/evaluation.md from text that ships with
# Debian packages and the Rust toolchain, plus synthetic near duplicates.
#
#   scripts/build-eval-corpus.sh OUT_DIR [RUST_DOC_LIMIT]
#
# Real part (natural near duplicates: license boilerplate, std/core re-exports):
#   real/debian-copyright/<pkg>.txt   every /usr/share/doc/*/copyright
#   real/debian-html/...              every *.html under /usr/share/doc
#   real/licenses/<name>.txt          /usr/share/common-licenses/*
#   real/rustdoc/...                  the first RUST_DOC_LIMIT (default 3000, sorted
#                                     by path) *.html under the first installed
#                                     toolchain's share/doc/rust/html/{std,core,alloc}
# Synthetic part (seeded, deterministic): for every 10th real file in sorted
# order, one of four derived variants, chosen round-robin:
#   synthetic/<i>-edit.txt     1% of its words replaced by random words
#   synthetic/<i>-insert.txt   a 40-word random paragraph inserted in the middle
#   synthetic/<i>-embed.txt    the file embedded between two unrelated files (containment)
#   synthetic/<i>-trim.txt     the last 5% of its words removed
# Variants are plain text made from the visible words of the source (HTML tags
# stripped by a regex), so they are derived from what the pipeline would see.
set -euo pipefail
out=${1:?usage: build-eval-corpus.sh OUT_DIR [RUST_DOC_LIMIT]}
limit=${2:-3000}
rm -rf "$out"
mkdir -p "$out/real/debian-copyright" "$out/real/debian-html" "$out/real/licenses" "$out/real/rustdoc" "$out/synthetic"

for f in /usr/share/doc/*/copyright; do
  [ -f "$f" ] || continue
  pkg=$(basename "$(dirname "$f")")
  cp "$f" "$out/real/debian-copyright/$pkg.txt"
done
find /usr/share/doc -name '*.html' -type f | sort | while read -r f; do
  rel=${f#/usr/share/doc/}
  mkdir -p "$out/real/debian-html/$(dirname "$rel")"
  cp "$f" "$out/real/debian-html/$rel"
done
for f in /usr/share/common-licenses/*; do
  [ -f "$f" ] && cp "$f" "$out/real/licenses/$(basename "$f").txt"
done
rustdoc=""
for d in "$HOME"/.rustup/toolchains/*/share/doc/rust/html; do
  [ -d "$d" ] && { rustdoc=$d; break; }
done
if [ -n "$rustdoc" ]; then
  list=$(mktemp)
  (cd "$rustdoc" && find std core alloc -name '*.html' -type f 2>/dev/null | LC_ALL=C sort >"$list") || true
  sed -n "1,${limit}p" "$list" |
    while read -r rel; do
      mkdir -p "$out/real/rustdoc/$(dirname "$rel")"
      cp "$rustdoc/$rel" "$out/real/rustdoc/$rel"
    done
  rm -f "$list"
fi

python3 - "$out" <<'PY'
import os, random, re, sys
out = sys.argv[1]
rng = random.Random(20070508)  # fixed seed: the corpus is reproducible
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(out, "real")) for f in fs)
def words(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    if path.endswith(".html"):
        text = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", text)
        text = re.sub(r"(?s)<[^>]*>", " ", text)
    return text.split()
vocab = sorted({w for p in files[::50] for w in words(p)}) or ["word"]
def rand_words(n):
    return [rng.choice(vocab) for _ in range(n)]
kinds = ["edit", "insert", "embed", "trim"]
made = 0
for i, path in enumerate(files[::10]):
    w = words(path)
    if len(w) < 50:
        continue
    kind = kinds[i % 4]
    if kind == "edit":
        w = [rng.choice(vocab) if rng.random() < 0.01 else x for x in w]
    elif kind == "insert":
        mid = len(w) // 2
        w = w[:mid] + rand_words(40) + w[mid:]
    elif kind == "embed":
        a, b = rng.choice(files), rng.choice(files)
        w = words(a)[:300] + w + words(b)[:300]
    else:
        w = w[: len(w) - max(1, len(w) // 20)]
    with open(os.path.join(out, "synthetic", f"{i:05d}-{kind}.txt"), "w") as f:
        f.write(" ".join(w) + "\n")
    made += 1
print(f"{len(files)} real files, {made} synthetic variants in {out}", file=sys.stderr)
PY
