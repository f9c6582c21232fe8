#!/usr/bin/python3
"""winfer against ONNX Runtime, OpenVINO and ncnn (and PyTorch), the same network with the same
weights, interleaved call by call in one process; plus each engine's peak memory and start-up in a
fresh process of its own (issue 25).

    /usr/bin/python3 bench/tools/peer_bench.py MODEL [MODEL ...] [--batch 1,8] [--threads 1,2]
        [--rounds 30] [--warmup 3] [--engines winfer,onnxruntime,openvino,ncnn,torch]
        [--winfer-conv im2win,winograd,auto] [--tolerance 1e-4] [--no-memory] [--memory-threads 1]
        [--settle-ms 500] [--seed 1]
        [--build build] [--json FILE] [--setup-only]

Examples (the smoke test of docs/PERFORMANCE.md, then the full grid of issue 25):

    /usr/bin/python3 bench/tools/peer_bench.py resnet18 shufflenet_v2_x1_0 --batch 1 --threads 1 \\
        --rounds 10 --json build/peers/smoke.jsonl
    /usr/bin/python3 bench/tools/peer_bench.py resnet18 resnet50 vgg16 shufflenet_v2_x1_0 \\
        mobilenet_v2 efficientnet_b0 regnet_y_400mf --batch 1,8 --threads 1,2 --rounds 30
    scripts/bench_report.sh --peers               # that grid, its tables into docs/PERFORMANCE.md
    scripts/bench_report.sh --peers --models "resnet18 shufflenet_v2_x1_0" --threads 1 --skip-batch8 \\
        --rounds 10                               # the smoke test, tables into docs/PERFORMANCE.md

MODEL is a zoo name (models/zoo/MODEL.yaml). What happens:

1. The peers live in a venv of the build tree, BUILD/peer-venv (`/usr/bin/python3 -m venv
   --system-site-packages`, so that Debian's torch 1.13 and numpy 1.24 stay importable), made on
   the first run with the pinned versions of bench/tools/peer_requirements.txt and numpy held at
   Debian's version; the script then re-executes itself with the venv's python. They are never a
   build or test dependency of winfer.
2. Export, once, into BUILD/peers/ (the cache; delete it to redo): the torchvision model with the
   random weights of winfer's parity tests (models/tools/export_onnx.py: seed 1, random BatchNorm
   statistics, folded by torch's export) as ONNX opset 17, static shape, one file per batch; its
   TorchScript trace at batch 1; and ncnn's param/bin converted from that trace by pnnx (fp16=0:
   fp32 weights). winfer (C API, `winfer_model_load("MODEL.bB.onnx")`), ONNX Runtime and OpenVINO
   load the same ONNX file; ncnn the pnnx conversion of the same module; PyTorch the module.
3. Check: every engine's output for one seeded N(0,1) input must equal PyTorch's eager float32
   output within --tolerance, max |y - y_torch| / max |y_torch| (default 1e-4); an engine that
   disagrees (or fails to load) is reported and not timed.
4. Time: each round calls every engine once, in a freshly shuffled order (seeded), so that a
   burst of the neighbours' load slows all alike. After each call the script waits until the
   process is idle again (no CPU burnt in a 2 ms window; at most --settle-ms): ONNX Runtime's
   workers spin about 50 ms after a multi-threaded call, PyTorch's about 100 ms, and on a small
   machine a spinning worker of one engine would stall the next engine's OpenMP barriers
   (measured: 10-100x slower calls at 2 threads on 2 cores). That wait is reported per engine
   ("spin after": wall ms until idle, and the CPU ms burnt meanwhile; issue 25, target 5). Per
   engine: median and p10 of the timed rounds (ms). Ratios: winfer im2win (the default) and best
   winfer (the fastest of --winfer-conv) divided by the best peer (ONNX Runtime, OpenVINO, ncnn)
   and by the best of ONNX Runtime and OpenVINO (the peers with oneDNN-style blocked direct
   convolutions: OpenVINO's CPU plugin is oneDNN; ONNX Runtime's CPU provider is MLAS with NCHWc
   kernels). The 1-minute load average is sampled every round.
5. Memory and start-up, per engine and batch, each in a fresh subprocess (one process holding all
   engines cannot attribute its peak): VmHWM from /proc/self/status once the engine's library is
   loaded (the peak first reset to the resident set, /proc/self/clear_refs 5: the baseline) and
   after load + first inference + 3 more calls; beyond the weights = peak - baseline - the
   weights file's size (the .onnx; ncnn's .bin; the TorchScript file). Start-up = load (file to
   runnable: session creation, compilation, packing) + first inference, ms.

Threads, per engine: ONNX Runtime intra_op_num_threads=N, inter_op_num_threads=1, sequential
execution, all graph optimisations; OpenVINO INFERENCE_NUM_THREADS=N, INFERENCE_PRECISION_HINT=f32,
PERFORMANCE_HINT=LATENCY, NUM_STREAMS=1 (its own defaults otherwise: on Linux it pins its threads,
ENABLE_CPU_PINNING True; the record's "settings" has what the plugin reports); ncnn num_threads=N,
Winograd and sgemm convolutions and packing on, fp16/bf16 storage and arithmetic off; winfer
threads=N, each --winfer-conv algorithm (`auto` times every layer's candidates at session
creation); PyTorch torch.set_num_threads(N), torch.jit.freeze(torch.jit.script(module)) as
pair_bench.py. ncnn runs one image per call, so its batch-8 figure is 8 extractions in turn (how
ncnn is used). OPENBLAS_CORETYPE is set as winfer sets it (SkylakeX with AVX-512, Haswell with
AVX2) before any library loads.

Output: a table per (model, batch, threads) on stdout; with --json FILE one JSON object per line
appended to FILE ("kind": "latency" per cell, "kind": "memory" per engine and batch, "kind":
"versions" once), which bench/tools/bench_report.py turns into docs/PERFORMANCE.md's peer tables.
"""
import argparse
import ctypes
import json
import os
import random
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "models", "tools"))
from torch_bench import set_openblas_coretype  # noqa: E402  (before any BLAS is loaded)

