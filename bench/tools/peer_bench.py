#!/usr/bin/python3
"""winfer against ONNX Runtime, OpenVINO and ncnn (and PyTorch), the same network with the same
weights, interleaved call by call in one process; plus each engine's peak memory and start-up in a
fresh process of its own (issue 25).

    /usr/bin/python3 bench/tools/peer_bench.py MODEL [MODEL ...] [--batch 1,8] [--threads 1,2]
        [--rounds 30] [--warmup 3] [--engines winfer,onnxruntime,openvino,ncnn,torch[,onnxruntime-int8,winfer-int8]]
        [--winfer-conv im2win,winograd,auto] [--tolerance 1e-4] [--no-memory] [--memory-threads 1]
        [--settle-ms 500] [--seed 1] [--calibration-images 32] [--int8-check 32]
        [--build build] [--json FILE] [--setup-only]

Examples (the smoke test of docs/PERFORMANCE.md, then the full grid of issue 25):

    /usr/bin/python3 bench/tools/peer_bench.py resnet18 shufflenet_v2_x1_0 --batch 1 --threads 1 \\
        --rounds 10 --json build/peers/smoke.jsonl
    /usr/bin/python3 bench/tools/peer_bench.py resnet18 resnet50 vgg16 shufflenet_v2_x1_0 \\
        mobilenet_v2 efficientnet_b0 regnet_y_400mf --batch 1,8 --threads 1,2 --rounds 30
    scripts/bench_report.sh --peers               # that grid, its tables into docs/PERFORMANCE.md
    scripts/bench_report.sh --peers --models "resnet18 shufflenet_v2_x1_0" --threads 1 --skip-batch8 \\
        --rounds 10                               # the smoke test, tables into docs/PERFORMANCE.md
    /usr/bin/python3 bench/tools/peer_bench.py resnet18 --batch 1 --threads 1 --rounds 10 \\
        --engines winfer,onnxruntime,onnxruntime-int8,winfer-int8 --winfer-conv im2win   # INT8 (issue 27)

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
   fp32 weights). winfer (C API, `winfer_model_load("MODEL.bB.onnx")`; at batch > 1 its
   `winfer convert` YAML, whose batch is free, so that the engine's default runs of a few images
   side by side apply), ONNX Runtime and OpenVINO load the same ONNX file; ncnn the pnnx conversion of the same module; PyTorch the module.
3. Check: every engine's output for one seeded N(0,1) input must equal PyTorch's eager float32
   output within --tolerance, max |y - y_torch| / max |y_torch| (default 1e-4); an engine that
   disagrees (or fails to load) is reported and not timed.
4. Time: each round calls every engine once, in a freshly shuffled order (seeded), so that a
   burst of the neighbours' load slows all alike. After each call the script waits until the
   process is idle again (no other thread running in 5 looks 1 ms apart, by the threads' states
   in /proc/self/task; at most --settle-ms; see settle() for why not CPU time): ONNX Runtime's
   workers spin about 40 ms after a multi-threaded call, PyTorch's about 100 ms, and on a small
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
   runnable: session creation, compilation, packing) + first inference, ms. --memory-rounds
   processes per engine (default 3), the engines in a shuffled order each round; medians.

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

INT8 (issue 27; not in the default --engines, name them): `onnxruntime-int8` and `winfer-int8`,
both post-training static quantizations of the same ONNX file, calibrated on the same images, timed
in the same rounds as the FP32 engines:
- Calibration images (BUILD/peers/calib.seedS.nN/, --calibration-images N, default 32): N images
  of uniform random 8-bit pixels (numpy's default_rng(--seed)), 224x224 RGB, written as PPM files;
  normalized by the zoo model's preprocess mean/std (models/zoo/MODEL.yaml; no resize or crop, the
  images already have the input's size), (p / 255 - mean) / std in float32 as winfer does. Ranges:
  minmax for both (winfer quantize --method minmax; ORT CalibrationMethod.MinMax).
- winfer-int8: `winfer convert MODEL.bB.onnx` -> MODEL.seedS.bB.yaml (+ safetensors), the zoo's
  mean/std added as its preprocess; `winfer quantize ... --calibrate calib.seedS.nN --images N
  --method minmax` -> MODEL.seedS.bB.int8-minmax-nN.yaml: activations u8 per tensor with a zero
  point, conv2d/linear weights s8 symmetric per output channel, the first convolution and the
  logits' linear layer kept in FP32 (winfer's default rules). Loaded through the C API like the
  FP32 model (winfer_model_load, im2win session). Both files are remade when BUILD/bin/winfer is
  newer than them. The input range winfer recorded is checked against the images' range here
  (same images, same normalization).
- onnxruntime-int8: onnxruntime.quantization.quantize_static on MODEL.bB.onnx, QuantFormat.QDQ
  (QuantizeLinear/DequantizeLinear pairs, which ORT's CPU provider fuses: resnet18's optimized graph
  has 19 QLinearConv, 8 QLinearAdd, a QLinearGlobalAveragePool, MaxPool in FP32 after the FP32 stem),
  activations QUInt8 (asymmetric, per tensor), weights QInt8 (symmetric, per_channel=True),
  reduce_range off (this CPU has VNNI), no pre-processing (torch's export has folded batch norm),
  ORT's default operator set (Conv, Gemm, Add, MaxPool, GlobalAveragePool, ...), calibrated by
  a CalibrationDataReader over the same N images; the layers winfer keeps in FP32 are excluded
  (nodes_to_exclude) so that both run the same layers in INT8 -> MODEL.seedS.bB.int8-minmax-nN.qdq.onnx
  (and .qdq.json: what it was made with; remade when that changes, e.g. the excluded layers).
- Accuracy, a sanity check (INT8 is not bit-comparable, so no --tolerance): on --int8-check K
  N(0,1) inputs whose first B are the golden input (K rounded up to a multiple of B), each INT8
  engine's top-1 agreement with PyTorch's FP32 output and its max |logit difference| (random
  weights: not an accuracy claim). Ratios: winfer-int8 / onnxruntime-int8, winfer im2win (FP32) /
  winfer-int8 (the speed-up) and onnxruntime / onnxruntime-int8. The FP32 ratios leave them out.
ORT's quantizer needs the onnx package (peer_requirements.txt).

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
import threading
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
DEFAULT_ENGINES = ("winfer", "onnxruntime", "openvino", "ncnn", "torch")
INT8_ENGINES = ("onnxruntime-int8", "winfer-int8")  # issue 27; only when named in --engines
ENGINES = DEFAULT_ENGINES + INT8_ENGINES
CALIBRATION_METHOD = "minmax"  # winfer quantize --method; ORT's CalibrationMethod.MinMax
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


def cpu_description():
    """The CPU's model name and its per-core L2 (the machine changes between sessions: numbers of
    two CPUs are not comparable), from /proc/cpuinfo and sysfs; "" where Linux does not say."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    try:
        with open("/sys/devices/system/cpu/cpu0/cache/index2/size") as f:
            model += f", L2 {f.read().strip()} per core"
    except OSError:
        pass
    return model


