#!/usr/bin/python3
"""PyTorch's side of `scripts/bench_report.sh`: one torchvision model, timed and measured the
way `winfer bench MODEL` does it, in a process of its own so that its peak memory is its own.

    /usr/bin/python3 bench/tools/torch_bench.py --model resnet18 --mode frozen --threads 1 \
        --batch 1 --runs 20 [--warmup 3]

Prints one JSON object on stdout with the same keys as `winfer bench --json`:
model, device ("cpu"), conv ("torch-eager" or "torch-frozen"), threads, batch, init_ms,
first_ms, median_ms, min_ms, p95_ms, max_ms, runs, weights_bytes, measured_peak_bytes,
beyond_weights_bytes, plus torch's version and its oneDNN (mkldnn) flag.

- eager: `model.eval()` under `torch.inference_mode()`.
- frozen: `torch.jit.freeze(torch.jit.script(model.eval()))` (batch norm folded into the
  convolutions), run under `torch.inference_mode()`.
- optimized: `torch.jit.optimize_for_inference(torch.jit.script(model.eval()))`: frozen, plus
  PyTorch's inference passes (convolutions on oneDNN's blocked layout, conv+add+relu fusion).
  TorchScript's profiling executor specialises the graph during the first calls, so `--warmup`
  calls (default 3) follow the first one before timing, for every mode.
- OpenBLAS: Debian's OpenBLAS 0.3.21 does not recognise newer x86 cores and falls back to a
  slow SSE3 kernel; as winfer does, OPENBLAS_CORETYPE is set (SkylakeX with AVX-512, Haswell
  with AVX2) unless the environment sets it, before torch loads its BLAS.
- init_ms: building the model with random weights (torchvision's own initialisation), plus
  scripting and freezing for `frozen`; first_ms: the first call.
- measured_peak_bytes: growth of the process's peak resident set (VmHWM) from just after
  `import torch, torchvision` (the idle process) to after the last timed call;
  beyond_weights_bytes = measured_peak_bytes - weights_bytes (parameters and buffers, float32).
"""
import argparse
import json
import os
import statistics
import sys
import time


def vm_hwm_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return None


def set_openblas_coretype():
    """OPENBLAS_CORETYPE for this CPU unless set (the same rule as winfer's gemm.cpp)."""
    if os.environ.get("OPENBLAS_CORETYPE"):
        return
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return
    if "avx512f" in flags:
        os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
    elif "avx2" in flags and "fma" in flags:
        os.environ["OPENBLAS_CORETYPE"] = "Haswell"


def percentile(values, q):
    """Nearest-rank percentile (the same definition as winfer bench)."""
    s = sorted(values)
    rank = max(1, int(-(-q * len(s) // 100)))  # ceil(q/100 * n)
    return s[min(rank, len(s)) - 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="torchvision model name, e.g. resnet18")
    ap.add_argument("--mode", choices=["eager", "frozen", "optimized"], default="eager")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--size", type=int, default=224, help="input height and width")
    ap.add_argument("--runs", type=int, default=20, help="timed calls")
    ap.add_argument("--min-time", type=float, default=0.0,
                    help="time more calls (up to 1000) until this many seconds are covered")
    ap.add_argument("--warmup", type=int, default=3, help="calls after the first one, not timed")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    set_openblas_coretype()
    import torch
    import torchvision

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    baseline = vm_hwm_bytes()

    t0 = time.perf_counter()
    ctor = getattr(torchvision.models, args.model, None)
    if ctor is None:
        print(f"torch_bench: torchvision has no model '{args.model}'", file=sys.stderr)
        return 1
    model = ctor(weights=None).eval()
    weights_bytes = sum(t.numel() * t.element_size() for t in model.parameters())
    weights_bytes += sum(t.numel() * t.element_size() for t in model.buffers())
    if args.mode == "frozen":
        model = torch.jit.freeze(torch.jit.script(model))
    elif args.mode == "optimized":
        model = torch.jit.optimize_for_inference(torch.jit.script(model))
    init_ms = (time.perf_counter() - t0) * 1e3

    x = torch.rand(args.batch, 3, args.size, args.size)
    times = []
    with torch.inference_mode():
        t0 = time.perf_counter()
        model(x)
        first_ms = (time.perf_counter() - t0) * 1e3
        for _ in range(args.warmup):
            model(x)
        start = time.perf_counter()
        while len(times) < args.runs or (time.perf_counter() - start < args.min_time and len(times) < 1000):
            t0 = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - t0) * 1e3)
    peak = vm_hwm_bytes()
    measured = None if peak is None or baseline is None else max(0, peak - baseline)
    out = {
        "model": args.model,
        "device": "cpu",
        "conv": "torch-" + args.mode,
        "engine": "pytorch",
        "threads": args.threads,
        "batch": args.batch,
        "init_ms": init_ms,
        "first_ms": first_ms,
        "median_ms": statistics.median(times),
        "min_ms": min(times),
        "p95_ms": percentile(times, 95),
        "max_ms": max(times),
        "runs": len(times),
        "warmup": args.warmup,
        "weights_bytes": weights_bytes,
        "measured_peak_bytes": measured,
        "beyond_weights_bytes": None if measured is None else measured - weights_bytes,
        "torch_version": torch.__version__,
        "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", ""),
        "mkldnn": bool(torch.backends.mkldnn.is_available()),
        "load_average": os.getloadavg()[0],
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