REQUIREMENTS = os.path.join(HERE, "peer_requirements.txt")
OPSET = 17
SIZE = 224
PEERS = ("onnxruntime", "openvino", "ncnn")
BLOCKED_PEERS = ("onnxruntime", "openvino")  # oneDNN-style blocked direct convolutions
ENGINES = ("winfer", "onnxruntime", "openvino", "ncnn", "torch")
TOOL = "peer_bench"


def fail(message):
    raise SystemExit(f"{TOOL}: {message}")


# ---------------------------------------------------------------------------------------------
# The venv


def venv_python(build):
    return os.path.join(build, "peer-venv", "bin", "python")


def ensure_venv(build):
    """BUILD/peer-venv with the pinned peers; made on the first call. Returns its python."""
    python = venv_python(build)
    stamp = os.path.join(build, "peer-venv", ".requirements")
    with open(REQUIREMENTS) as f:
        wanted = f.read()
    if os.path.exists(python) and os.path.exists(stamp) and open(stamp).read() == wanted:
        return python
    print(f"{TOOL}: making {os.path.dirname(os.path.dirname(python))} (pip install of "
          f"{REQUIREMENTS}; a few minutes, once)", file=sys.stderr)
    try:
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages",
                        os.path.join(build, "peer-venv")], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        fail(f"cannot make the venv ({e}; Debian: apt-get install python3-venv)")
    # numpy stays at Debian's version: torch 1.13 (Debian) is built against numpy 1.x, and pip
    # would otherwise pull a numpy 2 into the venv for a peer that accepts it.
    import numpy
    constraints = os.path.join(build, "peer-venv", "constraints.txt")
    with open(constraints, "w") as f:
        f.write(f"numpy=={numpy.__version__}\n")
    if subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "-q", "-r", REQUIREMENTS,
                       "-c", constraints]).returncode != 0:
        fail(f"pip could not install {REQUIREMENTS} into the venv (PyPI reachable? see pip's message above)")
    with open(stamp, "w") as f:
        f.write(wanted)
    return python


