#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Per-layer table (markdown) of one `tpusim run-cnn --json` result with its DMA bytes, and
a summary per group of layers (docs/cnn.md, "ImageNet-size networks").

    tpusim run-cnn --zoo resnet50 --quiet --json > r50.json
    scripts/cnn_zoo_table.py r50.json            # per layer, then per group
    scripts/cnn_zoo_table.py --groups r50.json   # per group only

One row per layer: op, MACs, cycles per image, MXU utilization, SCALE-Sim WS estimate and the
ratio to it, DMA bytes per image in (activations read back, weights) and out (spilled). Groups
are the layer name's first path component (/layer3.1/... -> layer3; torchvision's stages).
Python 3 standard library only.
"""
import json
import sys


def group_of(name):
    part = name.strip("/").split("/")[0]
    return part.split(".")[0] if part.startswith(("layer", "features")) else part


def kb(x):
    return f"{x / 1024:,.0f}"


def main(argv):
    groups_only = "--groups" in argv
    paths = [a for a in argv if a != "--groups"]
    r = json.load(open(paths[0]))
    n2 = r["chip_n"] ** 2
    if not groups_only:
        print("| layer | op | MACs | cycles | util. | SCALE-Sim WS | ratio | DMA in KiB (spill / weights) | DMA out KiB |")
        print("|---|---|---|---|---|---|---|---|---|")
        for l in r["layers"]:
            d = l.get("dma", {})
            ratio = l["cycles"] / l["scalesim_ws_cycles"] if l["scalesim_ws_cycles"] else 0
            print(f"| {l['name']} | {l['op']} | {l['macs']:,} | {l['cycles']:,.0f} |"
                  f" {100 * (l['utilization'] or 0):.1f} % | {l['scalesim_ws_cycles']:,.0f} |"
                  f" {ratio:.2f} | {kb(d.get('spill_in', 0) + d.get('input', 0))} /"
                  f" {kb(d.get('weights', 0))} | {kb(d.get('spill_out', 0) + d.get('output', 0))} |")
        print()
    groups = {}
    order = []
    for l in r["layers"]:
        g = group_of(l["name"])
        if g not in groups:
            groups[g] = dict(macs=0, cycles=0, ss=0, din=0, w=0, dout=0, layers=0)
            order.append(g)
        s = groups[g]
        d = l.get("dma", {})
        s["layers"] += 1
        s["macs"] += l["macs"]
        s["cycles"] += l["cycles"]
        s["ss"] += l["scalesim_ws_cycles"]
        s["din"] += d.get("spill_in", 0) + d.get("input", 0)
        s["w"] += d.get("weights", 0)
        s["dout"] += d.get("spill_out", 0) + d.get("output", 0)
    print("| group | layers | MACs | cycles | share | util. | SCALE-Sim WS | ratio | DMA in KiB (act. / weights) | DMA out KiB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    total = sum(s["cycles"] for s in groups.values()) or 1
    for g in order:
        s = groups[g]
        util = s["macs"] / (s["cycles"] * n2) if s["cycles"] else 0
        ratio = s["cycles"] / s["ss"] if s["ss"] else 0
        print(f"| {g} | {s['layers']} | {s['macs']:,} | {s['cycles']:,.0f} | {100 * s['cycles'] / total:.1f} % |"
              f" {100 * util:.1f} % | {s['ss']:,.0f} | {ratio:.2f} | {kb(s['din'])} / {kb(s['w'])} | {kb(s['dout'])} |")
    db = r["dma_bytes_per_image"]
    print(f"| **total** | {len(r['layers'])} | {r['macs_per_image']:,} | {r['cycles_per_image']:,.0f} | 100 % |"
          f" {100 * (r['mxu_utilization'] or 0):.1f} % | {r['scalesim_ws_cycles']:,.0f} |"
          f" {r['cycles_vs_scalesim'] or 0:.2f} | {kb(db.get('spill_in', 0) + db['input_images'])} /"
          f" {kb(db.get('weights', 0))} | {kb(db.get('spill_out', 0) + db['logits'])} |")


if __name__ == "__main__":
    main(sys.argv[1:])
