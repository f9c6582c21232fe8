#!/usr/bin/python3
"""Parity test: one zoo model through winfer and through PyTorch, for every conv algorithm.

    parity.py --model resnet18 --winfer build/bin/winfer --work-dir build/parity
              [--batches 1,2] [--size HxW] [--algorithms auto|a,b] [--autotune first|all|none]
              [--unfused-runner PROG]
              [--seed 0] [--threads 1] [--name TEST] [--no-bisect]
              [--onnx OPSET [--dynamic [AXES]] [--inputs NxHxW,...]]

For each batch and each convolution algorithm the engine has (asked from the engine itself
with --algorithms auto, so new algorithms are picked up without changing anything here), the
engine runs the torchvision model's random weights on a random input (made with
models/tools/export_torch.py's functions, BatchNorm calibrated, cached in WORK_DIR/cache: see
references.py), and its logits are compared with torch's (see compare.py for the criteria:
relative error <= 1e-4 of the largest |logit|, and the same top-5 classes up to ties). Before
that, the reference itself is checked: its logits must depend on the input, and torch's own
float32 rounding must be well below the tolerance (measured against float64).

--size HxW runs the model at another input size through a YAML copy with that `input:` shape
(a non-square input, or a smaller one for the slowest models). --unfused-runner runs the engine
with batch norm and activations kept as separate layers (tests/parity/unfused_runner.cpp).

--onnx OPSET runs an ONNX file instead of the zoo YAML: the same torch model (weights, calibrated
BatchNorm) exported by torch.onnx.export at that opset (models/tools/export_onnx.py, cached in
WORK_DIR/cache: see onnx_exports.py), traced at --size (the YAML's by default). Static, one file
per batch; --dynamic [AXES] one file with symbolic batch, height and width (or just AXES, e.g.
`batch` for VGG, whose adaptive pooling torch cannot export with a symbolic height or width),
run at each batch of --batches at the traced size and, where height and width are symbolic, also
at batch 1 and 160x224 (--inputs NxHxW,... gives the shapes instead). The engine takes the shape
from the input .npy. A failing ONNX run is diagnosed by running the zoo YAML the same way.

Prints one line per run, writes WORK_DIR/results/NAME.json (summary.py gathers them), and on a
failure bisects to the first layer that departs from PyTorch (bisect_layers.py).
Exit status: 0 pass, 1 fail, 77 skipped (PyTorch not installed).
"""

import argparse
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
ZOO = os.path.join(REPO, "models", "zoo")
SKIP = 77  # the tests' SKIP_RETURN_CODE in CMakeLists.txt
ALL_DYNAMIC = ("batch", "height", "width")  # export_onnx.py's symbolic dims
# A dynamic ONNX export with a symbolic height and width also runs at batch 1 at this size:
# non-square, and the YAML parity's 160x224 tests have its references already.
DYNAMIC_SECOND_SIZE = (160, 224)


def missing_python_packages():
    """Names of the packages these tests need that are not installed. Found, not imported:
    importing torch and torchvision takes 1.5 s, which a test whose references and ONNX files
    are cached (made by parity.prepare, prepare.py) never needs."""
    import importlib.util
    return [package for package in ("numpy", "torch", "torchvision", "yaml")
            if importlib.util.find_spec(package) is None]