def versions(engines):
    out = {}
    import numpy
    out["numpy"] = numpy.__version__
    out["python"] = sys.version.split()[0]
    import torch  # it exports every model, whether or not it is timed
    out["torch"] = torch.__version__
    if "onnxruntime" in engines or "onnxruntime-int8" in engines:
        import onnxruntime
        out["onnxruntime"] = onnxruntime.__version__
    if "onnxruntime-int8" in engines:
        import onnx
        out["onnx"] = onnx.__version__
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
    def __init__(self, cache, model, seed, calibration_images=32, int8_check=32):
        self.stem = os.path.join(cache, f"{model}.seed{seed}")
        self.model, self.seed = model, seed
        self.cache, self.calibration_images, self.int8_check = cache, calibration_images, int8_check

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

    # INT8 (issue 27)
    @property
    def calibration_dir(self):  # the images do not depend on the model
        return os.path.join(self.cache, f"calib.seed{self.seed}.n{self.calibration_images}")

    def winfer_fp32(self, batch):  # `winfer convert` of onnx(batch), with the zoo's mean/std
        return f"{self.stem}.b{batch}.yaml"

    # `winfer convert` of onnx(batch) as it is, for winfer's ALGORITHM:N configurations: the ONNX
    # file fixes its batch, its conversion leaves it free (a run of N images is a session of N).
    def winfer_free_batch(self, batch):
        return f"{self.stem}.b{batch}.free.yaml"

    def winfer_free_batch_weights(self, batch):
        return f"{self.stem}.b{batch}.free.safetensors"

    def int8_stem(self, batch):
        return f"{self.stem}.b{batch}.int8-{CALIBRATION_METHOD}-n{self.calibration_images}"

    def winfer_int8(self, batch):
        return self.int8_stem(batch) + ".yaml"

    def winfer_int8_weights(self, batch):
        return self.int8_stem(batch) + ".safetensors"

    def ort_int8(self, batch):
        return self.int8_stem(batch) + ".qdq.onnx"

    def check_count(self, batch):  # --int8-check rounded up to whole batches
        return -(-self.int8_check // batch) * batch

    def check_input(self, batch):
        return f"{self.stem}.check{self.check_count(batch)}.input.npy"

    def check_reference(self, batch):
        return f"{self.stem}.check{self.check_count(batch)}.torch.npy"


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
# INT8 (issue 27): the calibration images, winfer's and ONNX Runtime's quantized files


def zoo_normalization(model):
    """mean/std/channel order of models/zoo/MODEL.yaml's preprocess (mean 0, std 1 without one)."""
    import yaml
    with open(os.path.join(ROOT, "models", "zoo", model + ".yaml")) as f:
        pre = yaml.safe_load(f).get("preprocess") or {}
    return {"mean": [float(v) for v in pre.get("mean", [0.0, 0.0, 0.0])],
            "std": [float(v) for v in pre.get("std", [1.0, 1.0, 1.0])],
            "channel_order": pre.get("channel_order", "RGB")}


def calibration_pixels(files):
    """The calibration images, [N, 224, 224, 3] u8, written once as PPM files for winfer quantize."""
    import numpy as np
    n = files.calibration_images
    pixels = np.random.default_rng(files.seed).integers(0, 256, size=(n, SIZE, SIZE, 3), dtype=np.uint8)
    folder = files.calibration_dir
    if not os.path.isdir(folder):
        part = folder + ".part"
        os.makedirs(part, exist_ok=True)
        for i, img in enumerate(pixels):
            with open(os.path.join(part, f"{i:05d}.ppm"), "wb") as f:
                f.write(f"P6\n{SIZE} {SIZE}\n255\n".encode() + img.tobytes())
        os.replace(part, folder)
    return pixels


def calibration_tensor(pixels, norm):
    """NCHW float32, (p / 255 - mean) / std in float32, as winfer's image_to_input computes it."""
    import numpy as np
    x = pixels.astype(np.float32) / np.float32(255)
    if norm["channel_order"] == "BGR":
        x = x[..., ::-1]
    x = (x - np.asarray(norm["mean"], dtype=np.float32)) / np.asarray(norm["std"], dtype=np.float32)
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2), dtype=np.float32)


