#!/usr/bin/env python3
"""Fails when the crate's top-level modules form a circle, read from `crate::` paths.

Test code is left out: files named tests.rs, inline `#[cfg(test)] mod … { }` blocks (they sit
at the end of their files) and one-line `#[cfg(test)]` items. `use crate::{a, b::c}` groups count for each
module they name. Prints every circle (strongly connected set) and the edges inside it.
"""

import os
import re
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
ROOT_FILES = {"lib.rs", "main.rs"}


def top_module(path):
    rel = os.path.relpath(path, SRC)
    first = rel.split(os.sep)[0]
    return first[:-3] if first.endswith(".rs") else first


def code_of(path):
    text = open(path, encoding="utf-8").read()
    # An inline test module runs to the end of its file; a `#[cfg(test)]` item elsewhere
    # (`mod tests;`, a test-only `use` or function) is dropped alone.
    cut = re.search(r"^\s*#\[cfg\(test\)\]\s*\n\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", text, re.M)
    if cut:
        text = text[: cut.start()]
    text = re.sub(r"^\s*#\[cfg\(test\)\]\s*\n[^\n]*;\s*$", "", text, flags=re.M)
    # Comments never name a dependency.
    text = re.sub(r"//[^\n]*", "", text)
    return text


def named_modules(code):
    found = set()
    for m in re.finditer(r"\bcrate::(\{[^;]*?\}|[A-Za-z_][A-Za-z0-9_]*)", code, re.S):
        what = m.group(1)
        if what.startswith("{"):
            for part in re.split(r",", what[1:-1]):
                name = part.strip().split("::")[0].strip("{} \n")
                if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name or ""):
                    found.add(name)
        else:
            found.add(what)
    return found


def main():
    modules = set()
    edges = {}
    for dirpath, _, files in os.walk(SRC):
        for f in files:
            if not f.endswith(".rs") or f == "tests.rs":
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, SRC)
            if rel in ROOT_FILES:
                continue
            me = top_module(path)
            modules.add(me)
            for other in named_modules(code_of(path)):
                if other != me:
                    edges.setdefault(me, {}).setdefault(other, set()).add(rel)
    # Only edges between real top-level modules.
    for a in list(edges):
        edges[a] = {b: w for b, w in edges[a].items() if b in modules}
    # Tarjan's strongly connected components.
    index, low, stack, on, sccs = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
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
            sccs.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(modules):
        if v not in index:
            visit(v)
    circles = [sorted(c) for c in sccs if len(c) > 1]
    # ARCHITECTURE.md's module map is in dependency order: every import goes to a row above.
    arch = os.path.join(SRC, "..", "ARCHITECTURE.md")
    row, rows = {}, 0
    for line in open(arch, encoding="utf-8"):
        if line.startswith("| `") and "module" not in line.split("|")[1]:
            first = line.split("|")[1]
            names = re.findall(r"`([a-z_]+)`", first)
            if names and all(n in modules for n in names):
                for name in names:
                    row[name] = rows
                rows += 1
    wrong = []
    for m in sorted(modules - set(row)):
        wrong.append(f"  {m} is not in ARCHITECTURE.md's module map")
    for a in sorted(edges):
        for b, where in sorted(edges[a].items()):
            if a in row and b in row and row[b] > row[a]:
                wrong.append(f"  {a} -> {b} goes down the module map ({', '.join(sorted(where))})")
    if "-v" in sys.argv:
        for a in sorted(edges):
            print(f"{a} -> {', '.join(sorted(edges[a]))}")
    if wrong:
        print("module-circles: ARCHITECTURE.md's module map is not the code's order:")
        print("\n".join(wrong))
        return 1
    if not circles:
        print(f"module-circles: no circle among {len(modules)} top-level modules, in the module map's order")
        return 0
    for c in circles:
        print(f"module-circles: a circle joins {len(c)} modules: {', '.join(c)}")
        for a in c:
            for b, where in sorted(edges.get(a, {}).items()):
                if b in c:
                    print(f"  {a} -> {b}  ({', '.join(sorted(where))})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
