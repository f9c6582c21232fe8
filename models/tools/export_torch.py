#!/usr/bin/python3
"""Export a PyTorch model's weights to safetensors for winfer, optionally with golden files.

Two ways to name the model:

1. A torchvision classifier of the zoo, built with random weights (nothing is downloaded):

       export_torch.py resnet18 -o resnet18.safetensors [--golden PREFIX] [--seed S]
                       [--batch N] [--random-bn] [--verify]

   The zoo YAML models/zoo/resnet18.yaml uses exactly these parameter names.

2. Your own nn.Module, constructed without arguments, next to a winfer YAML you wrote for it
   (layer names = module paths, see docs/MODEL_FORMAT.md):

       export_torch.py --module path/to/net.py:ClassName --yaml net.yaml -o net.safetensors
                       [--golden PREFIX] [--seed S] [--batch N] [--random-bn] [--verify]

   With --checkpoint FILE the module's weights are loaded from a torch.save()d state_dict
   (trained weights) instead of being left at their random initialisation.

Output:
    -o FILE            every floating-point state_dict entry as float32 safetensors (torch's
                       BatchNorm `num_batches_tracked` counters are skipped; winfer does not use
                       them). Tensors the YAML does not use are harmless: winfer ignores them.
    --golden PREFIX    PREFIX.input.npy: seeded random float32 NCHW input (the YAML's input shape,
                       1x3x224x224 for zoo names; --batch overrides N); PREFIX.output.npy: the
                       model's output for it (numpy.save, float32).
Options:
    --seed S           seeds the random initialisation and the golden input (default 0)
    --random-bn        give every BatchNorm non-trivial running statistics and affine
                       parameters (random init leaves mean 0, var 1, weight 1, bias 0)
    --verify           also run the YAML through yaml_reference.py and compare with PyTorch
"""

import argparse
import importlib.util
import os
import sys
import time

import numpy as np
import torch

TOOLS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TOOLS)
from safetensors_io import write_safetensors  # noqa: E402

ZOO_DIR = os.path.normpath(os.path.join(TOOLS, "..", "zoo"))
ZOO_INPUT_SHAPE = [1, 3, 224, 224]


# Constructor arguments of the zoo models that need them (the zoo YAML is the inference network):
# GoogLeNet and Inception v3 are built without their auxiliary classifiers (aux_logits=False:
# those run only in training, and their parameters would be state_dict() entries the YAML does
# not have), with transform_input=False (torchvision's default without weights: the zoo's
# preprocessing normalises the input; its pretrained weights set True, which rescales an
# ImageNet-normalised input to the [-1, 1] range Google trained on, a step the YAML does not
# have) and init_weights=False (PyTorch's default initialisation, which torchvision announces
# as the future default: None means True today, with a FutureWarning, and its truncated-normal
# initialisation takes 2.1 s of Inception v3's 2.5 s construction, paid by each cold parity test).
TORCHVISION_ARGUMENTS = {
    "googlenet": {"aux_logits": False, "transform_input": False, "init_weights": False},
    "inception_v3": {"aux_logits": False, "transform_input": False, "init_weights": False},
}


def torchvision_model(name, seed=0):
    """A zoo classifier from torchvision with random weights, in eval mode."""
    import torchvision
    torch.manual_seed(seed)
    model = getattr(torchvision.models, name)(weights=None, **TORCHVISION_ARGUMENTS.get(name, {}))
    return model.eval()


def module_from_file(spec):
    """'path/to/file.py:ClassName' -> an instance of ClassName() in eval mode."""
    path, _, class_name = spec.rpartition(":")
    if not path or not class_name:
        raise SystemExit(f"--module needs FILE.py:ClassName, got {spec!r}")
    module_spec = importlib.util.spec_from_file_location(
        os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, class_name)().eval()


def randomize_batchnorm(model, seed=0):
    """Give every BatchNorm layer non-trivial, well-conditioned statistics and affine params.

    Random init leaves running_mean 0, running_var 1, weight 1, bias 0, which hides mistakes in
    the BN arithmetic (and in folding it into convolutions). Means and biases are drawn small so
    that deep networks keep a sensible scale.
    """
    generator = torch.Generator().manual_seed(seed + 1000)
    for module in model.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            c = module.num_features
            with torch.no_grad():
                module.running_mean.copy_(0.1 * torch.randn(c, generator=generator))
                module.running_var.copy_(0.5 + torch.rand(c, generator=generator))
                if module.affine:
                    module.weight.copy_(0.5 + 0.5 * torch.rand(c, generator=generator))
                    module.bias.copy_(0.1 * torch.randn(c, generator=generator))
    return model


