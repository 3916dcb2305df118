#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that docs/architecture.md names only RTL that exists, and every module that does.

    scripts/doc_modules.py [--doc docs/architecture.md] [--rtl rtl]

Every `tpu_*` name in the document must be a module or package declared in rtl/*.sv (or the
stem of an rtl/ file, e.g. tpu_assert for tpu_assert.svh); every `u_*` name must be an
instance name in rtl/*.sv; every module and package of rtl/ must appear in the module table
(the rows `| file | module | role |`), with the file it is declared in. Exit 1 with one line per
problem (file:line, what is wrong, what was expected). Run by the ctest `doc_modules`.
"""
import argparse
import glob
import os
import re
import sys

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "architecture.md"))
    ap.add_argument("--rtl", default=os.path.join(ROOT, "rtl"))
    args = ap.parse_args()
    decl, stems, instances = {}, set(), set()
    for path in sorted(glob.glob(os.path.join(args.rtl, "*.sv*"))):
        stems.add(os.path.basename(path).split(".")[0])
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in re.finditer(r"^\s*(?:module|package)\s+(\w+)", text, re.M):
            decl[m.group(1)] = os.path.basename(path)
        for m in re.finditer(r"\)\s*(u_\w+)\s*\(", text):
            instances.add(m.group(1))
        for m in re.finditer(r"^\s*\w+\s+(u_\w+)\s*\(", text, re.M):
            instances.add(m.group(1))
    problems = []
    table = {}
    with open(args.doc, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for n, line in enumerate(lines, 1):
        for name in re.findall(r"\btpu_[a-z0-9_]+", line):
            if name not in decl and name not in stems:
                problems.append(f"{args.doc}:{n}: names `{name}`, which is no module, package or "
                                f"file of {args.rtl}; expected one of: {', '.join(sorted(decl))}")
        for name in re.findall(r"\bu_[a-z0-9_]+", line):
            if name not in instances:
                problems.append(f"{args.doc}:{n}: names the instance `{name}`, which no module of "
                                f"{args.rtl} has; expected one of: {', '.join(sorted(instances))}")
        m = re.match(r"\|\s*(tpu_\w+\.svh?)\s*\|\s*`?(\w+|\(macros\))`?\s*\|", line)
        if m:
            table[m.group(2)] = (m.group(1), n)
    for name, file in sorted(decl.items()):
        if name not in table:
            problems.append(f"{args.doc}: the module table has no row for `{name}` ({file}); "
                            f"expected `| {file} | `{name}` | role |`")
        elif table[name][0] != file:
            problems.append(f"{args.doc}:{table[name][1]}: `{name}` is in {table[name][0]} by the "
                            f"table, expected {file}")
    for p in problems:
        print(p)
    if not problems:
        print(f"doc_modules: {os.path.relpath(args.doc, ROOT)} names {len(decl)} modules and "
              f"packages of rtl/, all of them, and nothing else")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