def versions(engines):
    out = {}
    import numpy
    out["numpy"] = numpy.__version__
    out["python"] = sys.version.split()[0]
    import torch  # it exports every model, whether or not it is timed
    out["torch"] = torch.__version__
    if "onnxruntime" in engines:
        import onnxruntime
        out["onnxruntime"] = onnxruntime.__version__
    if "openvino" in engines:
        import openvino
        out["openvino"] = openvino.__version__
    if "ncnn" in engines:
        import ncnn
        out["ncnn"] = ncnn.__version__
        try:
            import importlib.metadata
            out["pnnx"] = importlib.metadata.version("pnnx")
        except Exception:
            pass
    return out


# ---------------------------------------------------------------------------------------------
# The files every engine loads (BUILD/peers/)


class Files:
    def __init__(self, cache, model, seed):
        self.stem = os.path.join(cache, f"{model}.seed{seed}")
        self.model, self.seed = model, seed

    def onnx(self, batch):
        return f"{self.stem}.b{batch}.onnx"

    @property
    def torchscript(self):
        return f"{self.stem}.b1.pt"

    @property
    def ncnn_param(self):
        return f"{self.stem}.ncnn.param"

    @property
    def ncnn_bin(self):
        return f"{self.stem}.ncnn.bin"

    def input(self, batch):
        return f"{self.stem}.b{batch}.input.npy"

    def reference(self, batch):
        return f"{self.stem}.b{batch}.torch.npy"


def golden_input(batch, seed):
    import numpy as np
    return np.random.default_rng(seed).standard_normal((batch, 3, SIZE, SIZE), dtype=np.float32)


def prepare(files, batches, engines, log):
    """Exports what is missing; returns the torch module (the reference), built once."""
    import numpy as np
    import torch
    from export_onnx import export, zoo_model
    net = zoo_model(files.model, files.seed)
    for b in batches:
        x = golden_input(b, files.seed)
        if not os.path.exists(files.onnx(b)):
            seconds = export(net, files.onnx(b) + ".tmp", OPSET, (b, 3, SIZE, SIZE))
            os.replace(files.onnx(b) + ".tmp", files.onnx(b))
            log(f"exported {files.onnx(b)} ({seconds:.1f} s)")
        if not os.path.exists(files.reference(b)):
            with torch.no_grad():
                y = net(torch.from_numpy(x)).numpy()
            np.save(files.input(b), x)
            np.save(files.reference(b), y)
    if "ncnn" in engines and not (os.path.exists(files.ncnn_param) and os.path.exists(files.ncnn_bin)):
        if not os.path.exists(files.torchscript):
            with torch.no_grad():
                traced = torch.jit.trace(net, torch.from_numpy(golden_input(1, files.seed)))
            traced.save(files.torchscript)
        convert_ncnn(files, log)
    if "torch" in engines and not os.path.exists(files.torchscript):
        with torch.no_grad():
            traced = torch.jit.trace(net, torch.from_numpy(golden_input(1, files.seed)))
        traced.save(files.torchscript)
    return net


