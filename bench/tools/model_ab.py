#!/usr/bin/python3
"""Several winfer configurations of one or more models, timed call by call in turn in one
process: an A/B comparison this noisy machine cannot skew (see pair_bench.py for why separate
processes mislead here).

  /usr/bin/python3 bench/tools/model_ab.py SPEC [SPEC ...] [--threads 1] [--batch 1]
                   [--rounds 200] [--warmup 10] [--lib build/lib/libwinfer.so]

SPEC is MODEL[,key=value...]: MODEL a YAML path or a zoo name (models/zoo/MODEL.yaml), keys
conv (default im2win), pack (the algorithm the load packs for, LoadOptions::pack_for: default
conv's, none = the OIHW weights kept and every layer packed by the session), fuse (1 or 0, default 1), threads
(default --threads), lib (a
libwinfer.so, default --lib: two builds side by side in one process, each library loaded on its
own) and ipr (SessionOptions::images_per_run: 0 = the whole batch in one run; default: the
engine's own choice). Every model gets random weights (seed 1),
packed for its algorithm, and the same random input. Each round calls every configuration once,
in turn; the table gives each one's 10th percentile and median in ms, and the median's ratio
to the first configuration's. Example (the stem's fused max pooling against the unfused
graph):

  /usr/bin/python3 bench/tools/model_ab.py resnet18 resnet18,fuse=0 resnet18,conv=winograd

or the 2-thread speed-up, interleaved: model_ab.py vgg16,threads=1 vgg16,threads=2 --batch 8

--idle S sleeps S seconds before each timed call (a caller with other work between
inferences: worker threads go idle, as a server's do between requests).

--copies N (default 2) gives every configuration N sessions of its own, created in turn A B, B A,
A B, ... and each timed like a configuration; a configuration's median is that of all its copies'
calls, and "copies" shows the slowest copy's median over the fastest's. Why: where a session's
memory lands costs or saves a few percent for good (session 34: four sessions of one library
and one configuration in one process ran 17.6-18.4 ms, ResNet-18 winograd, the slow one
anywhere in the creation order; a single copy each read a 4% "speed-up" of a library against
itself). Interleaving cannot cancel that, more copies do; a difference within the copies'
spread is not one.

Libraries (lib=) are compared through copies of their files, one per session copy (in a temporary
folder, removed at the end): where a library file's pages lie in memory costs or saves a few
percent too, for as long as the file stays in the page cache, whichever is loaded first. Three
byte-identical copies of one build, side by side in one process: 1.000 / 1.025 / 1.001 (MobileNetV2,
40 rounds, 2 copies; the slow file slow in both load orders, in separate processes; session 35).
Each copy a file of its own averages that over --copies placements; a difference within the
copies' spread is not one.

--per-layer adds a table of the layers: after each timed call (outside its time) the session's
layer times (winfer_session_layer_timing); per layer the first configuration's median ms and,
for every other configuration, the median of its per-round ratios to the first (both read in the
same round, copy for copy) with their p10 and p90. The configurations must share the model (the
layers are matched by name). This is how to compare two builds layer by layer: the winfer CLI
links the library statically, so `winfer bench --per-layer` under another LD_LIBRARY_PATH runs
the same code (session 37 found per-layer "A/B" results of that kind that compared a build with
itself); two CLI binaries timed one after the other see the machine's drift (ResNet-50's
per-layer sums moved 5-8% between runs minutes apart).
"""
import argparse
import ctypes
import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from pair_bench import Winfer, interleaved_times  # noqa: E402
from torch_bench import set_openblas_coretype  # noqa: E402  (before any BLAS is loaded)