def stale(path, *sources):
    return not os.path.exists(path) or any(os.path.getmtime(s) > os.path.getmtime(path) for s in sources)


def run_winfer_cli(args, what):
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        message = (run.stderr.strip() or run.stdout.strip() or f"exit {run.returncode}").splitlines()
        raise RuntimeError(f"{what} failed (exit {run.returncode}): {' / '.join(message[-3:])}")
    return run.stdout


def prepare_winfer_free_batch(files, batch, build):
    """files.winfer_free_batch(batch), converted from the ONNX file if it is older."""
    cli = os.path.join(build, "bin", "winfer")
    yaml_path = files.winfer_free_batch(batch)
    if stale(yaml_path, cli, files.onnx(batch)):
        run_winfer_cli([cli, "convert", files.onnx(batch), "-o", yaml_path, "--weights",
                        files.winfer_free_batch_weights(batch)], f"winfer convert {files.onnx(batch)}")
    return yaml_path


def prepare_winfer_int8(files, batch, build, norm, pixels, log):
    """winfer convert + the zoo's mean/std, then winfer quantize on the calibration folder.
    Returns the quantized YAML's quantization section."""
    import yaml
    cli = os.path.join(build, "bin", "winfer")
    if not os.path.exists(cli):
        raise RuntimeError(f"{cli} not found (build it: flock /tmp/winfer-build.lock cmake --build {build} "
                           "--target winfer)")
    fp32 = files.winfer_fp32(batch)
    if stale(fp32, cli, files.onnx(batch)):
        part = fp32 + ".part"
        run_winfer_cli([cli, "convert", files.onnx(batch), "-o", part, "--weights",
                        fp32[:-len(".yaml")] + ".safetensors"], f"winfer convert {files.onnx(batch)}")
        with open(part) as f:
            lines = f.read().splitlines(keepends=True)
        at = next((i for i, line in enumerate(lines) if line.startswith("input:")), None)
        if at is None:
            raise RuntimeError(f"winfer convert wrote {part} without an input: line")
        pre = (f"preprocess:  # added by {TOOL}: the zoo model's normalization (random images have the input's size)\n"
               f"  mean: {norm['mean']}\n  std: {norm['std']}\n  channel_order: {norm['channel_order']}\n")
        with open(fp32, "w") as f:
            f.write("".join(lines[:at + 1]) + pre + "".join(lines[at + 1:]))
        os.remove(part)
        log(f"converted {files.onnx(batch)} to {fp32}")
    int8 = files.winfer_int8(batch)
    if stale(int8, cli, fp32):
        part = int8[:-len(".yaml")] + ".part.yaml"
        begin = time.time()
        out = run_winfer_cli([cli, "quantize", fp32, "--calibrate", files.calibration_dir, "--images",
                              str(files.calibration_images), "--method", CALIBRATION_METHOD, "-o", part,
                              "--weights", files.winfer_int8_weights(batch)], f"winfer quantize {fp32}")
        with open(part) as f:
            text = f.read()
        with open(int8, "w") as f:
            f.write(text)
        os.remove(part)
        summary = [line for line in out.splitlines() if "layers INT8" in line]
        log(f"quantized {int8} ({time.time() - begin:.1f} s; {summary[0] if summary else ''})")
    with open(int8) as f:
        q = (yaml.safe_load(f) or {}).get("quantization")
    if not q:
        raise RuntimeError(f"{int8} has no quantization: section")
    # The same images and normalization on both sides: winfer's observed input range is the images'.
    x = calibration_tensor(pixels, norm)
    seen = (q.get("tensors") or {}).get("input")
    if seen and (abs(seen["min"] - float(x.min())) > 1e-5 or abs(seen["max"] - float(x.max())) > 1e-5):
        log(f"warning: {int8}: winfer saw the input in [{seen['min']}, {seen['max']}], the calibration "
            f"images here span [{float(x.min())}, {float(x.max())}]: not the same calibration inputs")
    return q