def yaml_input_shape(yaml_path):
    """The `input:` shape of a model YAML (NCHW), read without yaml_reference.py, which imports
    torch (see missing_python_packages)."""
    import yaml
    with open(yaml_path) as f:
        text = f.read()
    # The zoo's one-line `input: {name: ..., shape: [N, C, H, W]}` (engine.model_variant edits the
    # same line); parsing a whole zoo YAML with PyYAML is ~0.1 s, 57 of them in prepare.py.
    match = re.search(r"^input:\s*\{.*\bshape:\s*\[([0-9,\s]+)\]", text, flags=re.M)
    if match:
        return [int(d) for d in match.group(1).split(",")]
    return [int(d) for d in yaml.safe_load(text)["input"]["shape"]]


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="zoo model name (models/zoo/NAME.yaml)")
    ap.add_argument("--winfer", required=True, help="the winfer CLI")
    ap.add_argument("--work-dir", required=True, help="cache, model copies and results go here")
    ap.add_argument("--batches", default="1,2", help="comma-separated batch sizes (1,2)")
    ap.add_argument("--size", help="input HxW instead of the YAML's, e.g. 160x224")
    ap.add_argument("--algorithms", default="auto",
                    help="comma-separated conv algorithms, or auto: all the engine lists")
    ap.add_argument("--autotune", choices=("first", "all", "none"), default="first",
                    help="batches that run the 'auto' algorithm (per-layer autotuning, a third "
                         "of a test's engine time): the first (default), all, or none")
    ap.add_argument("--unfused-runner", default="", help="run with fusion off through this")
    ap.add_argument("--seed", type=int, default=0, help="seed of the weights and the input")
    ap.add_argument("--threads", type=int, default=1,
                    help="engine and torch threads (1: ctest -j runs tests side by side)")
    ap.add_argument("--name", help="test name for the results file (default: from the options)")
    ap.add_argument("--no-bisect", action="store_true", help="do not bisect failures")
    ap.add_argument("--onnx", type=int, metavar="OPSET",
                    help="run the torch model exported to ONNX at this opset, not the YAML")
    ap.add_argument("--dynamic", nargs="?", const=",".join(ALL_DYNAMIC), default="",
                    metavar="AXES", help="with --onnx: export with these symbolic input dims "
                    "(default batch,height,width)")
    ap.add_argument("--inputs", help="with --dynamic: the NxHxW input shapes to run")
    args = ap.parse_args(argv)
    args.batches = [int(b) for b in args.batches.split(",")]
    if args.size:
        args.height, args.width = (int(v) for v in args.size.lower().split("x"))
    args.dynamic = tuple(axis for axis in args.dynamic.split(",") if axis)
    unknown = [axis for axis in args.dynamic if axis not in ALL_DYNAMIC]
    if unknown:
        ap.error(f"--dynamic: unknown axis {unknown[0]!r} (known: {', '.join(ALL_DYNAMIC)})")
    if args.onnx is None and (args.dynamic or args.inputs):
        ap.error("--dynamic and --inputs go with --onnx")
    if args.onnx is not None and args.unfused_runner:
        ap.error("--onnx runs `winfer run`; the unfused runner takes YAML models only")
    if args.inputs and not args.dynamic:
        ap.error("--inputs needs --dynamic (a static ONNX file admits its traced shape only)")
    args.inputs = [tuple(int(d) for d in text.lower().split("x"))
                   for text in args.inputs.split(",")] if args.inputs else None
    variant = ([args.size] if args.size else []) + (["unfused"] if args.unfused_runner else [])
    if args.onnx is not None:
        dynamic = ("dynamic" if set(args.dynamic) == set(ALL_DYNAMIC)
                   else "dynamic-" + "-".join(args.dynamic))
        variant = [f"onnx{args.onnx}"] + ([dynamic] if args.dynamic else []) + variant
    args.name = args.name or ".".join([args.model] + variant)
    return args


def input_shapes(yaml_path, args):
    """NCHW input shapes to test: the YAML's C (and H, W unless --size), each batch; for a
    dynamic ONNX export --inputs, or also batch 1 at DYNAMIC_SECOND_SIZE (see the doc)."""
    shape = yaml_input_shape(yaml_path)
    height, width = (args.height, args.width) if args.size else (shape[2], shape[3])
    if args.inputs:
        return [(n, shape[1], h, w) for n, h, w in args.inputs]
    shapes = [(batch, shape[1], height, width) for batch in args.batches]
    if {"height", "width"} <= set(args.dynamic) and (height, width) != DYNAMIC_SECOND_SIZE:
        shapes.append((1, shape[1]) + DYNAMIC_SECOND_SIZE)
    return shapes


def traced_shape(yaml_path, args, shape):
    """The shape an ONNX file is exported at to run SHAPE: SHAPE itself for a static export;
    the first batch at --size (or the YAML's size) for a dynamic one, whatever SHAPE is."""
    if not args.dynamic:
        return shape
    yaml_shape = yaml_input_shape(yaml_path)
    height, width = (args.height, args.width) if args.size else (yaml_shape[2], yaml_shape[3])
    return (args.batches[0], yaml_shape[1], height, width)