def parse_spec(spec):
    model, *pairs = spec.split(",")
    path = model if model.endswith(".yaml") else os.path.join(ROOT, "models", "zoo", model + ".yaml")
    if not os.path.exists(path):
        raise SystemExit(f"model_ab: {spec}: no model file {path}")
    options = {"conv": "im2win", "fuse": "1", "threads": "", "lib": "", "ipr": "", "pack": ""}
    for pair in pairs:
        key, _, value = pair.partition("=")
        if key not in options or not value:
            raise SystemExit(f"model_ab: {spec}: expected conv=NAME, fuse=0|1, threads=N, lib=PATH, ipr=N or pack=NAME|none, got '{pair}'")
        options[key] = value
    if options["fuse"] not in ("0", "1"):
        raise SystemExit(f"model_ab: {spec}: fuse must be 0 or 1")
    if options["threads"] and (not options["threads"].isdigit() or int(options["threads"]) < 1):
        raise SystemExit(f"model_ab: {spec}: threads must be a number >= 1")
    if options["lib"] and not os.path.exists(options["lib"]):
        raise SystemExit(f"model_ab: {spec}: no library {options['lib']}")
    if options["ipr"] and not options["ipr"].isdigit():
        raise SystemExit(f"model_ab: {spec}: ipr must be a number >= 0")
    pack = options["pack"] or options["conv"]
    return (path, options["conv"], int(options["fuse"]), int(options["threads"] or 0), options["lib"],
            int(options["ipr"]) if options["ipr"] else None, "" if pack == "none" else pack)


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("specs", nargs="+", metavar="SPEC")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "lib", "libwinfer.so"))
    ap.add_argument("--idle", type=float, default=0.0, help="seconds of sleep before each timed call")
    ap.add_argument("--copies", type=int, default=2, help="sessions per configuration, created A B, B A, ...")
    ap.add_argument("--per-layer", action="store_true", help="also the layers' times (see the module's note)")
    ap.add_argument("--top", type=int, default=0, help="--per-layer: only the N layers that differ most (0: all)")
    args = ap.parse_args()
    if args.rounds < 1 or args.threads < 1 or args.batch < 1 or args.warmup < 0 or args.idle < 0 or args.copies < 1:
        raise SystemExit("model_ab: --rounds, --threads, --batch and --copies must be at least 1, --warmup and --idle "
                         "at least 0")
    if not os.path.exists(args.lib):
        raise SystemExit(f"model_ab: {args.lib} not found (build first: scripts/build.sh)")
    set_openblas_coretype()
    with tempfile.TemporaryDirectory(prefix="model_ab.") as folder:
        run(args, folder)


def library_file(lib, copy, distinct, folder, made):
    """The file session copy `copy` loads `lib` from: where two or more libraries are compared, a copy
    of the file of its own (see the module's note), else the file itself."""
    if distinct < 2:
        return lib
    key = (lib, copy)
    if key not in made:
        made[key] = os.path.join(folder, f"{len(made)}.{os.path.basename(lib)}")
        shutil.copyfile(lib, made[key])
    return made[key]


def run(args, folder):
    libraries = {}  # file -> Winfer: each file loaded once
    made = {}

    specs = list(dict.fromkeys(args.specs))  # each configuration once, in the order given
    distinct = len({os.path.realpath(parse_spec(spec)[4] or args.lib) for spec in specs})
    calls, inputs, sessions = {}, {}, {}
    for copy in range(args.copies):
        for spec in (specs if copy % 2 == 0 else reversed(specs)):
            path, conv, fuse, threads, lib, images_per_run, pack = parse_spec(spec)
            lib = library_file(os.path.realpath(lib or args.lib), copy, distinct, folder, made)
            if lib not in libraries:
                libraries[lib] = Winfer(lib)
            winfer = libraries[lib]
            model = winfer.load(path, pack, fuse)
            count = winfer.input_count(model, args.batch)
            if count not in inputs:  # one input per size, the same for every configuration of it
                x = (ctypes.c_float * count)()
                state = 12345
                for i in range(count):  # a small LCG: reproducible, no numpy needed
                    state = (state * 1103515245 + 12345) & 0x7FFFFFFF
                    x[i] = state / 0x7FFFFFFF
                inputs[count] = x
            session, out_count = winfer.session(model, conv, threads or args.threads, args.batch, images_per_run)
            out = (ctypes.c_float * out_count)()
            x = inputs[count]
            calls[(spec, copy)] = (lambda w=winfer, s=session, x=x, n=count, o=out, m=out_count: w.check(
                w.lib.winfer_session_run(s, ctypes.addressof(x), n, o, m), "run"))
            sessions[(spec, copy)] = (winfer, session)

    layer_times = {key: [] for key in calls}  # per call: {layer name: ms}

    def read_layers(key):
        winfer, session = sessions[key]
        layer_times[key].append(session_layer_times(winfer, session))

    copy_times = interleaved_times(calls, args.warmup, args.rounds, idle=args.idle,
                                   after=read_layers if args.per_layer else None)
    times = {spec: [t for copy in range(args.copies) for t in copy_times[(spec, copy)]] for spec in specs}
    spread = {}
    for spec in specs:
        medians = [statistics.median(copy_times[(spec, copy)]) for copy in range(args.copies)]
        spread[spec] = max(medians) / min(medians)

    first = statistics.median(times[specs[0]])
    width = max(len(s) for s in specs)
    idle = f", {args.idle} s idle before each call" if args.idle else ""
    idle += ", each copy its own library file" if distinct > 1 else ""
    print(f"{'configuration':{width}s}  {'p10 ms':>9s}  {'median ms':>9s}  {'vs first':>8s}  {'copies':>6s}"
          f"   ({args.rounds} rounds, {args.threads} thread(s), batch {args.batch}, {args.copies} copies{idle})")
    for spec in specs:
        median = statistics.median(times[spec])
        print(f"{spec:{width}s}  {percentile(times[spec], 0.1):9.3f}  {median:9.3f}  {median / first:8.3f}"
              f"  {spread[spec]:6.3f}")
    if args.per_layer:
        print_layers(specs, args.copies, args.rounds, layer_times, args.top)