def export_state(model):
    """state_dict -> {name: float32 numpy array}, without num_batches_tracked."""
    tensors, skipped = {}, []
    for name, value in model.state_dict().items():
        if name.endswith("num_batches_tracked"):
            skipped.append(name)
            continue
        if not value.is_floating_point():
            raise SystemExit(f"state_dict entry {name} has dtype {value.dtype}; "
                             "winfer takes float32 parameters only")
        tensors[name] = value.detach().cpu().to(torch.float32).contiguous().numpy()
    return tensors, skipped


def golden_input(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def run_torch(model, x):
    with torch.no_grad():
        y = model(torch.from_numpy(x))
    return y.detach().cpu().to(torch.float32).numpy()


def yaml_input_shape(yaml_path):
    from yaml_reference import parse_only
    shape, _, _ = parse_only(yaml_path)
    return shape


def verify(yaml_path, tensors, x, expected):
    """Run the YAML with the exported tensors through yaml_reference; return max abs diff."""
    from yaml_reference import load_model
    model = load_model(yaml_path, weights=tensors)
    got = next(iter(model.run(torch.from_numpy(x)).values())).numpy()
    return float(np.max(np.abs(got - expected)))


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Export PyTorch weights to safetensors (and golden files) for winfer.",
        epilog="See the docstring at the top of this file for examples.")
    ap.add_argument("name", nargs="?", help="a torchvision zoo model name, e.g. resnet18")
    ap.add_argument("--module", help="FILE.py:ClassName of your own nn.Module")
    ap.add_argument("--yaml", help="the winfer YAML of the model (required with --module)")
    ap.add_argument("--checkpoint", help="torch.save()d state_dict to load into --module")
    ap.add_argument("-o", "--output", required=True, help="safetensors file to write")
    ap.add_argument("--golden", metavar="PREFIX", help="write PREFIX.input.npy/PREFIX.output.npy")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, help="batch of the golden input")
    ap.add_argument("--random-bn", action="store_true", help="non-trivial BatchNorm statistics")
    ap.add_argument("--verify", action="store_true", help="check the YAML with yaml_reference")
    args = ap.parse_args(argv)
    if (args.name is None) == (args.module is None):
        ap.error("give either a torchvision model name or --module FILE.py:ClassName")
    if args.module and not args.yaml:
        ap.error("--module needs --yaml (the input shape and the layer names come from it)")
    if args.checkpoint and not args.module:
        ap.error("--checkpoint goes with --module")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.module:
        torch.manual_seed(args.seed)
        model = module_from_file(args.module)
        if args.checkpoint:
            model.load_state_dict(torch.load(args.checkpoint, map_location="cpu"))
        shape = yaml_input_shape(args.yaml)
        yaml_path = args.yaml
    else:
        model = torchvision_model(args.name, args.seed)
        shape = list(ZOO_INPUT_SHAPE)
        yaml_path = args.yaml or os.path.join(ZOO_DIR, f"{args.name}.yaml")
    if args.random_bn:
        randomize_batchnorm(model, args.seed)

    tensors, skipped = export_state(model)
    write_safetensors(args.output, tensors, {"format": "pt", "producer": "winfer export_torch.py"})
    size = os.path.getsize(args.output)
    print(f"wrote {args.output}: {len(tensors)} tensors, {size / 1e6:.2f} MB")
    if skipped:
        print(f"skipped {len(skipped)} num_batches_tracked entries (BatchNorm counters, unused)")

    if args.golden or args.verify:
        if args.batch:
            shape[0] = args.batch
        x = golden_input(shape, args.seed)
        start = time.time()
        y = run_torch(model, x)
        print(f"PyTorch forward {list(x.shape)} -> {list(y.shape)} in {time.time() - start:.2f}s")
        if args.golden:
            np.save(f"{args.golden}.input.npy", x)
            np.save(f"{args.golden}.output.npy", y)
            print(f"wrote {args.golden}.input.npy and {args.golden}.output.npy")
        if args.verify:
            diff = verify(yaml_path, tensors, x, y)
            print(f"yaml_reference vs PyTorch on {yaml_path}: max abs diff {diff:.3g}")
            if diff > 1e-4 * max(1.0, float(np.max(np.abs(y)))):
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