def check_reference(refs, shapes):
    """(input sensitivity, worst torch float32 error, problems): is torch's output a good
    instrument? See compare.py; a problem here is the reference's, never the engine's."""
    import numpy as np
    from compare import MAX_REFERENCE_ERROR, MIN_INPUT_SENSITIVITY, input_sensitivity
    problems = []
    batched = [shape for shape in shapes if shape[0] >= 2]
    sensitivity = input_sensitivity(np.load(refs.torch_output(batched[0]))) if batched else None
    if sensitivity is not None and sensitivity < MIN_INPUT_SENSITIVITY:
        problems.append(f"torch's logits for two different images differ by only "
                        f"{sensitivity:.2g} of their size (< {MIN_INPUT_SENSITIVITY:g}): the "
                        "comparison would prove nothing")
    float32_error = max(refs.meta(shape).get("torch_float32_error", float("inf"))
                        for shape in shapes)
    if not float32_error <= MAX_REFERENCE_ERROR:
        problems.append(f"torch's own float32 logits are {float32_error:.2g} away from the "
                        f"float64 result (> {MAX_REFERENCE_ERROR:g}): the reference is too "
                        "ill-conditioned for the tolerance")
    if problems:
        problems.append("fix the reference (tests/parity/references.py), not the tolerance")
    return sensitivity, float32_error, problems


def run_one(engine, yaml_path, refs, shape, algorithm, work_dir, tag="", own_weights=False):
    """One engine run compared with torch; returns the record for the results file.
    TAG tells its output file apart from other tests' (onnx17.dynamic...); OWN_WEIGHTS: the
    model file (an ONNX file) carries its weights."""
    import numpy as np
    from compare import compare_logits, relative_difference
    output = os.path.join(work_dir, "outputs", f"{refs.model}.{shape_text(shape)}.{algorithm}"
                          f"{'.unfused' if engine.unfused_runner else ''}"
                          f"{'.' + tag if tag else ''}.npy")
    os.makedirs(os.path.dirname(output), exist_ok=True)
    meta = refs.meta(shape)
    record = {"shape": shape_text(shape), "batch": shape[0], "algorithm": algorithm,
              "torch_seconds": meta.get("torch_seconds"),
              "torch_float32_error": meta.get("torch_float32_error")}
    try:
        got, wall, run_ms = engine.run(yaml_path, None if own_weights else refs.weights(),
                                       refs.input(shape), output, algorithm)
    except Exception as error:  # the engine failed: a test failure, with its message
        record.update(passed=False, problem=str(error))
        return record
    record.update(engine_seconds=wall, engine_run_ms=run_ms)
    record.update(compare_logits(got, np.load(refs.torch_output(shape))).as_dict())
    # For the report: how far the engine and torch each are from the exact result.
    record["engine_float32_error"] = relative_difference(got, np.load(refs.exact_output(shape)))
    return record


def format_record(model, record):
    if "max_abs_error" not in record:
        return (f"{model:<20} {record['shape']:<13} {record['algorithm']:<8} "
                f"FAIL: {record['problem']}")
    torch_time = record["torch_seconds"]
    line = (f"{model:<20} {record['shape']:<13} {record['algorithm']:<8} "
            f"max|err| {record['max_abs_error']:.3g}  max|torch| {record['max_abs_torch']:.4g}  "
            f"rel {record['relative_error']:.2e}  top5 {record['top5']:<9} "
            f"engine {record['engine_seconds']:.2f} s (run {record['engine_run_ms']:.0f} ms)  "
            f"torch {'?' if torch_time is None else f'{torch_time:.2f}'} s  "
            f"{'PASS' if record['passed'] else 'FAIL: ' + record['problem']}")
    line += (f"\n{'':<43}vs float64: engine {record['engine_float32_error']:.2e}, "
             f"torch {record['torch_float32_error']:.2e}")
    if record["top5_note"]:
        line += f"\n{'':<43}top-5 note: {record['top5_note']}"
    return line


