#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the CTest labels of the test suite (test `test_labels`, label `lint`).

    scripts/check_test_labels.py --source ROOT [--build DIR]

gtest_discover_tests(... PROPERTIES LABELS "a;b" ...) does not give the tests two labels: the
list is split into the property list, so "a" becomes the label and "b" the name of a property
(its value the next word). List labels therefore come from the folder
(set_property(DIRECTORY PROPERTY LABELS ...)) and PROPERTIES carries single words.

--source: every gtest_discover_tests call in tests/**/CMakeLists.txt has PROPERTIES in name/value
  pairs and no value holding a ';'.
--build: in a configured and built tree, `ctest --show-only=json-v1` has only upper-case
  property names (a split label list makes a lower-case one), the executables of EXPECTED carry
  their labels, and `ctest -N -L train` lists the training chip's tests when they are built.
Exits 1 naming every offending call or test.
"""
import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

# Executable (regex on its file name) -> labels every test of it must carry.
EXPECTED = [
    (r"train_rtl_tests_n\d+", {"rtl", "device", "train"}),
    (r"random_train_chip_test_n\d+", {"rtl", "verif", "random"}),
    (r"random_train_test", {"rtl", "verif", "random"}),
    (r"pod_unit_tests", {"pod", "unit"}),
    (r"train_pod_tests", {"train", "pod"}),
    (r"train_tests", {"train"}),
    (r"tpu_sim_chip_tests_n\d+", {"sim", "rtl"}),
    (r"shard_tests", {"scaling", "unit"}),
]


def cmake_tokens(text):
    """The arguments of a CMake command body: quoted strings (without quotes) and bare words."""
    text = re.sub(r"#[^\n]*", "", text)
    return [m.group(1) if m.group(1) is not None else m.group(2)
            for m in re.finditer(r'"((?:[^"\\]|\\.)*)"|([^\s"()]+)', text)]


def discover_calls(source):
    """(file, line, argument list) of every gtest_discover_tests call under tests/."""
    for path in sorted(Path(source, "tests").rglob("CMakeLists.txt")):
        text = path.read_text()
        for m in re.finditer(r"^[ \t]*gtest_discover_tests\s*\(", text, re.M):
            depth, i = 1, m.end()
            while depth and i < len(text):
                depth += {"(": 1, ")": -1}.get(text[i], 0)
                i += 1
            yield path, text.count("\n", 0, m.start()) + 1, cmake_tokens(text[m.end():i - 1])


# gtest_discover_tests' keywords that end a PROPERTIES list.
KEYWORDS = {"EXTRA_ARGS", "WORKING_DIRECTORY", "TEST_PREFIX", "TEST_SUFFIX", "TEST_FILTER",
            "NO_PRETTY_TYPES", "NO_PRETTY_VALUES", "TEST_LIST", "DISCOVERY_TIMEOUT",
            "XML_OUTPUT_DIR", "DISCOVERY_MODE"}


def check_source(source):
    errors = []
    for path, line, args in discover_calls(source):
        where = f"{os.path.relpath(path, source)}:{line}"
        if "PROPERTIES" not in args:
            continue
        props = []
        for a in args[args.index("PROPERTIES") + 1:]:
            if a in KEYWORDS:
                break
            props.append(a)
        for a in props:
            if ";" in a:
                errors.append(f"{where}: PROPERTIES value \"{a}\" is a list; gtest_discover_tests "
                              "splits it into property pairs (use a folder label)")
        if len(props) % 2:
            errors.append(f"{where}: PROPERTIES {' '.join(props)}: not name/value pairs")
    return errors


def ctest_json(build):
    out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["tests"]


def check_build(build):
    errors = []
    tests = ctest_json(build)
    train_rtl = 0
    for t in tests:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        bad = [n for n in props if not re.fullmatch(r"[A-Z][A-Z0-9_]*", n)]
        if bad:
            errors.append(f"{t['name']}: property {bad} (a label list split into pairs?)")
        labels = set(props.get("LABELS", []))
        exe = os.path.basename(t.get("command", [""])[0] or "")
        for pattern, want in EXPECTED:
            if re.fullmatch(pattern, exe) and not want <= labels:
                errors.append(f"{t['name']} ({exe}): labels {sorted(labels)}, "
                              f"missing {sorted(want - labels)}")
        train_rtl += bool(re.fullmatch(r"train_rtl_tests_n\d+", exe))
    if train_rtl:
        listed = subprocess.run(["ctest", "-N", "-L", "^train$"], cwd=build, check=True,
                                capture_output=True, text=True).stdout
        n = len(re.findall(r"Test +#\d+: train_n\d+\.", listed))
        if n < train_rtl:
            errors.append(f"ctest -N -L train lists {n} tests of the training chip, "
                          f"expected at least the {train_rtl} of train_rtl_tests")
    print(f"check_test_labels: {len(tests)} tests, {train_rtl} of train_rtl_tests")
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True, help="the repository root")
    ap.add_argument("--build", help="a configured and built tree to check with ctest")
    args = ap.parse_args()
    errors = check_source(args.source)
    if args.build:
        errors += check_build(args.build)
    for e in errors:
        print("check_test_labels: " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
