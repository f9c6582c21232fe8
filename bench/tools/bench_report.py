#!/usr/bin/python3
"""Turns the measurements of scripts/bench_report.sh into markdown tables, target verdicts and
SVG plots (standard library only).

    bench/tools/bench_report.py RESULTS_DIR [--docs docs/PERFORMANCE.md] [--plots docs/bench]

RESULTS_DIR holds what bench_report.sh wrote:
  engine-*.jsonl   `winfer bench --zoo ... --json` (one object per model and algorithm)
  torch-*.jsonl    bench/tools/torch_bench.py (one object per model, mode, threads, batch)
  pairs-bB-tT.jsonl    bench/tools/pair_bench.py --json (both engines in one process, in turn)
  peers-MODEL-tT.json  `winfer bench --layers models/zoo/MODEL.yaml --json` (conv layers, peers)
  peer-engines.jsonl   bench/tools/peer_bench.py --json (winfer, ONNX Runtime, OpenVINO, ncnn and
                       PyTorch in one process, interleaved; memory and start-up per engine): with
                       it the section is the four-peer tables (`bench_report.sh --peers`)
  uptime-*.txt, command.txt
The markdown goes to stdout, or replaces the text between the markers
`<!-- bench_report:begin -->` and `<!-- bench_report:end -->` of --docs. --models names the
networks of the tables (default: the classic four below); --tag TAG writes between
`<!-- bench_report:TAG:begin -->` and `<!-- bench_report:TAG:end -->` instead and prefixes the
plots' file names with TAG_, so one document holds several groups measured in separate runs.
"""
import argparse
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svg_plot import PALETTE, bar_panels  # noqa: E402

ZOO = ["resnet18", "resnet50", "vgg16", "shufflenet_v2_x1_0"]  # --models replaces it
BEGIN, END = "<!-- bench_report:begin -->", "<!-- bench_report:end -->"  # --tag replaces them
PLOT_PREFIX = ""  # --tag TAG: "TAG_"
MIB = 1 << 20


def load(results_dir):
    recs = []
    for path in sorted(glob.glob(os.path.join(results_dir, "*.jsonl"))):
        if os.path.basename(path).startswith("peer-engines"):
            continue  # peer_bench.py: load_peer_engines()
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    r = json.loads(line)
                    if os.path.basename(path).startswith("pairs-"):
                        r["engine"] = "pair"  # pair_bench.py: both engines in one record
                    r.setdefault("engine", "winfer")
                    r["_file"] = os.path.basename(path)
                    recs.append(r)
    peers = {}
    for path in sorted(glob.glob(os.path.join(results_dir, "peers-*-t*.json"))):
        m = re.match(r"peers-(.+)-t(\d+)\.json$", os.path.basename(path))
        try:
            with open(path) as f:
                peers[(m.group(1), int(m.group(2)))] = json.load(f)
        except (OSError, ValueError):
            pass
    return recs, peers


class Index:
    def __init__(self, recs):
        self.recs = recs

    def get(self, model, impl, threads, batch, file_prefix=None):
        """The last record for (model, impl, threads, batch); impl = conv name or torch-eager/frozen."""
        found = None
        for r in self.recs:
            if r.get("model") == model and r.get("conv") == impl and r.get("threads") == threads \
                    and r.get("batch") == batch and "error" not in r:
                if file_prefix is None or r["_file"].startswith(file_prefix):
                    found = r
        return found


def ms(r, key="median_ms"):
    return None if r is None or r.get(key) is None else r[key]


def fmt_ms(v):
    if v is None:
        return "–"
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def fmt_mib(b):
    return "–" if b is None else f"{b / MIB:.1f}"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def fmt_ratio(x):
    return "–" if x is None else f"{x:.2f}x"


def verdict(x, limit, better="lower"):
    if x is None:
        return "not measured"
    ok = x <= limit if better == "lower" else x >= limit
    return ("**met**" if ok else "**missed**") + f" ({x:.2f} vs {'≤' if better == 'lower' else '≥'} {limit:g})"


# The configurations each side's "best" is taken from: PyTorch's compiled forms (frozen,
# optimize_for_inference) and winfer's whole-network choices (im2win, the default; winograd).
TORCH_COMPILED = ("torch-frozen", "torch-optimized")
WINFER_CHOICES = ("im2win", "winograd")


def fastest(idx, model, impls, threads, batch):
    """The record of `impls` with the lowest median in this run, or None."""
    found = [r for r in (idx.get(model, impl, threads, batch) for impl in impls) if ms(r) is not None]
    return min(found, key=ms) if found else None


def best_torch(idx, model, threads, batch):
    return fastest(idx, model, TORCH_COMPILED, threads, batch)


def best_winfer(idx, model, threads, batch):
    return fastest(idx, model, WINFER_CHOICES, threads, batch)


