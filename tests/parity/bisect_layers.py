"""Find the first layer where the engine departs from PyTorch, for a failing parity run.

models/tools/yaml_reference.py runs the same YAML layer by layer in PyTorch and keeps every
tensor; the engine can be made to return any tensor by a YAML copy whose `outputs:` names it
(a graph output is never fused away, so the engine computes it as a layer of its own). A bug
usually spoils every tensor downstream of the faulty layer, so a binary search over the layers
in file order, then a walk up the graph through failing inputs, finds the layer whose inputs
agree with PyTorch and whose output does not, in about log2(layers) + a few engine runs
(resnet152 has ~500 layers).

It is started automatically when a parity run fails (see parity.py --no-bisect), and can be run
by hand:

    /usr/bin/python3 tests/parity/bisect_layers.py MODEL.yaml --weights W.safetensors \\
        --input X.npy --winfer build/bin/winfer --conv ALGO [--unfused-runner R] [--work-dir D]
"""

import argparse
import os
import sys
from dataclasses import dataclass

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "models", "tools"))  # yaml_reference
from compare import RELATIVE_TOLERANCE, relative_difference  # noqa: E402
from engine import Engine, model_variant  # noqa: E402

# A layer that multiplies its inputs' error by less than this is not where a bug is: the error
# grew there the way float32 rounding grows through a network.
JUMP = 10


def candidate_tensors(reference_model):
    """Every layer output in execution order. A split's parts are skipped: the layers reading
    them (named, not split) are candidates in their place."""
    return [layer.name for layer in reference_model.layers if layer.op != "split"]


@dataclass
class Finding:
    layer: object         # yaml_reference's Layer
    error: float          # relative error of its output
    input_error: float    # the largest relative error of its inputs

    def describe(self):
        layer = self.layer
        attrs = ", ".join(f"{k}: {v}" for k, v in sorted(layer.attrs.items()))
        text = (f"first layer off by more than {RELATIVE_TOLERANCE:g}: '{layer.name}' "
                f"({layer.op}; inputs {layer.inputs}; {attrs}): relative error "
                f"{self.error:.3g}, its inputs' {self.input_error:.3g}")
        if self.error < JUMP * self.input_error:
            text += (" -- a gradual growth of rounding error over many layers, not one faulty "
                     "layer (compare with a float64 reference)")
        return text


class Bisector:
    """Compares the engine's tensors with yaml_reference's, one engine run per tensor."""

    def __init__(self, yaml_path, weights, x_path, engine, algorithm, work_dir, log=print):
        import torch
        from yaml_reference import load_model
        self.reference = load_model(yaml_path, weights=weights)
        with torch.no_grad():
            self.values = self.reference.run(torch.from_numpy(np.load(x_path)), keep_all=True)
        self.producer = {}  # tensor name -> the layer that makes it (NAME:i -> the split NAME)
        for layer in self.reference.layers:
            self.producer[layer.name] = layer
            if layer.op == "split":
                self.producer.update({name: layer for name in self.values
                                      if name.startswith(layer.name + ":")})
        self.run = lambda probe: engine.run(probe, weights, x_path,
                                            os.path.join(work_dir, "bisect.output.npy"),
                                            algorithm)[0]
        self.yaml_path, self.work_dir, self.log = yaml_path, work_dir, log
        self.errors = {self.reference.input_name: 0.0}

    def error(self, name):
        """Relative error of the engine's tensor NAME (the only output of a YAML copy)."""
        if name not in self.errors:
            probe = model_variant(self.yaml_path, self.work_dir, outputs=[name])
            self.errors[name] = relative_difference(self.run(probe),
                                                    self.values[name].numpy())
            self.log(f"  bisect: {name} ({self.producer[name].op}): relative error "
                     f"{self.errors[name]:.3g}")
        return self.errors[name]

    def fails(self, name):
        return self.error(name) > RELATIVE_TOLERANCE

    def first_failure(self):
        """Two steps. A binary search over the layers in file order finds a failing layer
        whose predecessor in the file passes. File order is not a chain, though: in a residual
        block the shortcut's layers come after the faulty branch and pass, so that layer may be
        an `add` downstream of the fault. Then walk up the graph: while one of the current
        layer's inputs fails too, move to that input. The layer reached has good inputs and a
        bad output. None if the last layer passes."""
        names = candidate_tensors(self.reference)
        if not self.fails(names[-1]):
            self.log("  bisect: the last layer agrees when it is the only output")
            return None
        low, high = 0, len(names) - 1  # names[high] fails; in a chain all before low pass
        while low < high:
            middle = (low + high) // 2
            if self.fails(names[middle]):
                high = middle
            else:
                low = middle + 1
        name = names[high]
        while True:
            inputs = self.producer[name].inputs
            failing = [tensor for tensor in inputs if self.fails(tensor)]
            if not failing:
                return Finding(self.producer[name], self.error(name),
                               max(self.error(tensor) for tensor in inputs))
            name = failing[0]


def bisect(yaml_path, weights, x_path, engine, algorithm, work_dir, log=print):
    """The Finding for the first layer where the engine departs from PyTorch, or None."""
    return Bisector(yaml_path, weights, x_path, engine, algorithm, work_dir, log).first_failure()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="model YAML (with the input size of the input .npy)")
    ap.add_argument("--weights", required=True)
    ap.add_argument("--input", required=True, help="input .npy")
    ap.add_argument("--winfer", required=True, help="the winfer CLI")
    ap.add_argument("--conv", required=True, help="convolution algorithm")
    ap.add_argument("--unfused-runner", default="", help="run unfused through this program")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--work-dir", default="parity-bisect")
    args = ap.parse_args(argv)
    engine = Engine(args.winfer, args.unfused_runner, args.threads)
    finding = bisect(args.model, args.weights, args.input, engine, args.conv, args.work_dir)
    if finding is None:
        return 0
    print(finding.describe())
    return 1


if __name__ == "__main__":
    sys.exit(main())
