#!/usr/bin/python3
"""Export a zoo model to ONNX with torch.onnx.export, as winfer's ONNX parity tests do.

    export_onnx.py resnet50 -o resnet50.onnx [--opset 17] [--size 224x224] [--batch 1]
                   [--dynamic [AXES]] [--seed 0] [--golden PREFIX]

The network is the torchvision module of models/zoo/NAME.yaml with RANDOM weights, exactly
those of the parity tests (tests/parity/references.py: torch.manual_seed(SEED), random BatchNorm
parameters, damped residual branches, BatchNorm statistics calibrated on a random batch), so the
file of `export_onnx.py resnet18 --opset 13` is the one `parity.py --model resnet18 --onnx 13`
runs. Pretrained weights cannot be downloaded here; for a trained network, export your own
module the same way (torch.onnx.export(model.eval(), x, "net.onnx", opset_version=17,
input_names=["input"], output_names=["output"], dynamic_axes=...)).

The export: model.eval(), one float32 NCHW input named `input` traced at BATCH x 3 x H x W
(--size, default 224x224), one output named `output`, torch's default constant folding (in eval
mode torch also folds every BatchNorm that follows a convolution into it). Static by default:
every dim of the file is fixed. --dynamic makes the input's batch, height and width symbolic
(`batch`, `height`, `width`) and the output's batch; --dynamic batch makes only the batch
symbolic. --golden PREFIX also writes PREFIX.input.npy (seeded random input of the traced shape)
and PREFIX.output.npy (torch's output for it), for `winfer run FILE.onnx --input
PREFIX.input.npy --expect PREFIX.output.npy`.

Opsets: 7 to 17 with Debian's torch 1.13 (17 is its newest; 18 is refused by torch itself:
"Unsupported ONNX opset version: 18"). winfer's tests use 13 and 17.

What torch 1.13 refuses, and why (every zoo model was tried at opsets 13 and 17):
  - VGG (all eight: vgg11 ... vgg19_bn) at any input whose last feature map is not a multiple of
    7 x 7 on each side, e.g. 112x112 (3x3), 160x224 (5x7) or 64x64 (2x2): VGG ends its features
    with AdaptiveAvgPool2d((7, 7)), and torch exports an adaptive pool only as GlobalAveragePool
    (output 1x1) or as an AveragePool whose kernel = stride = input / output, which exists only
    when the output size divides the input size. Error: "Unsupported: ONNX export of operator
    adaptive_avg_pool2d, output size that are not factor of input size". The feature map is
    floor(H/32) x floor(W/32), so VGG exports at H, W in 224..255 (7x7: the pool is a 1x1
    AveragePool, an identity), 448..479 (14x14) and so on; the parity tests export VGG at
    224x224, where the YAML parity of VGG-13/16/19 runs at 112x112.
  - VGG with a symbolic height or width (--dynamic): for the same reason the pool's kernel cannot
    be computed without the input size: "Unsupported: ONNX export of operator adaptive_avg_pool2d,
    input size not accessible". A dynamic batch alone exports (--dynamic batch).
  - Nothing else: ResNet (AdaptiveAvgPool2d((1, 1)) -> GlobalAveragePool, any size) and
    ShuffleNetV2 (mean over H, W -> ReduceMean) export static and fully dynamic at every size.
What the files contain that an importer must handle (seen in these exports): BatchNorm already
folded into Conv; Gemm (transB=1) for the classifier; Flatten (ResNet, VGG); ShuffleNetV2's
channel split as Shape/Gather/Div/Mul/Slice on the channel dim and its channel shuffle as
Reshape/Transpose/Reshape with shape tensors computed by Shape/Gather/Unsqueeze/Concat (also in
static exports; opset 13 dynamic exports add Cast), and Constant nodes for every shape operand.
"""

import argparse
import os
import sys
import time

TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(TOOLS, "..", ".."))
PARITY = os.path.join(REPO, "tests", "parity")
ZOO_DIR = os.path.join(REPO, "models", "zoo")

DEFAULT_OPSET = 17
DEFAULT_SIZE = (224, 224)
# The symbolic dims of --dynamic: input dim index -> name; the output's batch follows the input's.
DYNAMIC_DIMS = {"batch": 0, "height": 2, "width": 3}
ALL_DYNAMIC = ("batch", "height", "width")


class ExportRefused(RuntimeError):
    """torch.onnx.export refused the model at this shape or with these dynamic axes."""


def zoo_model(name, seed=0):
    """The zoo model with the parity tests' random weights (tests/parity/references.py)."""
    sys.path.insert(0, PARITY)
    sys.path.insert(0, TOOLS)
    from references import reference_model
    return reference_model(name, seed)


def dynamic_axes(axes):
    """torch.onnx.export's dynamic_axes for the symbolic dims AXES (a subset of ALL_DYNAMIC)."""
    if not axes:
        return None
    unknown = [axis for axis in axes if axis not in DYNAMIC_DIMS]
    if unknown:
        raise ValueError(f"unknown dynamic axis {unknown[0]!r} (known: {', '.join(ALL_DYNAMIC)})")
    spec = {"input": {DYNAMIC_DIMS[axis]: axis for axis in axes}}
    if "batch" in axes:
        spec["output"] = {0: "batch"}
    return spec