def convert_ncnn(files, log):
    """pnnx: the TorchScript trace -> ncnn param/bin, fp32 weights (fp16=0)."""
    import pnnx
    work = files.stem + ".pnnx"
    os.makedirs(work, exist_ok=True)
    base = os.path.join(work, os.path.basename(files.stem))
    args = [pnnx.EXEC_PATH, os.path.abspath(files.torchscript), f"inputshape=[1,3,{SIZE},{SIZE}]", "fp16=0",
            f"pnnxparam={base}.pnnx.param", f"pnnxbin={base}.pnnx.bin", f"pnnxpy={base}_pnnx.py",
            f"pnnxonnx={base}.pnnx.onnx", f"ncnnparam={files.ncnn_param}", f"ncnnbin={files.ncnn_bin}",
            f"ncnnpy={base}_ncnn.py"]
    begin = time.time()
    run = subprocess.run(args, cwd=work, capture_output=True, text=True)
    if run.returncode != 0 or not os.path.exists(files.ncnn_bin):
        with open(base + ".log", "w") as f:
            f.write(run.stdout + run.stderr)
        raise RuntimeError(f"pnnx failed (exit {run.returncode}; log {base}.log)")
    log(f"converted {files.ncnn_param} with pnnx ({time.time() - begin:.1f} s)")


# ---------------------------------------------------------------------------------------------
# The engines: each load() returns call() -> output (numpy, [batch, classes])


def winfer_lib(build):
    from pair_bench import Winfer
    lib = os.path.join(build, "lib", "libwinfer.so")
    if not os.path.exists(lib):
        fail(f"{lib} not found (build it: flock /tmp/winfer-build.lock cmake --build {build} --target winfer_lib)")
    return Winfer(lib)


def load_winfer(winfer, onnx_path, conv, threads, batch):
    import numpy as np
    from pair_bench import LoadOptions
    options = LoadOptions()
    winfer.lib.winfer_load_options_init(ctypes.byref(options))
    options.use_random_weights = 0
    options.fuse = 1
    # Packed once at load for that algorithm, as `winfer bench --conv` does; "auto" packs per layer.
    options.pack_for = b"" if conv == "auto" else conv.encode()
    model = ctypes.c_void_p()
    winfer.check(winfer.lib.winfer_model_load(onnx_path.encode(), ctypes.byref(options), ctypes.byref(model)),
                 f"loading {onnx_path}")
    session, out_count = winfer.session(model, conv, threads, batch)
    winfer.lib.winfer_model_destroy(model)  # the session keeps what it needs
    out = np.empty(out_count, dtype=np.float32)
    run = winfer.lib.winfer_session_run
    keep = []

    def call(x):
        if not keep or keep[0] is not x:
            keep[:] = [np.ascontiguousarray(x, dtype=np.float32)]
        xx = keep[0]
        winfer.check(run(session, xx.ctypes.data, xx.size, out.ctypes.data, out_count), "run")
        return out.reshape(batch, -1)
    return call


def load_onnxruntime(onnx_path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    out_name = sess.get_outputs()[0].name
    return lambda x: sess.run([out_name], {name: x})[0]


def load_openvino(onnx_path, threads, core=None):
    import openvino as ov
    core = core or ov.Core()
    compiled = core.compile_model(core.read_model(onnx_path), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY",
        "NUM_STREAMS": 1})
    request = compiled.create_infer_request()
    bound = []

    def call(x):
        if not bound or bound[0] is not x:
            bound[:] = [x]
            request.set_input_tensor(ov.Tensor(x, shared_memory=True))
        request.infer()
        return request.get_output_tensor().data
    call.properties = {}  # what the plugin made of the configuration, for the record
    for key in ("INFERENCE_NUM_THREADS", "INFERENCE_PRECISION_HINT", "PERFORMANCE_HINT", "NUM_STREAMS",
                "ENABLE_CPU_PINNING", "ENABLE_HYPER_THREADING", "SCHEDULING_CORE_TYPE"):
        try:
            call.properties[key] = str(compiled.get_property(key))
        except Exception:  # a property this OpenVINO does not have
            pass
    return call


