#!/usr/bin/python3
"""Prove that each zoo YAML computes exactly what the torchvision model computes.

For every model: build the torchvision network with random weights and random non-trivial
BatchNorm statistics (eval mode), then
  1. the parameters the YAML uses (names and shapes derived from the layer attributes) must be
     exactly torchvision's state_dict() minus `num_batches_tracked`;
  2. the same random input through torchvision and through yaml_reference.py (with the
     state_dict) must give the same logits (max abs diff within a float32 tolerance), and the
     same output at every layer that has parameters (conv, batchnorm, linear: these are
     torchvision modules of the same name, captured with forward hooks). The per-layer check
     matters: a randomly initialised deep network washes out most mistakes by the logits.

Usage:
    /usr/bin/python3 models/tools/check_zoo.py [MODEL ...] [--batch N] [--seed S] [--float64]

With --float64 the reference runs in double precision, so the differences show torchvision's
float32 rounding: the size of error a correct float32 engine should expect.
Exits 1 if any model fails.
"""

import argparse
import os
import sys
import time

import numpy as np
import torch

TOOLS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TOOLS)
from export_torch import randomize_batchnorm, torchvision_model  # noqa: E402
from gen_zoo import MODELS  # noqa: E402
from yaml_reference import load_model, parse_only  # noqa: E402

ZOO_DIR = os.path.normpath(os.path.join(TOOLS, "..", "zoo"))
RELATIVE_TOLERANCE = 1e-4   # of the largest |logit|
ABSOLUTE_TOLERANCE = 1e-6


def compare_params(yaml_shapes, state_dict):
    """List of problems between the YAML's parameters and torchvision's state_dict."""
    torch_shapes = {k: list(v.shape) for k, v in state_dict.items()
                    if not k.endswith("num_batches_tracked")}
    problems = [f"used by the YAML, not in torchvision: {k}"
                for k in sorted(set(yaml_shapes) - set(torch_shapes))]
    problems += [f"in torchvision, not used by the YAML: {k}"
                 for k in sorted(set(torch_shapes) - set(yaml_shapes))]
    problems += [f"shape of {k}: YAML {yaml_shapes[k]}, torchvision {torch_shapes[k]}"
                 for k in sorted(set(yaml_shapes) & set(torch_shapes))
                 if list(yaml_shapes[k]) != torch_shapes[k]]
    return problems


def yaml_param_shapes(path):
    _, layers, _ = parse_only(path)
    shapes = {}
    for layer in layers:
        shapes.update(layer.param_shapes)
    return shapes


def capture_module_outputs(net, names):
    """Forward hooks that keep a copy of the output of each named module (copies, because
    torchvision's in-place ReLUs overwrite conv/bn outputs later)."""
    captured, handles = {}, []
    modules = dict(net.named_modules())
    for name in names:
        def hook(module, inputs, output, name=name):
            captured[name] = output.detach().clone()
        handles.append(modules[name].register_forward_hook(hook))
    return captured, handles


def worst_layer(values, captured):
    """(relative max abs diff, layer) over the layers torchvision also exposes."""
    worst = (0.0, "-")
    for name, expected in captured.items():
        diff = (values[name] - expected).abs().max().item()
        rel = diff / max(expected.abs().max().item(), 1e-12)
        if rel > worst[0]:
            worst = (rel, name)
    return worst


def check_model(name, batch, seed, dtype=torch.float32):
    """Returns (ok, report line)."""
    start = time.time()
    path = os.path.join(ZOO_DIR, f"{name}.yaml")
    net = randomize_batchnorm(torchvision_model(name, seed), seed)
    state = net.state_dict()
    problems = compare_params(yaml_param_shapes(path), state)
    if problems:
        return False, f"{name}: parameter mismatch:\n  " + "\n  ".join(problems)

    reference = load_model(path, weights=state)
    # every layer with parameters is a torchvision module of the same name
    compared = [layer.name for layer in reference.layers if layer.param_shapes]
    captured, handles = capture_module_outputs(net, compared)
    shape, _, _ = parse_only(path)  # the YAML's input size (224x224; Inception v3 299x299)
    x = torch.from_numpy(np.random.default_rng(seed).standard_normal(
        [batch] + list(shape[1:]), dtype=np.float32))
    with torch.no_grad():
        expected = net(x)
    for handle in handles:
        handle.remove()
    t_torch = time.time()
    values = {k: v.float() for k, v in reference.run(x, keep_all=True, dtype=dtype).items()}
    got = values[reference.outputs[0]]
    t_ref = time.time()

    diff = (got - expected).abs().max().item()
    scale = expected.abs().max().item()
    layer_rel, layer = worst_layer(values, captured)
    ok = (list(got.shape) == list(expected.shape) and layer_rel <= RELATIVE_TOLERANCE
          and diff <= RELATIVE_TOLERANCE * scale + ABSOLUTE_TOLERANCE)
    line = (f"{name:19s} {'ok' if ok else 'FAIL':4s} logits: max|y| {scale:7.3g}  "
            f"max abs diff {diff:8.2g};  {len(compared):3d} layers: worst rel diff "
            f"{layer_rel:8.2g} ({layer});  {t_ref - start:5.1f}s")
    return ok, line


def main(argv=None):
    ap = argparse.ArgumentParser(description="Check the zoo YAML files against torchvision.")
    ap.add_argument("models", nargs="*", help=f"default: all of {MODELS}")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--float64", action="store_true",
                    help="run yaml_reference in float64 (shows float32 rounding in torchvision)")
    args = ap.parse_args(argv)
    dtype = torch.float64 if args.float64 else torch.float32
    names = args.models or MODELS
    failures = 0
    total = time.time()
    for name in names:
        ok, line = check_model(name, args.batch, args.seed, dtype)
        failures += not ok
        print(line, flush=True)
    print(f"{len(names) - failures}/{len(names)} models match torchvision "
          f"({time.time() - total:.0f}s, {torch.get_num_threads()} threads)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