def beyond(r):
    """Process peak over baseline minus one copy of the weights."""
    if r is None or r.get("measured_peak_bytes") is None:
        return None
    return r["measured_peak_bytes"] - r["weights_bytes"]


def pairs_table(idx, w, threads_list, batch, limit):
    """The bench/tools/pair_bench.py records of one batch (both engines in one process, in turn)."""
    pairs = [r for r in idx.recs if r.get("engine") == "pair" and r.get("batch") == batch]
    if not pairs:
        return
    w(f"#### Latency, batch {batch}, both engines in one process, called in turn (median ms)")
    w("")
    w("| model | threads | rounds | winfer im2win | winfer winograd | PyTorch optimized | PyTorch frozen | "
      f"best winfer / best PyTorch | target ≤ {limit:g}x |")
    w("|---|--:|--:|--:|--:|--:|--:|--:|---|")
    for model in ZOO:
        for t in threads_list:
            r = next((p for p in reversed(pairs) if p["model"] == model and p["threads"] == t), None)
            if r is None:
                continue
            m = r["median_ms"]
            cells = [fmt_ms(m.get(k)) for k in ("im2win", "winograd", "torch-optimized", "torch-frozen")]
            w(f"| {model} | {t} | {r['rounds']} | " + " | ".join(cells) +
              f" | {fmt_ratio(r['ratio'])} | {verdict(r['ratio'], limit)} |")
    w("")
    w(f"`bench/tools/pair_bench.py MODEL --threads T --batch {batch}`: winfer through its C API and PyTorch in one "
      "process, each configuration called once per round in turn, so that a burst of the neighbours' load slows "
      "all of them alike; medians over the rounds. Both run with cold weights (each evicts the other's).")
    w("")


