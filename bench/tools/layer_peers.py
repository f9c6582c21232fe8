#!/usr/bin/python3
"""winfer against ONNX Runtime (or OpenVINO) layer by layer: where a network's time goes in each
engine, on the same ONNX file (issue 25: which layers keep the default algorithm behind the peer).

    /usr/bin/python3 bench/tools/layer_peers.py MODEL [--batch 1] [--threads 1] [--rounds 3]
        [--runs 20] [--conv im2win] [--peer onnxruntime|openvino] [--build build] [--seed 1]
        [--rows all|blocks|kinds] [--json FILE]

Example (ResNet-50 at batch 1 on one thread, the per-kind table only):

    /usr/bin/python3 bench/tools/layer_peers.py resnet50 --rows kinds

MODEL is a zoo name. The ONNX file is peer_bench.py's (BUILD/peers/MODEL.seedS.bB.onnx: seed-S random
weights, exported from torchvision), made through it when missing; the tool runs in peer_bench's
venv (BUILD/peer-venv, made on the first use).

Per round, one after the other (so that a slow spell of the machine slows both): ONNX Runtime's
CPU provider with its profiler on (--runs calls; per node, the median of its `kernel_time` events,
the first 3 calls left out), then `winfer bench FILE --per-layer --json` (--runs timed runs; per
layer, its median). Over --rounds rounds each side keeps, per layer, its smallest median: the
layers' times are never compared across a slow and a quick round.

Attribution. ONNX Runtime renames and fuses: its NCHWc convolutions are named after their output
tensor (a Conv's own output, or the Relu's it absorbed; an Add it absorbed keeps the Conv's name),
so each ORT node is traced back through the Relu/Clip nodes that produced that tensor to the ONNX
Conv (or Gemm, pooling) node. --peer openvino: OpenVINO's CPU plugin (f32, LATENCY, 1 stream,
--threads threads) with PERF_COUNT on, per node the median of its real_time over --runs calls;
its nodes keep the ONNX names (a convolution's with "/WithoutBiases" appended), fused activations
and adds show as not run, and its layout conversions ("Reorder") get a row of their own; winfer's layers carry the ONNX node names already (a fused
activation, residual add or pooling is part of the layer it follows; a max pooling winfer runs
inside the convolution before it, "(fused maxpool)", has ORT's pooling node's time added to that
convolution's row). Where the two fuse an add
into different convolutions (winfer into a ResNet block's shortcut, ORT into its conv3), the
per-convolution rows differ by the add, so the tool also sums per block (the name's first two
path components, /layer1/layer1.0/) and per kind of layer (1x1, 3x3, 7x7 convolution and its
stride, depthwise, pooling, linear, other). A node one side has and the other fused away shows
0 on that side. The ORT profiler's own cost is a few microseconds per node.

Output: the rows (--rows all: convolutions, blocks and kinds; blocks; kinds), each with ORT ms,
winfer ms and winfer / ORT (> 1: winfer slower), then the totals and the sum of the differences
where winfer is slower and where it is faster. --json FILE appends one JSON object.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from torch_bench import set_openblas_coretype  # noqa: E402  (before any BLAS is loaded)

TOOL = "layer_peers"
WARMUP = 3  # ORT calls per round left out of its medians
PASS_THROUGH = ("Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "Identity")


def fail(message):
    raise SystemExit(f"{TOOL}: {message}")


def onnx_graph(path):
    """ONNX node name -> (op_type, kernel, stride, group, inputs), tensor -> producing node, and
    node -> the nodes that read its outputs."""
    import onnx
    model = onnx.load(path, load_external_data=False)
    nodes, producer, consumers = {}, {}, collections.defaultdict(list)
    for i, node in enumerate(model.graph.node):
        name = node.name or f"{node.op_type}_{i}"
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        nodes[name] = (node.op_type, tuple(attrs.get("kernel_shape", ())), tuple(attrs.get("strides", ())),
                       int(attrs.get("group", 1)), list(node.input))
        for out in node.output:
            producer[out] = name
    for name, (_, _, _, _, inputs) in nodes.items():
        for tensor in inputs:
            if tensor in producer:
                consumers[producer[tensor]].append(name)
    return nodes, producer, consumers


def fold_fused_pooling(per_layer, kernels, nodes, consumers):
    """winfer runs a max pooling that follows a convolution inside it ("... (fused maxpool)"), ORT
    as a node of its own: that node's ORT time moves into the convolution's row, so that both
    sides of the row cover the same work."""
    for name, kernel in kernels.items():
        if "fused maxpool" not in kernel or name not in per_layer:
            continue
        follower = name
        while True:  # past the activations the convolution absorbed, to the pooling
            after = consumers.get(follower, [])
            if len(after) != 1:
                break
            follower = after[0]
            if nodes[follower][0] not in PASS_THROUGH:
                break
        if follower != name and nodes[follower][0] == "MaxPool" and follower in per_layer:
            ort_ms, winfer_ms = per_layer.pop(follower)
            per_layer[name][0] += ort_ms
            per_layer[name][1] += winfer_ms


def ort_layer(ort_name, nodes, producer):
    """The ONNX node an ORT node's time belongs to: ORT's NCHWc nodes are named after their output
    tensor (plus "_nchwc"), others keep the ONNX name; back through absorbed activations."""
    if ort_name in nodes:
        name = ort_name
    else:
        tensor = ort_name[:-len("_nchwc")] if ort_name.endswith("_nchwc") else ort_name
        name = producer.get(tensor)
        if name is None:
            return ort_name  # ORT's own (ReorderInput/Output): a row of its own
    while nodes[name][0] in PASS_THROUGH and nodes[name][4] and nodes[name][4][0] in producer:
        name = producer[nodes[name][4][0]]
    return name


def kind(name, nodes):
    if name not in nodes:
        return "layout (the peer reorders)"
    op, kernel, stride, group, _ = nodes[name]
    if op == "Conv":
        k = "x".join(str(v) for v in kernel) or "?"
        s = f"/{stride[0]}" if stride and max(stride) > 1 else ""
        return f"conv {k}{s}" + (" grouped" if group > 1 else "")
    if op in ("MaxPool", "AveragePool", "GlobalAveragePool"):
        return "pooling"
    if op in ("Gemm", "MatMul"):
        return "linear"
    return "other"


def block(name):
    parts = [p for p in name.split("/") if p]
    return "/" + "/".join(parts[:2]) + "/" if len(parts) >= 3 else "(stem and head)"


def ort_round(path, threads, runs, prof_dir):
    """Per ORT node name, the median of its kernel_time over the calls after the first WARMUP."""
    import numpy as np
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(prof_dir, "ort")
    session = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    inp = session.get_inputs()[0]
    x = np.random.default_rng(1).standard_normal(inp.shape).astype(np.float32)
    for _ in range(runs + WARMUP):
        session.run(None, {inp.name: x})
    profile = session.end_profiling()
    with open(profile) as f:
        events = json.load(f)
    os.remove(profile)
    times = collections.defaultdict(list)
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            times[e["name"][:-len("_kernel_time")]].append(e["dur"] / 1000.0)
    return {n: statistics.median(v[WARMUP:] or v) for n, v in times.items()}


def ov_round(path, threads, runs):
    """Per OpenVINO node name, the median of its real_time (ms) over `runs` calls after WARMUP."""
    import numpy as np
    import openvino as ov
    core = ov.Core()
    compiled = core.compile_model(core.read_model(path), "CPU", {
        "PERF_COUNT": "YES", "INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": "f32",
        "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1})
    request = compiled.create_infer_request()
    x = np.random.default_rng(1).standard_normal(tuple(compiled.input(0).shape)).astype(np.float32)
    times = collections.defaultdict(list)
    for i in range(runs + WARMUP):
        request.infer({0: x})
        if i >= WARMUP:
            for p in request.get_profiling_info():
                times[p.node_name].append(p.real_time.total_seconds() * 1e3)
    return {n: statistics.median(v) for n, v in times.items() if max(v) > 0}


def ov_layer(ov_name, nodes, producer):
    """The ONNX node an OpenVINO node's time belongs to (its name less "/WithoutBiases"; a
    layout conversion, "<tensor>_<from>_<to>_<consumer>", a row of its own)."""
    name = ov_name[:-len("/WithoutBiases")] if ov_name.endswith("/WithoutBiases") else ov_name
    if name in nodes:
        return name
    return ort_layer(name, nodes, producer) if name in producer else "layout (reorders)"


def winfer_round(cli, path, conv, threads, runs):
    out = subprocess.run([cli, "bench", path, "--per-layer", "--json", "--conv", conv, "--threads", str(threads),
                          "--runs", str(runs), "--min-time", "0"], capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"winfer bench {path} failed: {out.stderr.strip()[-400:]}")
    report = json.loads(out.stdout)
    return {layer["name"]: layer["median_ms"] for layer in report["layers"]}, report


def winfer_kernels(report):
    return {layer["name"]: layer.get("kernel", "") for layer in report["layers"]}


def keep_min(best, new):
    for k, v in new.items():
        best[k] = min(best.get(k, v), v)


def table(title, rows, out, peer="ORT"):
    print(f"\n{title}", file=out)
    print(f"  {'':58} {peer + ' ms':>8} {'winfer ms':>10} {'ratio':>6}", file=out)
    for key, (a, b) in rows:
        ratio = f"{b / a:6.2f}" if a > 0 and b > 0 else "     -"
        print(f"  {key[:58]:58} {a:8.3f} {b:10.3f} {ratio}", file=out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--conv", default="im2win", help="winfer's algorithm (bench --conv)")
    ap.add_argument("--peer", default="onnxruntime", choices=("onnxruntime", "openvino"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rows", default="all", choices=("all", "blocks", "kinds"))
    ap.add_argument("--json", help="append one JSON object to this file")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    if min(args.batch, args.threads, args.rounds, args.runs) < 1:
        fail("--batch, --threads, --rounds and --runs must be >= 1")
    if not os.path.exists(os.path.join(ROOT, "models", "zoo", args.model + ".yaml")):
        fail(f"no zoo model {args.model}")
    cli = os.path.join(args.build, "bin", "winfer")
    if not os.access(cli, os.X_OK):
        fail(f"no {cli}: build winfer first (scripts/build.sh)")
    set_openblas_coretype()
    venv = os.path.join(args.build, "peer-venv")
    path = os.path.join(args.build, "peers", f"{args.model}.seed{args.seed}.b{args.batch}.onnx")
    if os.path.realpath(sys.prefix) != os.path.realpath(venv) or not os.path.exists(path):
        if not os.path.exists(path):  # peer_bench makes the venv and exports (no timing: --setup-only won't export)
            subprocess.run(["/usr/bin/python3", os.path.join(HERE, "peer_bench.py"), args.model, "--batch",
                            str(args.batch), "--threads", "1", "--rounds", "1", "--warmup", "0", "--engines",
                            "onnxruntime", "--no-memory", "--seed", str(args.seed), "--build", args.build],
                           check=True, stdout=subprocess.DEVNULL)
        python = os.path.join(venv, "bin", "python")
        if not os.path.exists(python):  # the ONNX file was there, the venv not (yet)
            subprocess.run(["/usr/bin/python3", os.path.join(HERE, "peer_bench.py"), args.model, "--setup-only",
                            "--build", args.build], check=True)
        if os.path.realpath(sys.prefix) != os.path.realpath(venv):
            os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])

    if args.peer == "openvino":
        import openvino as peer_module
    else:
        import onnxruntime as peer_module
    peer_label = "OV" if args.peer == "openvino" else "ORT"
    nodes, producer, consumers = onnx_graph(path)
    ort_best, wf_best, report = {}, {}, None
    with tempfile.TemporaryDirectory(prefix="layer_peers.") as prof_dir:
        for r in range(args.rounds):
            if args.peer == "openvino":
                keep_min(ort_best, ov_round(path, args.threads, args.runs))
            else:
                keep_min(ort_best, ort_round(path, args.threads, args.runs, prof_dir))
            times, report = winfer_round(cli, path, args.conv, args.threads, args.runs)
            keep_min(wf_best, times)
            print(f"{TOOL}: round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)

    per_layer = collections.OrderedDict()
    for n, ms in ort_best.items():
        layer = ov_layer(n, nodes, producer) if args.peer == "openvino" else ort_layer(n, nodes, producer)
        per_layer.setdefault(layer, [0.0, 0.0])[0] += ms
    for n, ms in wf_best.items():
        if n == "output" and n not in nodes:  # winfer's name for the classifier of a Gemm-less export
            n = next((k for k, v in nodes.items() if v[0] in ("Gemm", "MatMul")), n)
        per_layer.setdefault(n, [0.0, 0.0])[1] += ms
    fold_fused_pooling(per_layer, winfer_kernels(report), nodes, consumers)
    blocks, kinds = collections.OrderedDict(), collections.OrderedDict()
    for name, (a, b) in per_layer.items():
        for group, key in ((blocks, block(name)), (kinds, kind(name, nodes))):
            group.setdefault(key, [0.0, 0.0])
            group[key][0] += a
            group[key][1] += b

    out = sys.stdout
    print(f"{TOOL}: {args.model}, batch {args.batch}, {args.threads} thread(s), winfer --conv {args.conv} "
          f"(commit {report['config'].get('git_commit', '?')}, isa {report['config'].get('isa', '?')}), "
          f"{args.peer} {peer_module.__version__}; per layer the smallest of {args.rounds} rounds' medians "
          f"of {args.runs} calls", file=out)
    if args.rows == "all":
        table("per layer (ONNX node)", per_layer.items(), out, peer_label)
    if args.rows in ("all", "blocks"):
        table("per block", blocks.items(), out, peer_label)
    table("per kind", sorted(kinds.items(), key=lambda kv: -kv[1][1]), out, peer_label)
    total_a = sum(a for a, _ in per_layer.values())
    total_b = sum(b for _, b in per_layer.values())
    slower = sum(b - a for a, b in per_layer.values() if b > a)
    faster = sum(a - b for a, b in per_layer.values() if a > b)
    print(f"\ntotal: {peer_label} {total_a:.2f} ms, winfer {total_b:.2f} ms, ratio {total_b / total_a:.3f}; "
          f"where winfer is slower +{slower:.2f} ms, where faster -{faster:.2f} ms "
          f"(whole-network times, with each engine's overhead between layers: "
          f"winfer {report['median_ms']:.2f} ms this round)", file=out)
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps({"model": args.model, "batch": args.batch, "threads": args.threads,
                                "conv": args.conv, "peer": args.peer, args.peer: peer_module.__version__,
                                "commit": report["config"].get("git_commit"), "layers": per_layer,
                                "blocks": blocks, "kinds": kinds}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