def explain(error, shape, axes):
    """A one-paragraph reason for torch's refusal, with what to do instead where known."""
    text = str(error).split("  [Caused by")[0].strip()
    if "adaptive_avg_pool2d" in text and "not factor" in text:
        text += (f" (at input {shape[2]}x{shape[3]}: torch exports AdaptiveAvgPool2d only where "
                 "the output size divides the input size; for VGG's 7x7 pool the input's height "
                 "and width must be in 224..255, 448..479, ...)")
    elif "adaptive_avg_pool2d" in text and "not accessible" in text:
        text += (f" (dynamic axes {','.join(axes)}: torch needs the input's height and width to "
                 "export AdaptiveAvgPool2d to anything but a global pool; --dynamic batch exports)")
    return text


def export(net, path, opset=DEFAULT_OPSET, shape=(1, 3) + DEFAULT_SIZE, axes=()):
    """torch.onnx.export NET (already in eval mode) to PATH; returns the seconds it took.

    Raises ExportRefused with torch's reason when torch cannot export it."""
    import torch
    begin = time.time()
    try:
        torch.onnx.export(net.eval(), torch.zeros(tuple(shape)), path, opset_version=opset,
                          input_names=["input"], output_names=["output"],
                          dynamic_axes=dynamic_axes(axes))
    except Exception as error:  # torch raises SymbolicValueError, ValueError, RuntimeError...
        if os.path.exists(path):
            os.remove(path)
        raise ExportRefused(explain(error, shape, axes)) from error
    return time.time() - begin


def parse_size(text):
    try:
        height, width = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected HxW, e.g. 224x224, got {text!r}")
    return height, width


def parse_axes(text):
    axes = tuple(axis.strip() for axis in text.split(",") if axis.strip())
    try:
        dynamic_axes(axes)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error))
    return axes


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Export a zoo model (torchvision, RANDOM weights: pretrained weights are not "
                    "downloaded; the same weights as winfer's parity tests) to ONNX.",
        epilog="What torch 1.13 refuses to export, and why, is at the top of this file.")
    ap.add_argument("name", help="zoo model name (models/zoo/NAME.yaml), e.g. resnet50")
    ap.add_argument("-o", "--output", required=True, help="ONNX file to write")
    ap.add_argument("--opset", type=int, default=DEFAULT_OPSET,
                    help=f"ONNX opset (default {DEFAULT_OPSET}, the newest torch 1.13 writes)")
    ap.add_argument("--size", type=parse_size, default=DEFAULT_SIZE, metavar="HxW",
                    help="input height x width traced (default 224x224)")
    ap.add_argument("--batch", type=int, default=1, help="batch traced (default 1)")
    ap.add_argument("--dynamic", type=parse_axes, nargs="?", const=ALL_DYNAMIC, default=(),
                    metavar="AXES", help="symbolic input dims: batch,height,width (the default "
                    "when AXES is left out) or a subset; the output's batch follows")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random weights and input")
    ap.add_argument("--golden", metavar="PREFIX",
                    help="also write PREFIX.input.npy and torch's PREFIX.output.npy")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's)")
    args = ap.parse_args(argv)
    if not os.path.exists(os.path.join(ZOO_DIR, f"{args.name}.yaml")):
        known = sorted(f[:-5] for f in os.listdir(ZOO_DIR) if f.endswith(".yaml"))
        ap.error(f"{args.name!r} is not a zoo model (known: {', '.join(known)})")
    return args


def main(argv=None):
    args = parse_args(argv)
    try:
        import numpy as np
        import torch
        import torchvision  # noqa: F401
    except ImportError as error:
        print(f"export_onnx.py: {error.name} is not importable by {sys.executable}: run it with "
              "a Python that has torch and torchvision (Debian: /usr/bin/python3 with "
              "python3-torch and python3-torchvision, which scripts/setup.sh installs)",
              file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    begin = time.time()
    net = zoo_model(args.name, args.seed)
    built = time.time() - begin
    shape = (args.batch, 3) + args.size
    try:
        seconds = export(net, args.output, args.opset, shape, args.dynamic)
    except ExportRefused as error:
        print(f"export_onnx.py: torch {torch.__version__} cannot export {args.name} at "
              f"{'x'.join(map(str, shape))}, opset {args.opset}"
              f"{', dynamic ' + ','.join(args.dynamic) if args.dynamic else ''}: {error}",
              file=sys.stderr)
        return 1
    print(f"wrote {args.output}: {args.name}, random weights (seed {args.seed}), opset "
          f"{args.opset}, input {'x'.join(map(str, shape))}"
          f"{' with symbolic ' + ','.join(args.dynamic) if args.dynamic else ' (static)'}, "
          f"{os.path.getsize(args.output) / 1e6:.1f} MB (model {built:.1f} s, export "
          f"{seconds:.1f} s)")
    if args.golden:
        from export_torch import golden_input, run_torch
        x = golden_input(list(shape), args.seed)
        np.save(f"{args.golden}.input.npy", x)
        np.save(f"{args.golden}.output.npy", run_torch(net, x))
        print(f"wrote {args.golden}.input.npy and {args.golden}.output.npy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
