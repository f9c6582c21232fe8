#!/usr/bin/env python3
"""Markdown tables from `winfer bench --json` reports (the tables of docs/PERFORMANCE.md).

    bench_tables.py T1.json [T2.json ...]

Every report must be of the same layer set; each is one thread count. One row per layer, one
column per implementation, each cell the GFLOP/s of every report in order ("t1 / t2"), then the
geometric-mean rows over dense layers as `winfer bench` prints them. Standard library only.
"""
import json
import sys


def load(paths):
    reports = []
    for path in paths:
        with open(path) as f:
            reports.append(json.load(f))
    sets = {r["layer_set"] for r in reports}
    if len(sets) != 1:
        sys.exit("bench_tables.py: reports of different layer sets: %s" % ", ".join(sorted(sets)))
    return reports


def conv_order(reports):
    order = []
    for r in reports:
        for x in r["results"]:
            if x["conv"] not in order:
                order.append(x["conv"])
    return order


def shape(layer):
    p = layer["params"]
    text = "%d→%d %dx%d k%d s%d" % (p["in_channels"], p["out_channels"], p["in_h"], p["in_w"],
                                    p["kernel"][0], p["stride"][0])
    if p["padding"][0]:
        text += " p%d" % p["padding"][0]
    if p["groups"] > 1:
        text += " dw" if p["groups"] == p["in_channels"] == p["out_channels"] else " g%d" % p["groups"]
    return text


def cell(values, fmt):
    return " / ".join("–" if v is None else fmt % v for v in values)


def main(paths):
    reports = load(paths)
    convs = conv_order(reports)
    by_key = [{(x["layer"], x["conv"]): x for x in r["results"]} for r in reports]
    threads = " / ".join(str(r["threads"]) for r in reports)
    print("GFLOP/s at %s thread(s), batch %d; peak %s GFLOP/s" % (
        threads, reports[0]["batch"], " / ".join("%.0f" % r["peak_gflops"] for r in reports)))
    print()
    print("| layer | shape | MFLOP | " + " | ".join(convs) + " |")
    print("|---|---|--:|" + "--:|" * len(convs))
    for layer in reports[0]["layers"]:
        cells = []
        for conv in convs:
            values = [k.get((layer["name"], conv)) for k in by_key]
            bad = any(v is not None and v.get("mismatch") for v in values)
            cells.append(cell([None if v is None else v["gflops"] for v in values], "%.0f") + (" ✗" if bad else ""))
        mflop = layer["flops"] / 1e6
        print("| %s | %s | %s | %s |" % (layer["name"], shape(layer), "%.0f" % mflop if mflop >= 10 else "%.2g" % mflop,
                                         " | ".join(cells)))
    summaries = [{s["conv"]: s for s in r["summary"]} for r in reports]

    def summary_row(title, get, fmt):
        cells = [cell([get(s.get(c)) for s in summaries], fmt) for c in convs]
        print("| **%s** | | | %s |" % (title, " | ".join(cells)))

    summary_row("geomean GFLOP/s (dense)", lambda s: s and s["geomean_gflops"], "%.0f")
    summary_row("geomean % of peak", lambda s: s and s["geomean_percent_peak"], "%.0f%%")
    for base in ["im2col"] + [c for c in convs if any(x["conv"] == c and x["peer"] for x in reports[0]["results"])]:
        summary_row("speed-up vs " + base, lambda s, b=base: s and s["speedup_vs"].get(b), "%.2fx")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