def fp32_nodes(onnx_model, quantization):
    """The ONNX nodes of the conv2d/linear layers winfer kept in FP32 (a converted layer is named
    after its node, or after the node's output when that is a model output)."""
    names = [name for name, v in (quantization.get("layers") or {}).items() if (v or {}).get("precision") == "fp32"]
    nodes = []
    for name in names:
        node = next((n for n in onnx_model.graph.node if n.name == name or name in n.output), None)
        if node is None:
            raise RuntimeError(f"winfer's FP32 layer {name} matches no node of the ONNX model")
        nodes.append(node.name)
    return nodes


def prepare_ort_int8(files, batch, quantization, norm, pixels, log):
    """onnxruntime.quantization.quantize_static: QDQ, u8 activations, s8 per-channel weights,
    MinMax over the calibration images, winfer's FP32 layers excluded."""
    import onnx
    import onnxruntime
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)
    model = onnx.load(files.onnx(batch))
    exclude = fp32_nodes(model, quantization)
    recipe = {"onnxruntime": onnxruntime.__version__, "format": "QDQ", "activations": "QUInt8 per tensor",
              "weights": "QInt8 symmetric per channel", "reduce_range": False, "method": "MinMax",
              "calibration": f"{files.calibration_dir} ({files.calibration_images} images)",
              "normalization": norm, "nodes_to_exclude": exclude}
    sidecar = files.ort_int8(batch)[:-len(".onnx")] + ".json"
    if os.path.exists(files.ort_int8(batch)) and os.path.exists(sidecar):
        with open(sidecar) as f:
            if json.load(f) == recipe:
                return exclude
    x = calibration_tensor(pixels, norm)
    input_name = model.graph.input[0].name
    n = len(x)

    class Reader(CalibrationDataReader):
        """The images in batches of the model's static batch (the last one wrapped around)."""
        def __init__(self):
            self.chunks = iter([x[[(i + j) % n for j in range(batch)]] for i in range(0, n, batch)])

        def get_next(self):
            chunk = next(self.chunks, None)
            return None if chunk is None else {input_name: chunk}

    begin = time.time()
    part = files.ort_int8(batch)[:-len(".onnx")] + ".part.onnx"
    quantize_static(files.onnx(batch), part, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    reduce_range=False, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    nodes_to_exclude=exclude, calibrate_method=CalibrationMethod.MinMax,
                    extra_options={"ActivationSymmetric": False, "WeightSymmetric": True})
    os.replace(part, files.ort_int8(batch))
    with open(sidecar, "w") as f:
        json.dump(recipe, f, indent=1)
    log(f"quantized {files.ort_int8(batch)} with onnxruntime.quantization ({time.time() - begin:.1f} s; "
        f"FP32: {', '.join(exclude) or 'none'})")
    return exclude