def section(idx, peers, meta):
    out = []
    w = out.append
    threads_list = sorted({r["threads"] for r in idx.recs if r.get("batch") == 1}) or [1, 2]
    w(BEGIN)
    w("")
    w("*Generated by `scripts/bench_report.sh` (bench/tools/bench_report.py); do not edit by hand between the markers.*")
    w("")
    for line in meta:
        w(line)
    w("")

    # ---- latency, batch 1
    w("#### Latency, batch 1 (median ms; p95 in parentheses)")
    w("")
    w("| model | threads | winfer im2win | winfer indirect | winfer im2col | winfer winograd | PyTorch eager | PyTorch frozen | PyTorch optimized | im2win / best PyTorch | best winfer / best PyTorch | target ≤ 0.8x |")
    w("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
    lat_verdicts = []
    for model in ZOO:
        for t in threads_list:
            cells = []
            for impl in ["im2win", "indirect", "im2col", "winograd", "torch-eager", "torch-frozen", "torch-optimized"]:
                r = idx.get(model, impl, t, 1)
                cells.append("–" if r is None else f"{fmt_ms(ms(r))} ({fmt_ms(ms(r, 'p95_ms'))})")
            torch_best = ms(best_torch(idx, model, t, 1))
            x_default = ratio(ms(idx.get(model, "im2win", t, 1)), torch_best)
            x = ratio(ms(best_winfer(idx, model, t, 1)), torch_best)
            lat_verdicts.append(x)
            w(f"| {model} | {t} | " + " | ".join(cells) + f" | {fmt_ratio(x_default)} | {fmt_ratio(x)} | {verdict(x, 0.8)} |")
    w("")
    w("Best PyTorch = the faster of frozen (`torch.jit.freeze`) and optimized (`torch.jit.optimize_for_inference`) "
      "in this run; both with OPENBLAS_CORETYPE set as winfer sets it. Best winfer = the faster of im2win (the "
      "default) and winograd (`--conv winograd`: F(4x4,3x3) or F(2x2,3x3) on the 3x3 stride-1 layers, im2win on "
      "the others); "
      "the verdict is on it. Each figure here is a process of its own, minutes from the others: a burst of the "
      "machine's load during one of them moves its ratio by 30-60%. The next table measures the same "
      "configurations in one process, called in turn, which such bursts slow alike.")
    w("")

    # ---- latency, batch 1, both engines interleaved in one process
    pairs_table(idx, w, threads_list, 1, 0.8)

    # ---- latency, batch 8
    b8 = [r for r in idx.recs if r.get("batch") == 8]
    if b8:
        w("#### Latency, batch 8 (median ms)")
        w("")
        w("| model | threads | winfer im2win | winfer winograd | PyTorch frozen | PyTorch optimized | best winfer / best PyTorch | target ≤ 1.0x |")
        w("|---|--:|--:|--:|--:|--:|--:|---|")
        for model in ZOO:
            for t in threads_list:
                a, g = idx.get(model, "im2win", t, 8), idx.get(model, "winograd", t, 8)
                f, o = idx.get(model, "torch-frozen", t, 8), idx.get(model, "torch-optimized", t, 8)
                x = ratio(ms(best_winfer(idx, model, t, 8)), ms(best_torch(idx, model, t, 8)))
                w(f"| {model} | {t} | {fmt_ms(ms(a))} | {fmt_ms(ms(g))} | {fmt_ms(ms(f))} | {fmt_ms(ms(o))} | "
                  f"{fmt_ratio(x)} | {verdict(x, 1.0)} |")
        w("")

    pairs_table(idx, w, threads_list, 8, 1.0)

    # ---- init and first run
    w("#### Start-up, batch 1, 1 thread (ms)")
    w("")
    w("| model | winfer init | winfer first run | eager init | eager first run | frozen init (script + freeze) | frozen first run |")
    w("|---|--:|--:|--:|--:|--:|--:|")
    t0 = threads_list[0]
    for model in ZOO:
        a, e, f = idx.get(model, "im2win", t0, 1), idx.get(model, "torch-eager", t0, 1), idx.get(model, "torch-frozen", t0, 1)
        w(f"| {model} | {fmt_ms(ms(a, 'init_ms'))} | {fmt_ms(ms(a, 'first_ms'))} | {fmt_ms(ms(e, 'init_ms'))} | "
          f"{fmt_ms(ms(e, 'first_ms'))} | {fmt_ms(ms(f, 'init_ms'))} | {fmt_ms(ms(f, 'first_ms'))} |")
    w("")
    w("winfer's init is loading the YAML with random weights plus `Session::create` (packing, planning, one arena); "
      "PyTorch's is building the torchvision model with its random initialisation (plus `torch.jit.script` and "
      "`torch.jit.freeze` for frozen). PyTorch gets 3 untimed warm-up calls after the first one (TorchScript "
      "specialises the graph during its first calls); winfer none.")
    w("")

    # ---- memory beyond the weights
    w("#### Memory beyond the weights (MiB): process peak over baseline minus the weights' bytes")
    w("")
    w("| model | batch | winfer peak | weights | winfer beyond | PyTorch eager peak | weights | eager beyond | winfer / eager | target ≤ 0.5x |")
    w("|---|--:|--:|--:|--:|--:|--:|--:|--:|---|")
    mem_batches = sorted({r["batch"] for r in idx.recs if r.get("conv") == "torch-eager"})
    for model in ZOO:
        for b in mem_batches:
            a = best_mem(idx, model, "im2win", b)
            e = best_mem(idx, model, "torch-eager", b)
            x = ratio(beyond(a), beyond(e))
            w(f"| {model} | {b} | {fmt_mib(a and a['measured_peak_bytes'])} | {fmt_mib(a and a['weights_bytes'])} | "
              f"{fmt_mib(beyond(a))} | {fmt_mib(e and e['measured_peak_bytes'])} | {fmt_mib(e and e['weights_bytes'])} | "
              f"{fmt_mib(beyond(e))} | {fmt_ratio(x)} | {verdict(x, 0.5)} |")
    w("")
    w("Peak = growth of VmHWM of a process of its own (winfer: from before loading the model to after the timed runs; "
      "PyTorch: from after `import torch, torchvision` to after its timed runs). Both hold their weights once: "
      "winfer packs its convolution weights at load, in place (`LoadOptions::pack_for`), and its weights column is "
      "what the model holds (exactly the OIHW bytes for im2win: a group's last panel is as wide as its channels). "
      "Convolutions followed by max pooling are computed band by band (the convolution's output is never stored).")
    w("")

    # ---- measured vs planned
    w("#### Measured process peak vs. the plan (`winfer plan`'s expected resident bytes)")
    w("")
    w("`first run`: growth of the peak resident set of a fresh process from before the load to after one run. "
      "`warm`: the same load and run again in that process after everything was freed, the heap trimmed and "
      "the peak restarted; what the first run paid once for the process (code pages, OpenBLAS's buffers, "
      "a second thread's stack) is then in the baseline, every byte the second run allocates is not. The "
      "target (no hidden allocations) is judged on `warm`.")
    w("")
    w("| model | batch | conv | threads | planned (packed W + arena) | expected (loaded + packed + arena + I/O) | first run | first / expected | warm | warm / expected | within 10% (warm) |")
    w("|---|--:|---|--:|--:|--:|--:|--:|--:|--:|---|")
    seen = set()
    for r in idx.recs:
        if r.get("engine") != "winfer" or "error" in r or r.get("measured_peak_bytes") is None:
            continue
        key = (r["model"], r["batch"], r["conv"])
        if key in seen:
            continue
        seen.add(key)
        exp = r["expected_resident_bytes"]
        x = r["measured_peak_bytes"] / exp
        warm = r.get("measured_warm_bytes")
        if warm is None:
            judged, warm_cells = "not measured (no warm figure)", "- | -"
        else:
            y = warm / exp
            judged = f"{'**met**' if abs(y - 1) <= 0.10 else '**missed**'} ({(y - 1) * 100:+.1f}%, {(warm - exp) / MIB:+.1f} MiB)"
            warm_cells = f"{fmt_mib(warm)} | {y:.3f}"
        w(f"| {r['model']} | {r['batch']} | {r['conv']} | {r['threads']} | {fmt_mib(r['planned_bytes'])} | "
          f"{fmt_mib(exp)} | {fmt_mib(r['measured_peak_bytes'])} | {x:.3f} | {warm_cells} | {judged} |")
    w("")

    # ---- im2win vs im2col end to end
    w("#### End-to-end memory: im2win (default) vs. im2col (MiB)")
    w("")
    w("| model | batch | im2win planned | im2col planned | saving (planned) | im2win measured | im2col measured | saving (measured) | target: im2win below im2col |")
    w("|---|--:|--:|--:|--:|--:|--:|--:|---|")
    for model in ZOO:
        for b in sorted({r["batch"] for r in idx.recs if r.get("conv") == "im2col"}):
            a, c = best_mem(idx, model, "im2win", b, prefer_conv_pair=True), best_mem(idx, model, "im2col", b)
            if a is None or c is None:
                continue
            sp = 100 * (1 - a["planned_bytes"] / c["planned_bytes"])
            sm = None if a.get("measured_peak_bytes") is None or c.get("measured_peak_bytes") is None else \
                100 * (1 - a["measured_peak_bytes"] / c["measured_peak_bytes"])
            ok = sp > 0 and (sm is None or sm > 0)
            # Equal plans are a tie, not a miss by rounding: said as such.
            judged = "**met**" if ok else "**equal** (planned), not below" if a["planned_bytes"] == c["planned_bytes"] \
                else "**missed**"
            w(f"| {model} | {b} | {fmt_mib(a['planned_bytes'])} | {fmt_mib(c['planned_bytes'])} | {sp:.1f}% | "
              f"{fmt_mib(a.get('measured_peak_bytes'))} | {fmt_mib(c.get('measured_peak_bytes'))} | "
              f"{'–' if sm is None else f'{sm:.1f}%'} | {judged} |")
    w("")
    w("Planned = packed weights + arena (every activation and workspace; im2col's workspace is one image's patch "
      "matrix, im2win's a few window rows, as each implementation allocates them). Measured = process peak growth.")
    w("")

    # ---- peers, conv layers only
    if peers:
        w("#### Convolution layers only, per implementation (sum over the network's conv layers of the per-layer median, ms)")
        w("")
        w("| model | threads | winfer (im2win + depthwise) | oneDNN | XNNPACK | winfer / oneDNN | winfer whole network |")
        w("|---|--:|--:|--:|--:|--:|--:|")
        for model in ZOO:
            for t in threads_list:
                rep = peers.get((model, t))
                if rep is None:
                    continue
                sums = conv_sums(rep)
                net = idx.get(model, "im2win", t, 1)
                x = ratio(sums.get("winfer"), sums.get("onednn"))
                w(f"| {model} | {t} | {fmt_ms(sums.get('winfer'))} | {fmt_ms(sums.get('onednn'))} | "
                  f"{fmt_ms(sums.get('xnnpack'))} | {fmt_ratio(x)} | {fmt_ms(ms(net))} |")
        w("")
        w("From `winfer bench --layers models/zoo/MODEL.yaml --conv im2win,depthwise,onednn,xnnpack`: each distinct "
          "conv shape timed alone (bias and fused activation included), times the number of layers with that shape. "
          "oneDNN and XNNPACK cannot run the whole network here; this is their convolution work only.")
        w("")
    w(END)
    return "\n".join(out) + "\n", lat_verdicts


def best_mem(idx, model, impl, batch, prefer_conv_pair=False):
    """A record with a memory measurement for (model, impl, batch), any thread count."""
    cands = [r for r in idx.recs if r.get("model") == model and r.get("conv") == impl and r.get("batch") == batch
             and "error" not in r and r.get("measured_peak_bytes") is not None]
    if prefer_conv_pair:
        pair = [r for r in cands if r["_file"].startswith("memory")]
        cands = pair or cands
    return cands[-1] if cands else None


def conv_sums(rep):
    counts = {l["name"]: l.get("count", 1) for l in rep.get("layers", [])}
    dw = {l["name"] for l in rep.get("layers", []) if l["params"]["groups"] > 1 and
          l["params"]["groups"] == l["params"]["in_channels"]}
    by = {}
    for r in rep.get("results", []):
        by.setdefault(r["conv"], {})[r["layer"]] = r["median_ms"]
    sums = {}
    eng = 0.0
    ok = True
    for name, n in counts.items():
        v = by.get("depthwise" if name in dw else "im2win", {}).get(name)
        if v is None:
            ok = False
        else:
            eng += n * v
    if ok:
        sums["winfer"] = eng
    for peer in ("onednn", "xnnpack"):
        if peer in by and all(name in by[peer] for name in counts):
            sums[peer] = sum(n * by[peer][name] for name, n in counts.items())
    return sums


def plots(idx, peers, plot_dir):
    os.makedirs(plot_dir, exist_ok=True)
    written = []
    threads_list = sorted({r["threads"] for r in idx.recs if r.get("batch") == 1}) or [1]
    impls = [("im2win", "winfer im2win"), ("indirect", "winfer indirect"), ("im2col", "winfer im2col"),
             ("winograd", "winfer winograd"),
             ("torch-eager", "PyTorch eager"), ("torch-frozen", "PyTorch frozen"),
             ("torch-optimized", "PyTorch optimized")]
    colors = {k: PALETTE[i] for i, (k, _) in enumerate(impls)}
    for batch in sorted({r["batch"] for r in idx.recs if r.get("runs", 0) >= 5}):
        panels = []
        for model in ZOO:
            bars = []
            for t in threads_list:
                for impl, label in impls:
                    r = idx.get(model, impl, t, batch)
                    if r is not None:
                        bars.append({"label": f"{label} {t}t", "value": r["median_ms"], "color": colors[impl],
                                     "note": f"p95 {fmt_ms(r['p95_ms'])} ms"})
            if bars:
                panels.append({"title": model, "bars": bars})
        if panels:
            name = f"latency_b{batch}.svg"
            name = PLOT_PREFIX + name
            with open(os.path.join(plot_dir, name), "w") as f:
                f.write(bar_panels(f"Median latency, batch {batch} (ms, lower is better; 1t/2t = threads)", panels,
                                   "ms", legend=[(l, colors[k]) for k, l in impls]))
            written.append(name)
    # memory beyond the weights
    panels = []
    for model in ZOO:
        bars = []
        for b in sorted({r["batch"] for r in idx.recs if r.get("conv") == "torch-eager"}):
            for impl, label, color in [("im2win", "winfer im2win", PALETTE[0]), ("im2col", "winfer im2col", PALETTE[2]),
                                       ("torch-eager", "PyTorch eager", PALETTE[3])]:
                r = best_mem(idx, model, impl, b)
                v = beyond(r)
                if v is not None:
                    bars.append({"label": f"{label} b{b}", "value": v / MIB, "color": color})
        if bars:
            panels.append({"title": model, "bars": bars})
    if panels:
        with open(os.path.join(plot_dir, PLOT_PREFIX + "memory.svg"), "w") as f:
            f.write(bar_panels("Memory beyond the weights (process peak over baseline minus weights, MiB; b = batch)",
                               panels, "MiB", legend=[("winfer im2win", PALETTE[0]), ("winfer im2col", PALETTE[2]),
                                                      ("PyTorch eager", PALETTE[3])]))
        written.append(PLOT_PREFIX + "memory.svg")
    # per-layer GFLOP/s vs peak
    for t in threads_list:
        panels = []
        for model in ZOO:
            r = idx.get(model, "im2win", t, 1)
            if r is None or "layers" not in r:
                continue
            bars = []
            for l in r["layers"]:
                if l["type"] != "conv2d" or l["gflops"] <= 0:
                    continue
                color = PALETTE[1] if l["kernel"].startswith("depthwise") else PALETTE[0]
                bars.append({"label": l["name"], "value": l["gflops"], "color": color,
                             "note": f"{l['median_ms']:.3f} ms, {l['kernel']}"})
            peak = r.get("peak_gflops", 0)
            panels.append({"title": f"{model} ({t} thread{'s' if t > 1 else ''})", "bars": bars,
                           "lines": [{"value": peak, "label": f"FMA peak {peak:.0f}"}] if peak else []})
        for p in panels:
            name = f"layers_{p['title'].split()[0]}_t{t}.svg"
            with open(os.path.join(plot_dir, name), "w") as f:
                f.write(bar_panels(f"Per-layer GFLOP/s, winfer im2win, batch 1, {t} thread(s)", [p], "GFLOP/s",
                                   legend=[("im2win", PALETTE[0]), ("depthwise", PALETTE[1])],
                                   panel_width=max(400, 9 * len(p["bars"]) + 80), value_labels=False))
            written.append(name)
    # peers: conv-only sums
    if peers:
        panels = []
        for model in ZOO:
            bars = []
            for t in threads_list:
                rep = peers.get((model, t))
                if rep is None:
                    continue
                s = conv_sums(rep)
                for key, label, color in [("winfer", "winfer", PALETTE[0]), ("onednn", "oneDNN", PALETTE[5]),
                                          ("xnnpack", "XNNPACK", PALETTE[6])]:
                    if key in s:
                        bars.append({"label": f"{label} {t}t", "value": s[key], "color": color})
            if bars:
                panels.append({"title": model, "bars": bars})
        if panels:
            with open(os.path.join(plot_dir, PLOT_PREFIX + "conv_layers_peers.svg"), "w") as f:
                f.write(bar_panels("Convolution layers only: sum of per-layer medians (ms), batch 1", panels, "ms",
                                   legend=[("winfer", PALETTE[0]), ("oneDNN", PALETTE[5]), ("XNNPACK", PALETTE[6])]))
            written.append(PLOT_PREFIX + "conv_layers_peers.svg")
    return written


# ---- bench/tools/peer_bench.py: winfer against ONNX Runtime, OpenVINO and ncnn (issue 25)

PEER_ENGINES = [("winfer-im2win", "winfer im2win"), ("winfer-winograd", "winfer winograd"),
                ("winfer-auto", "winfer auto"), ("onnxruntime", "ONNX Runtime"), ("openvino", "OpenVINO"),
                ("ncnn", "ncnn"), ("torch-frozen", "PyTorch frozen")]
PEER_ONLY = ("onnxruntime", "openvino", "ncnn")


def load_peer_engines(results_dir):
    recs = []
    for path in sorted(glob.glob(os.path.join(results_dir, "peer-engines*.jsonl"))):
        with open(path) as f:
            recs += [json.loads(line) for line in f if line.strip().startswith("{")]
    return recs


def peer_engines_section(recs, meta):
    """The four-peer tables: latency per batch, spin after a call, memory, start-up."""
    out = []
    w = out.append
    lat = [r for r in recs if r.get("kind") == "latency"]
    mem = [r for r in recs if r.get("kind") == "memory" and "error" not in r]
    vers = next((r for r in reversed(recs) if r.get("kind") == "versions"), {})
    names = [(k, label) for k, label in PEER_ENGINES
             if any(k in r["median_ms"] or k in r.get("errors", {}) for r in lat) or any(m["engine"] == k for m in mem)]
    w(BEGIN)
    w("")
    w("*Generated by `scripts/bench_report.sh --peers` (bench/tools/peer_bench.py, bench/tools/bench_report.py); "
      "do not edit by hand between the markers.*")
    w("")
    for line in meta:
        w(line)
    if vers:
        w(f"- Versions: winfer {vers.get('winfer', '?')} (commit {vers.get('winfer_commit') or '?'}), "
          f"ONNX Runtime {vers.get('onnxruntime', '–')}, OpenVINO {vers.get('openvino', '–')}, ncnn {vers.get('ncnn', '–')} (converted by pnnx {vers.get('pnnx', '–')}), "
          f"PyTorch {vers.get('torch', '–')}, numpy {vers.get('numpy', '?')}, Python {vers.get('python', '?')}; "
          f"OPENBLAS_CORETYPE={vers.get('openblas_coretype') or '(unset)'}; {vers.get('cpus', '?')} CPUs"
          + (f" ({vers['cpu']})" if vers.get("cpu") else ""))
    loads = [v for r in lat for v in (r["load_average"]["min"], r["load_average"]["max"])]
    if loads:
        w(f"- 1-minute load average during the interleaved rounds: {min(loads):.2f} to {max(loads):.2f}")
    w("")
    order = {m: i for i, m in enumerate(ZOO)}
    key = lambda r: (order.get(r["model"], len(order)), r["model"], r.get("threads", 0))  # noqa: E731
    notes = []
    for batch in sorted({r["batch"] for r in lat}):
        w(f"#### Against ONNX Runtime, OpenVINO and ncnn, batch {batch}, interleaved in one process "
          "(median ms, p10 in parentheses)")
        w("")
        w("| model | threads | rounds | " + " | ".join(label for _, label in names) +
          " | im2win ÷ best ORT/OpenVINO (target ≤ 0.9) | best winfer ÷ best peer (target ≤ 0.8) | "
          "im2win ÷ best peer | load |")
        w("|---|--:|--:|" + "--:|" * len(names) + "---|---|--:|---|")
        for r in sorted((r for r in lat if r["batch"] == batch), key=key):
            cells = []
            for k, label in names:
                if k in r["median_ms"]:
                    cells.append(f"{fmt_ms(r['median_ms'][k])} ({fmt_ms(r['p10_ms'][k])})")
                elif k in r.get("errors", {}):
                    notes.append(f"{r['model']}, batch {batch}, {r['threads']} thread(s), {label}: {r['errors'][k]}")
                    cells.append(f"not timed [{len(notes)}]")
                else:
                    cells.append("–")
            la = r["load_average"]
            best = (r.get("best_winfer") or "winfer-–")[len("winfer-"):]
            w(f"| {r['model']} | {r['threads']} | {r['rounds']} | " + " | ".join(cells) +
              f" | {verdict(r.get('ratio_im2win_best_blocked'), 0.9)} | "
              f"{verdict(r.get('ratio_best_winfer_best_peer'), 0.8)} (best: {best}) | "
              f"{fmt_ratio(r.get('ratio_im2win_best_peer'))} | {la['min']:.2f}–{la['max']:.2f} |")
        w("")
    if notes:
        w("Not timed: " + "; ".join(f"[{i + 1}] {n}" for i, n in enumerate(notes)))
        w("")
    w("`bench/tools/peer_bench.py`: the torchvision network with fixed random weights (winfer's parity weights, "
      "seed 1) exported once to ONNX (opset 17, static shape); winfer (C API, the .onnx loaded directly), ONNX "
      "Runtime and OpenVINO load that file, ncnn its pnnx conversion (fp32 weights, fp16/bf16 off), PyTorch the "
      "frozen TorchScript. Every engine's output was checked against PyTorch's eager output first (max |Δ| / "
      "max |y| ≤ 1e-4; an engine that disagrees is not timed). Each round calls every engine once in a fresh "
      "random order, after the previous call's workers went idle; medians and p10 over the rounds. Threads "
      "pinned per engine (ORT intra-op N, inter-op 1, sequential; OpenVINO INFERENCE_NUM_THREADS N, f32, "
      "LATENCY, 1 stream; ncnn num_threads N; winfer threads N). ncnn runs one image per call: its batch-8 "
      "figure is eight calls. Best peer = fastest of ONNX Runtime, OpenVINO, ncnn; best winfer = fastest of "
      "im2win (the default), winograd and auto; the ORT/OpenVINO column is issue 25's target 1 (their blocked "
      "direct convolutions: OpenVINO's oneDNN, ORT's MLAS NCHWc), the next target 2.")
    w("")
    spun = [r for r in lat if r["threads"] > 1 and r.get("spin_after_ms")]
    if spun:
        w("#### After a multi-threaded call: how long each engine's workers keep the CPU busy (median ms until the "
          "process is idle; CPU ms burnt meanwhile)")
        w("")
        w("| model | batch | threads | " + " | ".join(label for _, label in names) + " |")
        w("|---|--:|--:|" + "--:|" * len(names))
        for r in sorted(spun, key=lambda r: (key(r), r["batch"])):
            cells = [f"{r['spin_after_ms'][k]:.1f} ({r['spin_after_cpu_ms'][k]:.1f})" if k in r["spin_after_ms"]
                     else "–" for k, _ in names]
            w(f"| {r['model']} | {r['batch']} | {r['threads']} | " + " | ".join(cells) + " |")
        w("")
        w("Issue 25, target 5: no spinning workers slowing the next call of another library in the same process. "
          "Measured after each call: wall time until no other thread of the process was running in 5 looks "
          "1 ms apart (/proc/self/task/*/stat), and the process's CPU time meanwhile (at most 500 ms). Until "
          "session 15 the harness looked at the CPU time in 2 ms windows, which misses a thread spinning on the "
          "other core (its CPU clock advances at the 4 ms scheduler tick): ONNX Runtime's ~40 ms spin read as "
          "2 ms and slowed the engine timed after it.")
        w("")
    if mem:
        mem_names = [(k, label) for k, label in names if any(m["engine"] == k for m in mem)]
        peers_here = [k for k in PEER_ONLY if any(m["engine"] == k for m in mem)]
        rounds = sorted({m.get("rounds", 1) for m in mem})
        apart = ("each engine in a fresh process" +
                 (f", medians of {'/'.join(map(str, rounds))} processes" if rounds != [1] else ""))
        for what, field, target, caption in [
                (f"Peak memory beyond the weights (MiB), {apart}", "beyond_weights_bytes", 0.5,
                 "im2win ÷ best peer (target ≤ 0.5)"),
                (f"Start-up: load + first inference (ms), {apart}", "startup_ms", 1.0,
                 "im2win ÷ fastest peer (target ≤ 1.0)")]:
            w(f"#### {what}")
            w("")
            w("| model | batch | weights MiB | " + " | ".join(label for _, label in mem_names) + f" | {caption} |")
            w("|---|--:|--:|" + "--:|" * len(mem_names) + "---|")
            for model, batch in sorted({(m["model"], m["batch"]) for m in mem},
                                       key=lambda mb: (order.get(mb[0], len(order)), mb[0], mb[1])):
                by = {m["engine"]: m for m in mem if m["model"] == model and m["batch"] == batch}
                onnx = by.get("winfer-im2win") or by.get("onnxruntime") or next(iter(by.values()))
                if field == "beyond_weights_bytes":
                    cells = [fmt_mib(by[k][field]) if k in by else "–" for k, _ in mem_names]
                else:
                    cells = [f"{fmt_ms(by[k]['startup_ms'])} ({fmt_ms(by[k]['load_ms'])} + {fmt_ms(by[k]['first_ms'])})"
                             if k in by else "–" for k, _ in mem_names]
                best = min((by[k][field] for k in peers_here if k in by), default=None)
                mine = by.get("winfer-im2win", {}).get(field)
                x = ratio(mine, best) if best and best > 0 else None
                w(f"| {model} | {batch} | {fmt_mib(onnx['weights_bytes'])} | " + " | ".join(cells) +
                  f" | {verdict(x, target)} |")
            w("")
        w("Memory: VmHWM (/proc/self/status) of a fresh process after load, first inference and 3 more calls, "
          "minus VmHWM once the engine's library was loaded (for OpenVINO its CPU plugin too), minus the weights "
          "file's size (the .onnx; ncnn's .bin; PyTorch's TorchScript file); ncnn runs one image at a time, so its "
          "batch-8 figure holds one image's activations. Start-up: load (file to runnable "
          "session: parsing, packing, compiling; winfer auto times its layers here) + first inference (in "
          "parentheses), same processes, 1 thread.")
        w("")
    w(END)
    return "\n".join(out) + "\n"


def main():
    global ZOO, BEGIN, END, PLOT_PREFIX
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("--docs", help="markdown file whose bench_report section is replaced")
    ap.add_argument("--plots", help="folder for the SVG plots")
    ap.add_argument("--plots-link", default="bench", help="how the docs refer to the plot folder")
    ap.add_argument("--models", help="the networks of the tables, space- or comma-separated (default: "
                    + " ".join(ZOO) + ")")
    ap.add_argument("--tag", help="a group of its own: markers bench_report:TAG:begin/end, plots TAG_*.svg")
    args = ap.parse_args()
    if args.models:
        ZOO = [m for m in re.split(r"[ ,]+", args.models) if m]
    if args.tag:
        BEGIN, END = f"<!-- bench_report:{args.tag}:begin -->", f"<!-- bench_report:{args.tag}:end -->"
        PLOT_PREFIX = args.tag + "_"
    recs, peers = load(args.results)
    peer_engines = load_peer_engines(args.results)
    if not recs and not peer_engines:
        print(f"bench_report: no results in {args.results}", file=sys.stderr)
        return 1
    idx = Index(recs)
    meta = []
    for name, label in [("command.txt", "Command"), ("uptime-before.txt", "Load before"), ("uptime-after.txt", "Load after")]:
        p = os.path.join(args.results, name)
        if os.path.exists(p):
            with open(p) as f:
                meta.append(f"- {label}: `{f.read().strip()}`")
    cfg = next((r["config"] for r in recs if "config" in r), None)
    if cfg:
        meta.append(f"- winfer: commit {cfg['git_commit']} (plus the working tree), {cfg['build_type']} build, ISA {cfg['isa']}, "
                    f"gemm `{cfg['gemm']}`, OMP_WAIT_POLICY={cfg['omp_wait_policy'] or '(unset)'}")
    loads = [r["config"]["load_average"] for r in recs if "config" in r] + \
            [r["load_average"] for r in recs if r.get("engine") == "pytorch" and "load_average" in r]
    if loads:
        meta.append(f"- 1-minute load average at the end of each measurement: {min(loads):.2f} to {max(loads):.2f} "
                    f"(median {sorted(loads)[len(loads) // 2]:.2f}) on 2 cores")
    tv = next((r.get("torch_version") for r in recs if r.get("engine") == "pytorch"), None)
    if tv:
        meta.append(f"- PyTorch {tv} (Debian python3-torch, /usr/bin/python3), torchvision models with random weights")
    if peer_engines:  # bench_report.sh --peers: the four-peer tables only
        written = []
        text = peer_engines_section(peer_engines, meta)
    else:
        written = plots(idx, peers, args.plots) if args.plots else []
        text, _ = section(idx, peers, meta)
    if written:
        text = text.replace(END, "Plots: " + ", ".join(f"[{w}]({args.plots_link}/{w})" for w in written) + "\n\n" + END)
    if args.docs:
        with open(args.docs) as f:
            doc = f.read()
        if BEGIN in doc and END in doc:
            doc = doc[:doc.index(BEGIN)] + text.rstrip("\n") + doc[doc.index(END) + len(END):]
        else:
            doc = doc.rstrip("\n") + "\n\n" + text
        with open(args.docs, "w") as f:
            f.write(doc)
        print(f"bench_report: updated {args.docs}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
