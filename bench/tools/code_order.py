#!/usr/bin/env python3
"""The functions networks execute, in the order libwinfer.so's link puts them (cmake/code_order.txt).

Run by scripts/code_order.sh over a build configured with -DWINFER_CODE_ORDER_TRACE=ON, where every
function starts a page of its own: trace_code_pages.c reports the pages one process executes (a
model's load, session and runs), and a page there is a function. Each model of MODELS runs at batch
1 and 8, on 1 and 2 threads, under every ISA this CPU has (WINFER_ISA; AVX-512 machines run the
AVX2 kernels too, so that both sets are listed); the fashion models with their weights files and the
ONNX files of the fuzz corpus cover the readers of real weights and of ONNX.

Order: what every ISA executes first, then each ISA's own functions in a block of their own; within
a block the functions more traces executed first (the core that every network runs, then what fewer
networks need), the library's own order among equals; then the constructors, which run at every
dlopen before a trace can start. Output: mangled names, one per line (lld --symbol-ordering-file).
"""
import argparse
import bisect
import collections
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = "code_order"

# The networks of issue 25's grid first, then zoo models whose operators they lack (concat of
# branches, dense blocks, squeeze-excitation with hard-swish, fire modules, LRN-free AlexNet).
MODELS = ["resnet18", "resnet50", "vgg16", "shufflenet_v2_x1_0", "mobilenet_v2", "efficientnet_b0",
          "regnet_y_400mf", "googlenet", "inception_v3", "densenet121", "mobilenet_v3_large", "squeezenet1_0",
          "alexnet", "mnasnet1_0", "regnet_x_400mf", "resnext50_32x4d"]
WEIGHTED = ["models/fashion/fashion_resnet.yaml", "models/fashion/fashion_shufflenet.yaml",
            "models/fashion/fashion_vgg.yaml", "models/examples/tiny_net.yaml"]


def fail(message):
    sys.exit(f"{TOOL}: {message}")


def cpu_isas():
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    isas = []
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        isas.append("avx512")
    if {"avx2", "fma"} <= flags:
        isas.append("avx2")
    return isas or ["generic"]


def functions(lib):
    """(start, end, mangled name) of the library's functions, sorted by start."""
    out = subprocess.run(["nm", "--defined-only", "-S", lib], capture_output=True, text=True, check=True).stdout
    funcs = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwWiI":
            start, size = int(parts[0], 16), int(parts[1], 16)
            funcs.append((start, start + max(size, 1), parts[3]))
    funcs.sort()
    return funcs


def executed(funcs, pages):
    """Names of the functions with code on the traced pages."""
    starts = [f[0] for f in funcs]
    names = set()
    for page in pages:
        i = bisect.bisect_right(starts, page + 4095) - 1
        while i >= 0 and funcs[i][1] > page:
            names.add(funcs[i][2])
            i -= 1
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the tracing build (WINFER_CODE_ORDER_TRACE=ON)")
    ap.add_argument("--out", default=os.path.join(ROOT, "cmake", "code_order.txt"))
    ap.add_argument("--models", default=",".join(MODELS))
    args = ap.parse_args()
    lib = os.path.join(args.build, "lib", "libwinfer.so")
    if not os.path.exists(lib):
        fail(f"{lib} not found (scripts/code_order.sh builds it)")
    with tempfile.TemporaryDirectory(prefix="code_order.", dir=args.build) as work:
        trace(args, lib, work)


def trace(args, lib, work):
    tracer = os.path.join(work, "trace_code_pages")
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-I", os.path.join(ROOT, "engine", "include"),
                    os.path.join(ROOT, "bench", "tools", "trace_code_pages.c"), "-o", tracer,
                    "-L", os.path.dirname(lib), "-lwinfer", "-Wl,-rpath," + os.path.dirname(lib), "-ldl"],
                   check=True)
    runs = []  # (label, model path, batch, threads, random weights)
    for model in args.models.split(","):
        path = os.path.join(ROOT, "models", "zoo", model + ".yaml")
        if not os.path.exists(path):
            fail(f"no zoo model {model}")
        for batch in (1, 8):
            for threads in (1, 2):
                runs.append((f"{model} b{batch} {threads}T", path, batch, threads, True))
    for rel in WEIGHTED:
        runs.append((rel, os.path.join(ROOT, rel), 1, 1, False))
    corpus = os.path.join(ROOT, "tests", "fuzz", "corpus", "onnx")
    for name in sorted(os.listdir(corpus)):
        if name.endswith(".onnx") and name != "external_self.onnx":
            runs.append((name, os.path.join(corpus, name), 0, 1, False))

    funcs = functions(lib)
    counts = collections.Counter()
    isas_of = collections.defaultdict(set)
    traces = 0
    isas = cpu_isas()
    for isa in isas:
        env = dict(os.environ, WINFER_ISA=isa, LD_BIND_NOW="1", OPENBLAS_CORETYPE=os.environ.get(
            "OPENBLAS_CORETYPE", "SkylakeX" if isa == "avx512" else "Haswell"))
        for label, path, batch, threads, random_weights in runs:
            pages_file = os.path.join(work, "pages.txt")
            cmd = [tracer, lib, path, str(batch), str(threads), "im2win", "2", pages_file]
            if random_weights:
                cmd.append("random")
            result = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if result.returncode != 0:
                fail(f"{label} ({isa}): {result.stderr.strip() or 'exit code %d' % result.returncode}")
            with open(pages_file) as f:
                pages = [int(line, 16) for line in f if line.strip()]
            names = executed(funcs, pages)
            counts.update(names)
            for name in names:
                isas_of[name].add(isa)
            traces += 1
            print(f"{TOOL}: {isa} {label}: {len(pages)} pages, {len(names)} functions", file=sys.stderr)
    position = {name: start for start, _, name in funcs}
    # The code every ISA runs first, then each ISA's own kernels in a block of their own (a machine
    # runs one ISA: the other's block stays out of its way).
    def group(name):
        return 0 if len(isas_of[name]) == len(isas) else 1 + min(isas.index(i) for i in isas_of[name])
    ordered = sorted(counts, key=lambda n: (group(n), -counts[n], position[n]))
    constructors = [name for _, _, name in funcs if name.startswith("_GLOBAL__sub_I_")]
    with open(args.out, "w") as f:
        for name in ordered + [c for c in constructors if c not in counts]:
            f.write(name + "\n")
    size = sum(end - start for start, end, name in funcs if name in counts)
    print(f"{TOOL}: {traces} traces, {len(ordered)} functions executed ({size / 1024:.0f} KiB of code without "
          f"the page alignment of the trace build), {len(constructors)} constructors: {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