def session_layer_times(winfer, session):
    """{layer name: ms} of the session's last run (winfer_session_layer_timing)."""
    lib = winfer.lib
    if not getattr(lib, "_model_ab_layer_types", False):
        lib.winfer_session_layer_count.restype = ctypes.c_size_t
        lib.winfer_session_layer_count.argtypes = [ctypes.c_void_p]
        lib.winfer_session_layer_timing.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                                    ctypes.POINTER(ctypes.c_char_p), ctypes.c_void_p,
                                                    ctypes.c_void_p, ctypes.POINTER(ctypes.c_double)]
        lib._model_ab_layer_types = True
    out = {}
    name, ms = ctypes.c_char_p(), ctypes.c_double()
    for i in range(lib.winfer_session_layer_count(session)):
        winfer.check(lib.winfer_session_layer_timing(session, i, ctypes.byref(name), None, None, ctypes.byref(ms)),
                     "layer timing")
        key = name.value.decode()
        out[key] = out.get(key, 0.0) + ms.value
    return out


def print_layers(specs, copies, rounds, layer_times, top):
    """Per layer: the first configuration's median ms; for each other one the median, p10 and p90
    of its per-round ratios to the first (the same round and session copy)."""
    names = list(layer_times[(specs[0], 0)][0]) if layer_times[(specs[0], 0)] else []
    rows = []
    for name in names:
        base = [calls[name] for c in range(copies) for calls in layer_times[(specs[0], c)] if name in calls]
        cells = []
        for spec in specs[1:]:
            ratios = [other[name] / first[name]
                      for c in range(copies)
                      for first, other in zip(layer_times[(specs[0], c)], layer_times[(spec, c)])
                      if name in other and first.get(name, 0) > 0]
            cells.append((statistics.median(ratios), percentile(ratios, 0.1), percentile(ratios, 0.9))
                         if ratios else None)
        rows.append((name, statistics.median(base), cells))
    if top > 0:
        rows = sorted(rows, key=lambda r: -max((abs(c[0] - 1) for c in r[2] if c), default=0))[:top]
    width = max([len(r[0]) for r in rows] + [5])
    print(f"\nper layer ({rounds} rounds x {copies} copies; ratio = configuration / first, median "
          f"[p10, p90] of the per-round ratios)")
    print(f"  {'layer':{width}s}  {'first ms':>8s}  " + "  ".join(f"{'config ' + str(i + 2):>22s}"
                                                           for i in range(len(specs) - 1)))
    for name, base, cells in rows:
        text = "  ".join(f"{c[0]:6.3f} [{c[1]:5.3f}, {c[2]:5.3f}]" if c else f"{'-':>22s}" for c in cells)
        print(f"  {name:{width}s}  {base:8.3f}  {text}")


if __name__ == "__main__":
    main()