def prepare_int8(files, batches, engines, build, net, log):
    """What the INT8 engines load, and the FP32 reference of the accuracy check."""
    import numpy as np
    import torch
    norm = zoo_normalization(files.model)
    pixels = calibration_pixels(files)
    for b in batches:
        if not os.path.exists(files.check_reference(b)):
            x = golden_input(files.check_count(b), files.seed)  # its first b images are the golden input
            with torch.no_grad():
                y = np.concatenate([net(torch.from_numpy(x[i:i + 8])).numpy() for i in range(0, len(x), 8)])
            np.save(files.check_input(b), x)
            np.save(files.check_reference(b), y)
        quantization = prepare_winfer_int8(files, b, build, norm, pixels, log)
        if "onnxruntime-int8" in engines:
            prepare_ort_int8(files, b, quantization, norm, pixels, log)


# ---------------------------------------------------------------------------------------------
# The engines: each load() returns call() -> output (numpy, [batch, classes])


def winfer_lib(build):
    from pair_bench import Winfer
    lib = os.path.join(build, "lib", "libwinfer.so")
    if not os.path.exists(lib):
        fail(f"{lib} not found (build it: flock /tmp/winfer-build.lock cmake --build {build} --target winfer_lib)")
    return Winfer(lib)


def load_winfer(winfer, onnx_path, conv, threads, batch):
    """conv: an algorithm (the engine's default images per run), or ALGORITHM:N for N images per run
    (SessionOptions::images_per_run; 0 = the whole batch in one run)."""
    import numpy as np
    from pair_bench import LoadOptions
    conv, _, images_per_run = conv.partition(":")
    options = LoadOptions()
    winfer.lib.winfer_load_options_init(ctypes.byref(options))
    options.use_random_weights = 0
    options.fuse = 1
    # Packed once at load for that algorithm, as `winfer bench --conv` does; "auto" as the CLI loads
    # it (the default, im2win: its layers that keep im2win share the model's weights, the others
    # pack from them; loading OIHW held every convolution's weights twice, session 44).
    options.pack_for = b"im2win" if conv == "auto" else conv.encode()
    model = ctypes.c_void_p()
    winfer.check(winfer.lib.winfer_model_load(onnx_path.encode(), ctypes.byref(options), ctypes.byref(model)),
                 f"loading {onnx_path}")
    session, out_count = winfer.session(model, conv, threads, batch, int(images_per_run) if images_per_run else None)
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


def load_winfer_int8(winfer, yaml_path, threads, batch):
    """The quantized YAML through the C API like the FP32 model, in an im2win session (the default);
    a load that fails is reported like a peer's, not fatal."""
    try:
        return load_winfer(winfer, yaml_path, "im2win", threads, batch)
    except SystemExit as e:  # Winfer.check exits with the C API's message
        raise RuntimeError(str(e)) from None