def diagnose(failure, engine, yaml_path, refs, work_dir):
    """Bisect the first failing run to the layer where the engine departs from PyTorch."""
    from bisect_layers import bisect
    shape = tuple(int(d) for d in failure["shape"].split("x"))
    print(f"bisecting {refs.model} {failure['shape']} {failure['algorithm']} ...", flush=True)
    try:
        finding = bisect(yaml_path, refs.weights(), refs.input(shape), engine,
                         failure["algorithm"], os.path.join(work_dir, "bisect"))
    except Exception as problem:  # the diagnosis must not hide the failure itself
        return f"bisect failed: {problem}"
    if finding is None:
        return "bisect: the last layer agrees when it is the only output; no layer to blame"
    return finding.describe()


def diagnose_onnx(failure, engine, yaml_path, refs, work_dir, tag):
    """Run the zoo YAML where the ONNX file failed: is it the import, or the engine itself?"""
    from engine import model_variant
    from yaml_reference import parse_only
    shape = tuple(int(d) for d in failure["shape"].split("x"))
    yaml_shape, _, _ = parse_only(yaml_path)
    if tuple(yaml_shape[2:]) != shape[2:]:
        yaml_path = model_variant(yaml_path, os.path.join(work_dir, "models"), *shape[2:])
    record = run_one(engine, yaml_path, refs, shape, failure["algorithm"], work_dir,
                     f"{tag}.yaml")
    what = f"the zoo YAML at {failure['shape']} with {failure['algorithm']}"
    if "max_abs_error" not in record:
        return f"{what} fails too: {record['problem']}"
    verdict = (f"passes (rel {record['relative_error']:.2e}): the fault is on the ONNX path "
               "(the import, or the graph it makes), not in the kernels"
               if record["passed"] else
               f"fails too (rel {record['relative_error']:.2e}): see the YAML parity test")
    return f"{what} {verdict}"


def export_onnx_files(args, yaml_path, refs, shapes):
    """The ONNX file of each input shape, exported now or cached: ({shape: path}, seconds spent,
    torch's reason where it refuses to export the model so)."""
    from export_onnx import ExportRefused
    from onnx_exports import OnnxExports
    exports = OnnxExports(refs, args.onnx, args.dynamic)
    files, start, exported = {}, time.time(), False
    for shape in shapes:
        traced = traced_shape(yaml_path, args, shape)
        try:
            exported |= exports.ensure(traced, args.threads) > 0.0
        except ExportRefused as error:
            dynamic = f", dynamic {','.join(args.dynamic)}" if args.dynamic else ""
            return {}, time.time() - start, (f"torch cannot export {args.model} to ONNX at "
                                             f"{shape_text(traced)}, opset {args.onnx}{dynamic}: "
                                             f"{error}")
        files[shape] = exports.path(traced)
    return files, time.time() - start if exported else 0.0, ""


def onnx_tag(args):
    """The part of output file names that tells ONNX runs apart (onnx17, onnx13.dynamic...)."""
    if args.onnx is None:
        return ""
    return f"onnx{args.onnx}" + (f".dynamic-{'-'.join(args.dynamic)}" if args.dynamic else "")


def write_results(path, results):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = f"{path}.tmp{os.getpid()}"
    with open(temporary, "w") as f:
        json.dump(results, f, indent=1)
    os.replace(temporary, path)


def header(args, algorithms, shapes, generation, sensitivity, float32_error, exported=None):
    """The first line of a test's log: what is compared, and how good the reference is."""
    origin = "from the engine" if args.algorithms == "auto" else "given"
    made = f"generated in {generation:.1f} s" if generation else "cached"
    onnx = ""
    if args.onnx is not None:
        onnx = (f"ONNX opset {args.onnx}, "
                f"{'symbolic ' + ','.join(args.dynamic) if args.dynamic else 'static'} "
                f"({f'export: {exported:.1f} s' if exported else 'cached'}); ")
    sensitivity_text = "n/a" if sensitivity is None else f"{sensitivity:.2g}"
    return (f"parity {args.name}: {onnx}algorithms {', '.join(algorithms)} ({origin}); inputs "
            f"{', '.join(map(shape_text, shapes))}; "
            f"{'unfused (batch norm not folded); ' if args.unfused_runner else ''}"
            f"seed {args.seed}; references {made}; torch's logits: input sensitivity "
            f"{sensitivity_text}, float32 error {float32_error:.2g}")


