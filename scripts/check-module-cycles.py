#!/usr/bin/env python3
"""Module-level dependency cycles of the simcrawl library.

Reads every `.rs` file under src/ (except the binary's main.rs), finds the
`crate::...` paths in it (in `use` lines and inline paths, including
`crate::{a, b::c}` groups), and builds a graph of the top-level modules: an
edge `a -> b` when code in `src/a.rs` or `src/a/` names `crate::b`. Test
code is left out: items marked `#[cfg(test)]`, the files such a `mod` line
declares, and files named `tests.rs`.

It prints each cycle (strongly connected component of more than one module)
and its edges. An edge inside a cycle is allowed when it is listed in the
allowlist (default: scripts/module-cycles.allow, one `a -> b` per line, `#`
comments); any other edge inside a cycle is new, and the script exits 1.
Allowed edges that no longer close a cycle are reported so the list can
shrink.

Usage: scripts/check-module-cycles.py [--allow FILE] [--src DIR] [--dot]
"""

import argparse
import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip_comments_and_strings(text):
    """The source with comments and string/char literals blanked out (line
    breaks kept), so braces and `crate::` inside them are not seen."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    if text[i] == "\n":
                        out.append("\n")
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and not re.match(r"[A-Za-z0-9_]", text[i - 1] if i else " "):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]) or (c == "'" and text.startswith("'\\", i)):
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\x[0-9a-fA-F]{2}|\\.|[^\\'])'", text[i:])
            if m:
                out.append("' '")
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def drop_test_items(code):
    """Removes items preceded by `#[cfg(test)]`; returns the remaining code
    and the names of `#[cfg(test)] mod name;` declarations."""
    lines = code.split("\n")
    kept, test_mods = [], []
    i = 0
    while i < len(lines):
        if re.match(r"\s*#\[cfg\(test\)\]\s*$", lines[i]):
            j = i + 1
            while j < len(lines) and (re.match(r"\s*#\[", lines[j]) or not lines[j].strip()):
                j += 1
            if j >= len(lines):
                break
            m = re.match(r"\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;", lines[j])
            if m:
                test_mods.append(m.group(1))
                i = j + 1
                continue
            depth, seen_brace = 0, False
            while j < len(lines):
                depth += lines[j].count("{") - lines[j].count("}")
                seen_brace = seen_brace or "{" in lines[j]
                if (seen_brace and depth <= 0) or (not seen_brace and lines[j].rstrip().endswith(";")):
                    break
                j += 1
            i = j + 1
            continue
        kept.append(lines[i])
        i += 1
    return "\n".join(kept), test_mods


def crate_paths(code):
    """Top-level module names after every `crate::` in `code`."""
    names = []
    for m in re.finditer(r"\bcrate\s*::\s*", code):
        rest = code[m.end():]
        if rest.startswith("{"):
            depth, j = 0, 0
            for j, ch in enumerate(rest):
                depth += ch == "{"
                depth -= ch == "}"
                if depth == 0:
                    break
            inner = rest[1:j]
            # top-level entries of the group: split on commas at depth 0
            depth, start, parts = 0, 0, []
            for k, ch in enumerate(inner):
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                elif ch == "," and depth == 0:
                    parts.append(inner[start:k])
                    start = k + 1
            parts.append(inner[start:])
            for p in parts:
                mm = re.match(r"\s*(" + IDENT + ")", p)
                if mm:
                    names.append(mm.group(1))
        else:
            mm = re.match(IDENT, rest)
            if mm:
                names.append(mm.group(0))
    return names


def module_graph(src):
    modules = set()
    for name in os.listdir(src):
        path = os.path.join(src, name)
        if name.endswith(".rs") and name not in ("lib.rs", "main.rs"):
            modules.add(name[:-3])
        elif os.path.isdir(path) and name != "bin":
            modules.add(name)
    edges = {}
    test_files = set()
    files = []
    for root, _dirs, names in os.walk(src):
        for name in sorted(names):
            if name.endswith(".rs"):
                files.append(os.path.join(root, name))
    # Two passes: the first finds the files `#[cfg(test)] mod x;` declares.
    parsed = {}
    for path in files:
        with open(path, encoding="utf-8") as f:
            code, test_mods = drop_test_items(strip_comments_and_strings(f.read()))
        parsed[path] = code
        base = os.path.dirname(path)
        stem = os.path.basename(path)[:-3]
        sub = base if stem in ("mod", "lib", "main") else os.path.join(base, stem)
        for t in test_mods:
            test_files.add(os.path.join(sub, t + ".rs"))
            test_files.add(os.path.join(sub, t, "mod.rs"))
    for path in files:
        rel = os.path.relpath(path, src)
        top = rel.split(os.sep)[0]
        top = top[:-3] if top.endswith(".rs") else top
        if top not in modules or path in test_files or os.path.basename(path) == "tests.rs":
            continue
        if any(path.startswith(os.path.join(os.path.dirname(t), "")) and t.endswith("mod.rs") for t in test_files if os.path.exists(t)):
            continue
        for target in crate_paths(parsed[path]):
            if target in modules and target != top:
                edges.setdefault((top, target), set()).add(rel)
    return modules, edges


def sccs(nodes, edges):
    """Tarjan's strongly connected components."""
    adj = {n: sorted(b for (a, b) in edges if a == n) for n in nodes}
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in adj[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def read_allow(path):
    allowed = set()
    if not os.path.exists(path):
        return allowed
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.match(r"(" + IDENT + r")\s*->\s*(" + IDENT + r")$", line)
            if not m:
                sys.exit(f"{path}: cannot read line {line!r} (expected 'a -> b')")
            allowed.add((m.group(1), m.group(2)))
    return allowed


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default=os.path.join(here, "..", "src"))
    ap.add_argument("--allow", default=os.path.join(here, "module-cycles.allow"))
    ap.add_argument("--print-allow", action="store_true", help="print the current cycle edges in allowlist form and exit")
    ap.add_argument("--dot", action="store_true", help="print the module graph in Graphviz form and exit")
    args = ap.parse_args()

    modules, edges = module_graph(args.src)
    if args.dot:
        print("digraph modules {")
        for a, b in sorted(edges):
            print(f'  "{a}" -> "{b}";')
        print("}")
        return 0
    comps = [c for c in sccs(modules, edges) if len(c) > 1]
    in_cycle = {}
    for c in comps:
        for a, b in edges:
            if a in c and b in c:
                in_cycle[(a, b)] = c
    if args.print_allow:
        print("# Module dependency edges that close a cycle today (scripts/check-module-cycles.py).")
        print("# Remove a line when its cycle is broken; never add one.")
        for a, b in sorted(in_cycle):
            print(f"{a} -> {b}")
        return 0

    allowed = read_allow(args.allow)
    new = sorted(e for e in in_cycle if e not in allowed)
    stale = sorted(e for e in allowed if e not in in_cycle)
    for c in comps:
        print(f"cycle through {len(c)} modules: {', '.join(c)}")
    if not comps:
        print("no module cycle")
    if stale:
        print(f"{len(stale)} allowed edge(s) no longer close a cycle; remove them from {os.path.relpath(args.allow)}:")
        for a, b in stale:
            print(f"  {a} -> {b}")
    if new:
        print(f"{len(new)} new edge(s) close a module cycle (not in {os.path.relpath(args.allow)}):")
        for a, b in new:
            print(f"  {a} -> {b}    (in {', '.join(sorted(edges[(a, b)]))})")
        return 1
    print(f"ok: {len(in_cycle)} cycle edge(s), all in the allowlist")
    return 0


if __name__ == "__main__":
    sys.exit(main())