def load_ncnn(param, bin_path, threads):
    import ncnn
    import numpy as np
    net = ncnn.Net()
    o = net.opt
    o.num_threads = threads
    o.use_fp16_packed = False
    o.use_fp16_storage = False
    o.use_fp16_arithmetic = False
    o.use_bf16_storage = False
    o.use_winograd_convolution = True
    o.use_sgemm_convolution = True
    o.use_packing_layout = True
    o.use_vulkan_compute = False
    if net.load_param(param) != 0 or net.load_model(bin_path) != 0:
        raise RuntimeError(f"ncnn cannot load {param}")
    mats = []

    def call(x):
        if not mats or mats[0] is not x:  # one ncnn.Mat per image, made once per input
            mats[:] = [x] + [ncnn.Mat(np.ascontiguousarray(img)) for img in x]
        outs = []
        for m in mats[1:]:
            ex = net.create_extractor()
            ex.input("in0", m)
            _, y = ex.extract("out0")
            outs.append(np.array(y).reshape(-1))
        return np.stack(outs)
    call.net = net  # keeps the net alive with the closure
    return call


def load_torch(ts_path, threads):
    import torch
    torch.set_num_threads(threads)
    m = torch.jit.freeze(torch.jit.load(ts_path).eval())

    def call(x):
        with torch.inference_mode():
            return m(torch.from_numpy(x)).numpy()
    return call


def load_engine(name, files, batch, threads, build, winfer=None):
    """name: winfer-CONV, onnxruntime, openvino, ncnn, torch-frozen."""
    if name.startswith("winfer-"):
        return load_winfer(winfer or winfer_lib(build), files.onnx(batch), name[len("winfer-"):], threads, batch)
    if name == "onnxruntime":
        return load_onnxruntime(files.onnx(batch), threads)
    if name == "openvino":
        return load_openvino(files.onnx(batch), threads)
    if name == "ncnn":
        return load_ncnn(files.ncnn_param, files.ncnn_bin, threads)
    if name == "torch-frozen":
        return load_torch(files.torchscript, threads)
    raise ValueError(name)


def weights_file(name, files, batch):
    if name == "ncnn":
        return files.ncnn_bin
    if name.startswith("torch"):
        return files.torchscript
    return files.onnx(batch)


# ---------------------------------------------------------------------------------------------
# One engine in a process of its own: memory and start-up


def vm_hwm():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return None


def worker(args):
    """--worker ENGINE: prints one JSON object (peak beyond the weights, start-up)."""
    import numpy as np
    name = args.worker
    files = Files(args.cache, args.models[0], args.seed)
    batch, threads = args.batch[0], args.threads[0]
    t0 = time.perf_counter()
    winfer = None
    if name.startswith("winfer-"):
        winfer = winfer_lib(args.build)
    elif name == "onnxruntime":
        import onnxruntime  # noqa: F401
    elif name == "openvino":
        import openvino as ov
        ov.Core().get_property("CPU", "FULL_DEVICE_NAME")  # the CPU plugin's code loaded before the baseline
    elif name == "ncnn":
        import ncnn  # noqa: F401
    else:
        import torch  # noqa: F401
    import_ms = (time.perf_counter() - t0) * 1e3
    x = np.load(files.input(batch))
    try:  # the peak restarted at the resident set (Linux >= 4.0): an import's transient peak hides nothing
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    baseline = vm_hwm()
    t0 = time.perf_counter()
    call = load_engine(name, files, batch, threads, args.build, winfer)
    t1 = time.perf_counter()
    call(x)
    t2 = time.perf_counter()
    for _ in range(3):
        call(x)
    peak = vm_hwm() - baseline
    weights = os.path.getsize(weights_file(name, files, batch))
    print(json.dumps({"engine": name, "load_ms": (t1 - t0) * 1e3, "first_ms": (t2 - t1) * 1e3,
                      "startup_ms": (t2 - t0) * 1e3, "import_ms": import_ms, "baseline_bytes": baseline,
                      "peak_bytes": peak, "weights_bytes": weights, "beyond_weights_bytes": peak - weights}))