def shape_text(shape):
    return "x".join(str(d) for d in shape)


def run_parity(args):
    """The whole test; returns the results written to WORK_DIR/results/NAME.json."""
    from engine import Engine, discover_algorithms, model_variant
    from references import References
    start = time.time()
    yaml_path = os.path.join(ZOO, f"{args.model}.yaml")
    algorithms = (discover_algorithms(args.winfer) if args.algorithms == "auto"
                  else args.algorithms.split(","))
    shapes = input_shapes(yaml_path, args)
    refs = References(os.path.join(args.work_dir, "cache"), args.model, args.seed)
    generation = refs.ensure(shapes, args.threads)
    zoo_yaml = yaml_path
    if args.size and args.onnx is None:
        yaml_path = model_variant(yaml_path, os.path.join(args.work_dir, "models"),
                                  args.height, args.width)
    onnx_files, exported, export_problem = {}, 0.0, ""
    if args.onnx is not None:
        onnx_files, exported, export_problem = export_onnx_files(args, zoo_yaml, refs, shapes)
    engine = Engine(args.winfer, args.unfused_runner, args.threads)
    sensitivity, float32_error, reference_problems = check_reference(refs, shapes)
    print(header(args, algorithms, shapes, generation, sensitivity, float32_error, exported),
          flush=True)
    diagnosis = "; ".join(reference_problems + ([export_problem] if export_problem else []))
    if diagnosis:
        print(f"FAIL ({'export' if export_problem else 'reference'}): {diagnosis}")

    records = []
    for index, shape in enumerate(shapes if not export_problem else []):
        for algorithm in algorithms:
            # "auto" only chooses among the algorithms checked here, per layer: once per test.
            if algorithm == "auto" and (args.autotune == "none" or (args.autotune == "first" and index > 0)):
                continue
            model_file = onnx_files.get(shape, yaml_path)
            records.append(run_one(engine, model_file, refs, shape, algorithm, args.work_dir,
                                   onnx_tag(args), own_weights=model_file != yaml_path))
            print(format_record(args.model, records[-1]), flush=True)
    failures = [record for record in records if not record["passed"]]
    # Only wrong numbers can be bisected; an engine that fails to run has said why already.
    wrong = [record for record in failures if "max_abs_error" in record]
    if failures and args.onnx is not None and not args.no_bisect:
        found = diagnose_onnx((wrong or failures)[0], engine, zoo_yaml, refs, args.work_dir,
                              onnx_tag(args))
        print(found)
        diagnosis = "; ".join(text for text in (diagnosis, found) if text)
    elif wrong and not args.no_bisect:
        bisected = diagnose(wrong[0], engine, yaml_path, refs, args.work_dir)
        print(bisected)
        diagnosis = "; ".join(text for text in (diagnosis, bisected) if text)
    return {"test": args.name, "model": args.model, "size": args.size or "",
            "unfused": bool(args.unfused_runner), "seed": args.seed, "threads": args.threads,
            "onnx_opset": args.onnx, "onnx_dynamic": list(args.dynamic),
            "onnx_files": sorted({os.path.basename(path) for path in onnx_files.values()}),
            "export_seconds": exported,
            "algorithms": algorithms, "generation_seconds": generation,
            "total_seconds": time.time() - start, "input_sensitivity": sensitivity,
            "torch_float32_error": float32_error,
            "passed": not failures and not reference_problems and not export_problem,
            "diagnosis": diagnosis,
            "finished": time.strftime("%Y-%m-%d %H:%M:%S"), "runs": records}


def main(argv=None):
    args = parse_args(argv)
    missing = missing_python_packages()
    if missing:
        print(f"SKIP parity {args.name}: Python packages not importable: {', '.join(missing)} "
              "(scripts/setup.sh installs python3-torch and python3-torchvision)")
        return SKIP
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(REPO, "models", "tools"))
    results = run_parity(args)
    write_results(os.path.join(args.work_dir, "results", f"{args.name}.json"), results)
    print(f"parity {args.name}: {'PASS' if results['passed'] else 'FAIL'} in "
          f"{results['total_seconds']:.1f} s")
    return 0 if results["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