def winfer_free_batch(batch):
    """Whether winfer loads `winfer convert`'s YAML of the ONNX file, which leaves the batch free
    (batch > 1), rather than the ONNX file, which fixes it: the engine's default runs of a few
    images side by side (SessionOptions::images_per_run) need a model whose batch is free, as a
    YAML model's is. Same graph and weights; batch 1 has nothing to split and loads the ONNX file."""
    return batch > 1


def load_engine(name, files, batch, threads, build, winfer=None):
    """name: winfer-CONV, winfer-int8, onnxruntime, onnxruntime-int8, openvino, ncnn, torch-frozen."""
    if name == "winfer-int8":
        return load_winfer_int8(winfer or winfer_lib(build), files.winfer_int8(batch), threads, batch)
    if name == "onnxruntime-int8":
        return load_onnxruntime(files.ort_int8(batch), threads)
    if name.startswith("winfer-"):
        conv = name[len("winfer-"):]
        path = prepare_winfer_free_batch(files, batch, build) if winfer_free_batch(batch) else files.onnx(batch)
        return load_winfer(winfer or winfer_lib(build), path, conv, threads, batch)
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
    if name == "winfer-int8":
        return files.winfer_int8_weights(batch)
    if name == "onnxruntime-int8":
        return files.ort_int8(batch)
    if name == "ncnn":
        return files.ncnn_bin
    if name.startswith("torch"):
        return files.torchscript
    if name.startswith("winfer-") and winfer_free_batch(batch):
        return files.winfer_free_batch_weights(batch)
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
    files = Files(args.cache, args.models[0], args.seed, args.calibration_images, args.int8_check)
    batch, threads = args.batch[0], args.threads[0]
    t0 = time.perf_counter()
    winfer = None
    if name.startswith("winfer-"):
        winfer = winfer_lib(args.build)
    elif name in ("onnxruntime", "onnxruntime-int8"):
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