def measure_apart(args, name, model, batch, threads):
    cmd = [sys.executable, os.path.abspath(__file__), model, "--worker", name, "--batch", str(batch),
           "--threads", str(threads), "--build", args.build, "--cache", args.cache, "--seed", str(args.seed)]
    run = subprocess.run(cmd, capture_output=True, text=True)
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    if run.returncode != 0 or not lines:
        return {"engine": name, "error": (run.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(lines[-1])


# ---------------------------------------------------------------------------------------------
# The interleaved comparison


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def max_rel_error(y, ref):
    import numpy as np
    y = np.asarray(y, dtype=np.float64).reshape(ref.shape)
    return float(np.max(np.abs(y - ref)) / max(float(np.max(np.abs(ref))), 1e-30))


def engine_names(args):
    names = []
    for e in args.engines:
        if e == "winfer":
            names += [f"winfer-{c}" for c in args.winfer_conv]
        elif e == "torch":
            names.append("torch-frozen")
        else:
            names.append(e)
    return names


def settle(max_s, window_s=0.002, quiet_cpu_s=0.0003):
    """Sleeps until the process burns less than quiet_cpu_s of CPU in a window_s window (the last
    engine's workers have stopped spinning), at most max_s. Returns the wall ms until then and the
    CPU ms the process burnt meanwhile (its spinning)."""
    t0, c0 = time.perf_counter(), time.process_time()
    while True:
        w0, c = time.perf_counter(), time.process_time()
        time.sleep(window_s)
        if time.process_time() - c < quiet_cpu_s or time.perf_counter() - t0 > max_s:
            return (w0 - t0) * 1e3, (c - c0) * 1e3


def interleave(calls, x, rounds, warmup, settle_s, seed):
    """Each round calls every engine once, in a fresh random order; before each call the previous
    one's workers are let go idle (settle). Returns per engine the ms of its timed calls, per
    engine the spin after its calls (wall ms until idle, CPU ms burnt meanwhile) and the 1-minute
    load averages sampled each round."""
    rng = random.Random(seed)
    names = list(calls)
    times = {n: [] for n in names}
    spin = {n: [] for n in names}
    loads = []
    for r in range(warmup + rounds):
        rng.shuffle(names)
        for n in names:
            t0 = time.perf_counter()
            calls[n](x)
            t = (time.perf_counter() - t0) * 1e3
            s = settle(settle_s) if settle_s > 0 else None
            if r >= warmup:
                times[n].append(t)
                if s is not None:
                    spin[n].append(s)
        loads.append(os.getloadavg()[0])
    return times, spin, loads


def ratio(a, b):
    return None if a is None or b is None else a / b


def fmt(v, digits=2):
    return "–" if v is None else f"{v:.{digits}f}"


def bench_cell(args, files, names, batch, threads, log, winfer):
    import numpy as np
    x = np.load(files.input(batch))
    ref = np.load(files.reference(batch)).astype(np.float64)
    calls, check, errors, settings = {}, {}, {}, {}
    for n in names:
        try:
            call = load_engine(n, files, batch, threads, args.build, winfer)
            err = max_rel_error(call(x), ref)
        except Exception as e:  # a peer that cannot load this model is reported, not fatal
            errors[n] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
            log(f"{files.model} b{batch} t{threads}: {n} failed: {errors[n]}")
            continue
        check[n] = err
        if hasattr(call, "properties"):
            settings[n] = call.properties
        if err > args.tolerance:
            errors[n] = f"output differs from PyTorch's: max relative error {err:.2e} > {args.tolerance:g}"
            log(f"{files.model} b{batch} t{threads}: {n} not timed: {errors[n]}")
            continue
        calls[n] = call
    times, spin, loads = interleave(calls, x, args.rounds, args.warmup, args.settle_ms / 1e3, args.seed)
    med = {n: statistics.median(t) for n, t in times.items()}
    spin_ms = {n: statistics.median(v[0] for v in s) for n, s in spin.items() if s}
    spin_cpu_ms = {n: statistics.median(v[1] for v in s) for n, s in spin.items() if s}
    p10 = {n: percentile(t, 0.1) for n, t in times.items()}
    peers = {n: med[n] for n in PEERS if n in med}
    blocked = {n: med[n] for n in BLOCKED_PEERS if n in med}
    winfers = {n: med[n] for n in med if n.startswith("winfer-")}
    best_peer = min(peers, key=peers.get) if peers else None
    best_blocked = min(blocked, key=blocked.get) if blocked else None
    best_winfer = min(winfers, key=winfers.get) if winfers else None
    default = med.get("winfer-im2win")
    rec = {"kind": "latency", "model": files.model, "batch": batch, "threads": threads, "rounds": args.rounds,
           "warmup": args.warmup, "settle_ms": args.settle_ms, "median_ms": med, "p10_ms": p10,
           "spin_after_ms": spin_ms, "spin_after_cpu_ms": spin_cpu_ms, "max_rel_error": check,
           "errors": errors, "settings": settings, "best_peer": best_peer, "best_blocked_peer": best_blocked,
           "best_winfer": best_winfer,
           "load_average": {"min": min(loads), "median": statistics.median(loads), "max": max(loads)},
           "ratio_im2win_best_peer": ratio(default, peers.get(best_peer)),
           "ratio_im2win_best_blocked": ratio(default, blocked.get(best_blocked)),
           "ratio_best_winfer_best_peer": ratio(winfers.get(best_winfer), peers.get(best_peer)),
           "ratio_best_winfer_best_blocked": ratio(winfers.get(best_winfer), blocked.get(best_blocked))}
    print(f"\n{files.model}, batch {batch}, {threads} thread(s): {args.rounds} rounds (+{args.warmup} warm-up), "
          f"shuffled each round; load average {rec['load_average']['min']:.2f}-{rec['load_average']['max']:.2f}")
    print(f"  {'engine':18s} {'median ms':>10s} {'p10 ms':>9s} {'max rel err':>12s} {'spin after, ms':>15s}")
    for n in names:
        if n in med:
            spun = f"{spin_ms[n]:6.1f} ({spin_cpu_ms[n]:.1f} CPU)" if n in spin_ms else "–"
            print(f"  {n:18s} {med[n]:10.2f} {p10[n]:9.2f} {check[n]:12.1e} {spun:>15s}")
        else:
            print(f"  {n:18s} {'not timed':>10s}  ({errors.get(n)})")
    print(f"  im2win / best peer ({best_peer}): {fmt(rec['ratio_im2win_best_peer'], 3)}   "
          f"/ best of ORT, OpenVINO ({best_blocked}): {fmt(rec['ratio_im2win_best_blocked'], 3)}")
    print(f"  best winfer ({best_winfer}) / best peer: {fmt(rec['ratio_best_winfer_best_peer'], 3)}   "
          f"/ best of ORT, OpenVINO: {fmt(rec['ratio_best_winfer_best_blocked'], 3)}")
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", metavar="MODEL")
    ap.add_argument("--batch", default="1", help="batch sizes, comma-separated (default 1)")
    ap.add_argument("--threads", default="1", help="thread counts, comma-separated (default 1)")
    ap.add_argument("--rounds", type=int, default=30, help="timed rounds (default 30)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed rounds first (default 3)")
    ap.add_argument("--settle-ms", type=float, default=500, help="after each call, wait (at most this long) "
                    "until the process is idle, i.e. that engine's workers stopped spinning (default 500; 0: "
                    "back to back)")
    ap.add_argument("--engines", default=",".join(ENGINES), help="of " + ",".join(ENGINES))
    ap.add_argument("--winfer-conv", default="im2win,winograd,auto", help="winfer algorithms (default "
                    "im2win,winograd,auto; im2win is the default, the fastest of them is 'best winfer')")
    ap.add_argument("--tolerance", type=float, default=1e-4, help="max |y - torch| / max |torch| (default 1e-4)")
    ap.add_argument("--seed", type=int, default=1, help="weights, input and call order (default 1)")
    ap.add_argument("--no-memory", action="store_true", help="skip the per-engine memory/start-up processes")
    ap.add_argument("--memory-threads", type=int, default=1, help="threads of those processes (default 1)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="winfer build (default build/)")
    ap.add_argument("--cache", help="exported models (default BUILD/peers)")
    ap.add_argument("--json", help="append one JSON object per line to this file")
    ap.add_argument("--setup-only", action="store_true", help="make the venv and exit")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    args.cache = os.path.abspath(args.cache or os.path.join(args.build, "peers"))
    set_openblas_coretype()
    args.batch = [int(v) for v in args.batch.split(",") if v]
    args.threads = [int(v) for v in args.threads.split(",") if v]
    if args.worker:
        return worker(args)

    # Re-run inside the venv (made on the first run).
    python = venv_python(args.build)
    if os.path.realpath(sys.prefix) != os.path.realpath(os.path.join(args.build, "peer-venv")):
        python = ensure_venv(args.build)
        if args.setup_only:
            return 0
        os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])
    if args.setup_only:
        return 0
    args.engines = [e for e in args.engines.split(",") if e]
    args.winfer_conv = [c for c in args.winfer_conv.split(",") if c]
    unknown = [e for e in args.engines if e not in ENGINES]
    if unknown or not args.models or args.rounds < 1 or min(args.batch + args.threads) < 1:
        fail(f"need MODEL(s), --rounds/--batch/--threads >= 1, engines of {','.join(ENGINES)}"
             + (f" (unknown: {','.join(unknown)})" if unknown else ""))
    for m in args.models:
        if not os.path.exists(os.path.join(ROOT, "models", "zoo", m + ".yaml")):
            fail(f"no zoo model {m}")
    os.makedirs(args.cache, exist_ok=True)

    def log(message):
        print(f"{TOOL}: {message}", file=sys.stderr, flush=True)

    def emit(rec):
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(rec) + "\n")

    vers = versions(args.engines)
    winfer = None
    if "winfer" in args.engines:
        winfer = winfer_lib(args.build)
        winfer.lib.winfer_version.restype = ctypes.c_char_p
        vers["winfer"] = winfer.lib.winfer_version().decode()
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    vers["winfer_commit"] = git.stdout.strip() if git.returncode == 0 else ""
    vers["openblas_coretype"] = os.environ.get("OPENBLAS_CORETYPE", "")
    vers["cpus"] = len(os.sched_getaffinity(0))
    print("versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()))
    emit({"kind": "versions", **vers, "command": " ".join(sys.argv[1:])})
    names = engine_names(args)
    for model in args.models:
        files = Files(args.cache, model, args.seed)
        engines = list(args.engines)
        try:
            prepare(files, args.batch, engines, log)
        except RuntimeError as e:  # pnnx failed: the other engines still run
            log(f"{model}: {e}; ncnn left out")
            engines.remove("ncnn")
        model_names = [n for n in names if n != "ncnn" or "ncnn" in engines]
        for batch in args.batch:
            for threads in args.threads:
                emit(bench_cell(args, files, model_names, batch, threads, log, winfer))
            if not args.no_memory:
                print(f"\n{model}, batch {batch}, {args.memory_threads} thread(s): each engine in a fresh process "
                      "(peak beyond the weights, MiB; start-up = load + first inference, ms)")
                for n in model_names:
                    r = measure_apart(args, n, model, batch, args.memory_threads)
                    r.update({"kind": "memory", "model": model, "batch": batch, "threads": args.memory_threads,
                              "load_average": os.getloadavg()[0]})
                    emit(r)
                    if "error" in r:
                        print(f"  {n:18s} failed: {r['error']}")
                    else:
                        print(f"  {n:18s} beyond weights {r['beyond_weights_bytes'] / 2**20:8.1f}   peak "
                              f"{r['peak_bytes'] / 2**20:8.1f}   weights {r['weights_bytes'] / 2**20:7.1f}   "
                              f"load {r['load_ms']:8.1f}   first {r['first_ms']:7.1f}   start-up "
                              f"{r['startup_ms']:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
