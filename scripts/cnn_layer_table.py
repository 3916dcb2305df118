#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Per-layer table (markdown) of one or more `tpusim run-cnn --json` results.

    tpusim run-cnn --model models/resnet.onnx --images 16 --batch 1 --json > b1.json
    tpusim run-cnn --model models/resnet.onnx --images 16 --batch 16 --json > b16.json
    scripts/cnn_layer_table.py b1.json b16.json

One row per layer: op, MACs per image, then for each run the cycles per image, the MXU
utilization, the layer's share of the network's cycles and the SCALE-Sim weight-stationary
estimate (cycles per image); a last row with the totals. Python 3 standard library only.
"""
import json
import sys


def main(paths):
    runs = [json.load(open(p)) for p in paths]
    first = runs[0]
    head = "| layer | op | MACs |"
    rule = "|---|---|---|"
    for r in runs:
        head += f" batch {r['batch']}: cycles | util. | share | SCALE-Sim WS |"
        rule += "---|---|---|---|"
    print(head)
    print(rule)
    for i, layer in enumerate(first["layers"]):
        row = f"| {layer['name']} | {layer['op']} | {layer['macs']:,} |"
        for r in runs:
            l = r["layers"][i]
            total = sum(x["cycles"] for x in r["layers"]) or 1
            row += f" {l['cycles']:,.0f} | {100 * l['utilization']:.1f} % | {100 * l['cycles'] / total:.1f} % | {l['scalesim_ws_cycles']:,.0f} |"
        print(row)
    row = f"| **total** | | {first['macs_per_image']:,} |"
    for r in runs:
        row += (f" {r['cycles_per_image']:,.0f} | {100 * r['mxu_utilization']:.1f} % | 100 % |"
                f" {r['scalesim_ws_cycles']:,.0f} |")
    print(row)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
