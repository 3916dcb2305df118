#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Lists the C++ functions longer than a limit (DEVELOPERS.md: ~100 lines at most).

    scripts/long_functions.py [--max 100] [dir-or-file ...]   (default: driver tools sim)

A function is a `{` whose text before it (since the last `;`, `{` or `}`) ends in a parameter
list, optionally followed by const / override / noexcept / a trailing return type, and is not a
control statement or a lambda; its length counts the lines from its head to its closing `}`.
Comments, string and character literals are blanked first. A heuristic, not a parser: it reads
this project's clang-formatted code. Prints `lines path:line head` per function over the limit,
longest first; exit 1 if there is any.
"""
import argparse
import os
import re
import sys

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
FUNCTION_HEAD = re.compile(
    r"\)\s*(const)?\s*(override)?\s*(noexcept)?\s*(->\s*[\w:<>,\s*&]+)?$")
LAMBDA_HEAD = re.compile(r"\]\s*\([^)]*\)\s*(mutable)?\s*(->\s*[\w:<>]+)?$")
CONTROL = re.compile(r"\b(if|for|while|switch|catch)\s*\(")


def blank(src):
    """src with comments and literals replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i) + 2
        elif c == '"' and i > 0 and src[i - 1] == "R":
            d = re.match(r'R"([^(]*)\(', src[i - 1:]).group(1)
            j = src.find(")" + d + '"', i) + len(d) + 2
        elif c in "\"'" and not (c == "'" and src[i - 1:i].isalnum() and src[i + 1:i + 2].isalnum()):
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            j += 1
        else:
            out.append(c)
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", src[i:j]))
        i = j
    return "".join(out)


def long_functions(path, limit):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        s = blank(f.read())
    stack, last, found = [], 0, []
    for i, c in enumerate(s):
        if c == "{":
            head = s[last:i].strip()
            line = head.split("\n")[-1].strip()
            is_fn = bool(FUNCTION_HEAD.search(head)) and not LAMBDA_HEAD.search(head) and \
                not CONTROL.search(line)
            stack.append((i, is_fn, line))
            last = i + 1
        elif c == "}":
            if stack:
                start, is_fn, line = stack.pop()
                first, end = s.count("\n", 0, start), s.count("\n", 0, i)
                if is_fn and end - first + 1 > limit:
                    found.append((end - first + 1, f"{path}:{first + 1}", line[:90]))
            last = i + 1
        elif c == ";":
            last = i + 1
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max", type=int, default=100)
    ap.add_argument("paths", nargs="*", default=["driver", "tools", "sim"])
    args = ap.parse_args()
    found = []
    for root in args.paths:
        root = root if os.path.isabs(root) else os.path.join(ROOT, root)
        files = [root] if os.path.isfile(root) else sorted(
            os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
        for path in files:
            if path.endswith((".cpp", ".h", ".cc")):
                found += long_functions(os.path.relpath(path, ROOT), args.max)
    for lines, where, head in sorted(found, reverse=True):
        print(f"{lines:5d} {where} {head}")
    if not found:
        print(f"long_functions: no function over {args.max} lines in {' '.join(args.paths)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
