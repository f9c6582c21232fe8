#!/usr/bin/python3
"""Makes the references and ONNX files of every parity test ahead of the tests (ctest:
parity.prepare.<shard>, the setup of the tests' fixture winfer_parity).

    prepare.py --build-dir BUILD [--shard I/N]

Reads the parity tests from BUILD's CTestTestfile.cmake, works out
from each one's parity.py arguments which reference shapes and ONNX exports it will ask for,
and makes them model by model, in one process: torch is imported once per shard, and each model
constructed and calibrated once for all of its tests (references.reference_model keeps it). The
tests then find everything cached and import no torch at all (parity.py imports it only to make
what is missing).

Why (CI, 2 cores, nothing cached): each of the ~60 parity tests imported torch and torchvision
(1.5 s) and constructed and calibrated its model again for its own shapes and exports (VGG 2-5 s,
ResNet-50 ~1 s): about a third of the parity tests' 440 s of CPU time.

Only an optimisation: a test still makes whatever it finds missing (parity.py, References.ensure,
OnnxExports.ensure), and reports any problem itself. So this script never fails (a failed
setup test would keep ctest from running the parity tests at all): it prints what went wrong
and exits 0. Shard I of N takes every N-th model by estimated cost (the VGGs' 0.5 GB of weights
first), so that two shards on ctest -j2 finish together.
"""

import argparse
import os
import shlex
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import parity  # noqa: E402  (its argument parsing and shape rules: the same as the tests')

sys.path.insert(0, os.path.join(parity.REPO, "models", "tools"))


def parity_commands(build_dir):
    """The parity.py argument lists of the parity tests registered in BUILD_DIR, read from its
    CTestTestfile.cmake (add_test(NAME "COMMAND" "ARG"...) lines). Not `ctest --show-only`: that
    rewrites Testing/Temporary/LastTest.log, which the running ctest is writing."""
    commands = []
    with open(os.path.join(build_dir, "CTestTestfile.cmake")) as f:
        for line in f:
            if not line.startswith("add_test(") or "parity.py" not in line:
                continue
            words = shlex.split(line.strip()[len("add_test("):-1])
            command = words[1:]
            if len(command) >= 2 and os.path.basename(command[1]) == "parity.py":
                commands.append(command[2:])
    return commands


def plan(commands):
    """{(model, seed, work_dir): {"shapes": set of NCHW, "exports": set of (opset, axes, shape)}}"""
    needs = {}
    for argv in commands:
        args = parity.parse_args(argv)
        yaml_path = os.path.join(parity.ZOO, f"{args.model}.yaml")
        shapes = parity.input_shapes(yaml_path, args)
        need = needs.setdefault((args.model, args.seed, args.work_dir),
                                {"shapes": set(), "exports": set()})
        need["shapes"].update(shapes)
        if args.onnx is not None:
            for shape in shapes:
                need["exports"].add((args.onnx, args.dynamic, parity.traced_shape(yaml_path, args, shape)))
    return needs


def cost(model):
    """A rough order of the models' preparation time (weights made and written, exports)."""
    if model.startswith("vgg"):
        return 3
    if model.startswith(("resnet", "wide_resnet", "alexnet", "regnet_y_1_6gf", "resnext")):
        return 2
    return 1


def prepare(key, need):
    from onnx_exports import OnnxExports
    from references import References
    from export_onnx import ExportRefused
    model, seed, work_dir = key
    start = time.time()
    refs = References(os.path.join(work_dir, "cache"), model, seed)
    refs.ensure(sorted(need["shapes"]))
    exported = 0
    for opset, axes, shape in sorted(need["exports"]):
        try:
            exported += OnnxExports(refs, opset, axes).ensure(shape) > 0.0
        except ExportRefused as refused:  # the test reports it
            print(f"  {model}: torch refuses to export at {parity.shape_text(shape)}, opset {opset}: {refused}")
    print(f"prepare {model}: {len(need['shapes'])} reference shape(s), {len(need['exports'])} "
          f"ONNX file(s) ({exported} exported now) in {time.time() - start:.1f} s", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", required=True, help="the build folder whose parity tests to prepare")
    ap.add_argument("--shard", default="0/1", help="I/N: this shard of the models (0/1: all)")
    args = ap.parse_args(argv)
    index, count = (int(v) for v in args.shard.split("/"))
    start = time.time()
    missing = parity.missing_python_packages()
    if missing:
        print(f"prepare: nothing to do, Python packages missing: {', '.join(missing)} (the parity tests skip)")
        return 0
    try:
        needs = plan(parity_commands(args.build_dir))
    except Exception:  # the tests make their own references
        traceback.print_exc()
        print("prepare: could not list the parity tests; each test makes its own references")
        return 0
    order = sorted(needs, key=lambda key: (-cost(key[0]), key[0]))
    mine = [key for position, key in enumerate(order) if position % count == index]
    failed = []
    for key in mine:
        try:
            prepare(key, needs[key])
        except Exception:  # the model's tests will meet it again and report it
            traceback.print_exc()
            failed.append(key[0])
    import references
    references._last_model.clear()
    print(f"prepare: shard {index}/{count}: {len(mine)} model(s) in {time.time() - start:.1f} s"
          + (f"; failed (their tests will say why): {', '.join(failed)}" if failed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