def measure_rounds(args, names, model, batch, threads):
    """Each engine in args.memory_rounds fresh processes, the engines in a shuffled order each round
    (one process is one sample of a noisy machine: ShuffleNet's load took 16 to 24 ms in runs minutes apart);
    per engine the medians of the timings and of the peak, the p10 of the start-up and the rounds."""
    runs = {n: [] for n in names}
    order = list(names)
    rng = random.Random(args.seed)
    for _ in range(max(1, args.memory_rounds)):
        rng.shuffle(order)
        for n in order:
            runs[n].append(measure_apart(args, n, model, batch, threads))
    out = {}
    for n, rs in runs.items():
        ok = [r for r in rs if "error" not in r]
        if not ok:
            out[n] = rs[-1]
            continue
        r = dict(ok[0])
        for key in ("load_ms", "first_ms", "startup_ms", "import_ms", "baseline_bytes", "peak_bytes",
                    "beyond_weights_bytes"):
            r[key] = statistics.median(x[key] for x in ok)
        r["startup_ms_p10"] = sorted(x["startup_ms"] for x in ok)[len(ok) // 10]
        r["rounds"] = len(ok)
        out[n] = r
    return out


def measure_apart(args, name, model, batch, threads):
    cmd = [sys.executable, os.path.abspath(__file__), model, "--worker", name, "--batch", str(batch),
           "--threads", str(threads), "--build", args.build, "--cache", args.cache, "--seed", str(args.seed),
           "--calibration-images", str(args.calibration_images), "--int8-check", str(args.int8_check)]
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


def running_threads(me):
    """How many threads of this process other than `me` (a native thread id) are running or
    runnable now (state R in /proc/self/task/TID/stat)."""
    n = 0
    for tid in os.listdir("/proc/self/task"):
        if int(tid) == me:
            continue
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:  # the thread ended meanwhile
            continue
        n += stat[stat.rfind(")") + 2] == "R"
    return n


def settle(max_s, look_s=0.001, quiet_looks=5):
    """Sleeps until no other thread of the process has been running in quiet_looks consecutive
    looks look_s apart (the last engine's workers have stopped spinning), at most max_s. Returns
    the wall ms until the first of those quiet looks and the CPU ms the process burnt until then.

    Why thread states and not CPU time: the CPU clock of a thread running on another core advances
    only at the scheduler tick (4 ms here), so a CPU-time window shorter than a tick reads a
    spinning worker as idle. Measured with a 2 ms window: ONNX Runtime's worker spun on for 30 ms
    into the next engine's call and took 12-19 ms of CPU from it (winfer 2 threads, resnet18 b1:
    median 31.5 ms after ONNX Runtime, 18.5 alone)."""
    me = threading.get_native_id()
    t0, c0 = time.perf_counter(), time.process_time()
    quiet, quiet_since, cpu_then = 0, t0, c0
    while True:
        now, cpu = time.perf_counter(), time.process_time()
        if running_threads(me):
            quiet = 0
        else:
            if quiet == 0:
                quiet_since, cpu_then = now, cpu
            quiet += 1
            if quiet >= quiet_looks:
                return (quiet_since - t0) * 1e3, (cpu_then - c0) * 1e3
        if now - t0 > max_s:
            return (now - t0) * 1e3, (cpu - c0) * 1e3
        time.sleep(look_s)


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


def int8_check(call, files, batch):
    """Top-1 agreement with PyTorch's FP32 output over the check inputs, and the logits' max
    absolute difference (INT8 is not bit-comparable: a sanity check, not a tolerance)."""
    import numpy as np
    xs = np.load(files.check_input(batch))
    ref = np.load(files.check_reference(batch)).astype(np.float64)
    ys = np.concatenate([np.array(call(np.ascontiguousarray(xs[i:i + batch])), dtype=np.float64).reshape(batch, -1)
                         for i in range(0, len(xs), batch)])
    return {"images": len(xs), "top1_agree": int(np.sum(ys.argmax(1) == ref.argmax(1))),
            "max_abs_diff": float(np.max(np.abs(ys - ref))), "max_abs_ref": float(np.max(np.abs(ref)))}


def bench_cell(args, files, names, batch, threads, log, winfer, skipped=None):
    import numpy as np
    x = np.load(files.input(batch))
    ref = np.load(files.reference(batch)).astype(np.float64)
    calls, check, errors, settings, agreement = {}, {}, {}, {}, {}
    errors.update(skipped or {})  # engines whose files could not be made
    for n in names:
        if n in errors:
            continue
        try:
            call = load_engine(n, files, batch, threads, args.build, winfer)
            err = max_rel_error(call(x), ref)
            if n in INT8_ENGINES:
                agreement[n] = int8_check(call, files, batch)
        except Exception as e:  # a peer that cannot load this model is reported, not fatal
            errors[n] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
            log(f"{files.model} b{batch} t{threads}: {n} failed: {errors[n]}")
            continue
        check[n] = err
        if hasattr(call, "properties"):
            settings[n] = call.properties
        if err > args.tolerance and n not in INT8_ENGINES:
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
    winfers = {n: med[n] for n in med if n.startswith("winfer-") and n not in INT8_ENGINES}
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
           "ratio_best_winfer_best_blocked": ratio(winfers.get(best_winfer), blocked.get(best_blocked)),
           # INT8 (issue 27): top-1 agreement with PyTorch FP32 and the ratios of the targets
           "int8_check": agreement,
           "ratio_winfer_int8_ort_int8": ratio(med.get("winfer-int8"), med.get("onnxruntime-int8")),
           "speedup_winfer_int8": ratio(default, med.get("winfer-int8")),
           "speedup_ort_int8": ratio(med.get("onnxruntime"), med.get("onnxruntime-int8"))}
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
    for n, a in agreement.items():
        print(f"  {n} vs PyTorch FP32 on {a['images']} inputs: top-1 agreement {a['top1_agree']}/{a['images']}, "
              f"max |logit diff| {a['max_abs_diff']:.3g} (max |logit| {a['max_abs_ref']:.3g})")
    if any(n in med for n in INT8_ENGINES):
        print(f"  winfer-int8 / onnxruntime-int8: {fmt(rec['ratio_winfer_int8_ort_int8'], 3)}   "
              f"INT8 speed-up: winfer im2win / winfer-int8 {fmt(rec['speedup_winfer_int8'], 2)}, "
              f"onnxruntime / onnxruntime-int8 {fmt(rec['speedup_ort_int8'], 2)}")
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
    ap.add_argument("--engines", default=",".join(DEFAULT_ENGINES), help="of " + ",".join(ENGINES) + " (default "
                    + ",".join(DEFAULT_ENGINES) + "; the INT8 ones only when named)")
    ap.add_argument("--calibration-images", type=int, default=32, help="INT8: seeded random calibration images "
                    "(default 32)")
    ap.add_argument("--int8-check", type=int, default=32, help="INT8: inputs of the top-1 agreement check, the "
                    "golden input first (default 32, rounded up to whole batches)")
    ap.add_argument("--winfer-conv", default="im2win,winograd,auto", help="winfer algorithms (default "
                    "im2win,winograd,auto; im2win is the default, the fastest of them is 'best winfer'); "
                    "ALGORITHM:N runs the batch N images at a time (SessionOptions::images_per_run)")
    ap.add_argument("--tolerance", type=float, default=1e-4, help="max |y - torch| / max |torch| (default 1e-4)")
    ap.add_argument("--seed", type=int, default=1, help="weights, input and call order (default 1)")
    ap.add_argument("--no-memory", action="store_true", help="skip the per-engine memory/start-up processes")
    ap.add_argument("--memory-threads", type=int, default=1, help="threads of those processes (default 1)")
    ap.add_argument("--memory-rounds", type=int, default=3, help="fresh processes per engine, the engines in a "
                    "shuffled order each round; medians reported (default 3)")
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
    if (unknown or not args.models or args.rounds < 1 or min(args.batch + args.threads) < 1
            or args.calibration_images < 1 or args.int8_check < 1):
        fail(f"need MODEL(s), --rounds/--batch/--threads/--calibration-images/--int8-check >= 1, engines of "
             f"{','.join(ENGINES)}"
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
    if "winfer" in args.engines or "winfer-int8" in args.engines:
        winfer = winfer_lib(args.build)
        winfer.lib.winfer_version.restype = ctypes.c_char_p
        vers["winfer"] = winfer.lib.winfer_version().decode()
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    vers["winfer_commit"] = git.stdout.strip() if git.returncode == 0 else ""
    vers["openblas_coretype"] = os.environ.get("OPENBLAS_CORETYPE", "")
    vers["cpus"] = len(os.sched_getaffinity(0))
    vers["cpu"] = cpu_description()
    print("versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()))
    emit({"kind": "versions", **vers, "command": " ".join(sys.argv[1:])})
    names = engine_names(args)
    for model in args.models:
        files = Files(args.cache, model, args.seed, args.calibration_images, args.int8_check)
        engines = list(args.engines)
        try:
            net = prepare(files, args.batch, engines, log)
        except RuntimeError as e:  # pnnx failed: the other engines still run
            log(f"{model}: {e}; ncnn left out")
            engines.remove("ncnn")
            net = None
        skipped = {}
        if any(e in INT8_ENGINES for e in engines):
            try:
                if net is None:
                    from export_onnx import zoo_model
                    net = zoo_model(model, args.seed)
                prepare_int8(files, args.batch, engines, args.build, net, log)
            except Exception as e:  # winfer convert/quantize or ORT's quantizer failed: reported, not timed
                why = f"{type(e).__name__}: {e}"[:600]
                log(f"{model}: INT8 files not made: {why}")
                skipped = {n: why for n in INT8_ENGINES if n in engines}
        model_names = [n for n in names if n != "ncnn" or "ncnn" in engines]
        for batch in args.batch:
            for threads in args.threads:
                emit(bench_cell(args, files, model_names, batch, threads, log, winfer, skipped))
            if not args.no_memory:
                print(f"\n{model}, batch {batch}, {args.memory_threads} thread(s): each engine in a fresh process, "
                      f"{args.memory_rounds} rounds, medians (peak beyond the weights, MiB; start-up = load + first "
                      "inference, ms)")
                measured = measure_rounds(args, [n for n in model_names if n not in skipped], model, batch,
                                          args.memory_threads)
                for n, r in measured.items():
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
