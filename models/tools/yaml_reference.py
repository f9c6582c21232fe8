#!/usr/bin/python3
"""Reference interpreter of the winfer model format (winfer/1) in PyTorch.

It is independent of the C++ engine and of torchvision: it reads a model YAML, checks it against
the format (docs/MODEL_FORMAT.md), loads the parameters from a safetensors file or from the
inline `tensors:` block, and runs the layers one by one with torch.nn.functional in float32 NCHW.
It is the executable definition of what each op means; the tests compare the engine against it
(through golden files) and check_zoo.py compares it against torchvision.

Usage:
    yaml_reference.py MODEL.yaml [--weights W.safetensors] [--input X.npy | --batch N --seed S]
                      [--output OUT.npy] [--compare GOLDEN.npy] [--params]

As a library:
    model = load_model("models/zoo/resnet18.yaml", weights=state_dict_or_path)
    outputs = model.run(torch_tensor)          # dict: output name -> tensor
"""

import argparse
import os
import sys
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import read_safetensors  # noqa: E402

FORMAT = "winfer/1"
TOP_LEVEL_KEYS = {"format", "name", "description", "input", "weights", "labels", "preprocess",
                  "outputs", "tensors", "layers"}
PREPROCESS_KEYS = {"resize", "crop", "mean", "std", "channel_order"}
LAYER_KEYS = {"name", "op", "input", "inputs", "params"}
REQUIRED = object()  # marks an attribute without a default


class ModelError(ValueError):
    """The YAML does not follow the format, or does not fit its weights or input."""


# ---------------------------------------------------------------------------------------------
# Attribute helpers


def pair(value, what):
    """int or [a, b] -> (a, b)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return tuple(value)
    raise ModelError(f"{what}: expected an int or [h, w], got {value!r}")


def conv_padding(value, what):
    """int, [ph, pw] or [top, left, bottom, right] -> (top, left, bottom, right)."""
    if isinstance(value, list) and len(value) == 4 and all(isinstance(v, int) for v in value):
        return tuple(value)
    ph, pw = pair(value, what)
    return (ph, pw, ph, pw)


def as_bool(value, what):
    if not isinstance(value, bool):
        raise ModelError(f"{what}: expected true or false, got {value!r}")
    return value


def as_int(value, what, minimum=None):
    if not isinstance(value, int) or isinstance(value, bool):
        raise ModelError(f"{what}: expected an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ModelError(f"{what}: must be >= {minimum}, got {value}")
    return value


def as_float(value, what):
    # PyYAML (YAML 1.1) reads "1e-5" as a string; accept it like the C++ loader does.
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ModelError(f"{what}: expected a number, got {value!r}") from None


# ---------------------------------------------------------------------------------------------
# Ops: attributes with defaults, parameter shapes, and the computation


@dataclass
class Op:
    attributes: dict                       # attribute -> default (REQUIRED if none)
    run: callable                          # (layer, inputs, params) -> tensor or list
    params: callable = lambda a: {}        # attributes -> {param: shape}
    multi_input: bool = False
    check: callable = lambda a, what: None  # validates attribute values


def conv_params(a):
    kh, kw = pair(a["kernel_size"], "kernel_size")
    shapes = {"weight": [a["out_channels"], a["in_channels"] // a["groups"], kh, kw]}
    if a["bias"]:
        shapes["bias"] = [a["out_channels"]]
    return shapes


def conv_check(a, what):
    cin = as_int(a["in_channels"], f"{what}.in_channels", 1)
    cout = as_int(a["out_channels"], f"{what}.out_channels", 1)
    groups = as_int(a["groups"], f"{what}.groups", 1)
    if cin % groups or cout % groups:
        raise ModelError(f"{what}: in_channels and out_channels must be multiples of groups")
    pair(a["kernel_size"], f"{what}.kernel_size")
    pair(a["stride"], f"{what}.stride")
    pair(a["dilation"], f"{what}.dilation")
    conv_padding(a["padding"], f"{what}.padding")
    as_bool(a["bias"], f"{what}.bias")


def conv_run(layer, xs, p):
    a = layer.attrs
    x = expect_channels(layer, xs[0], a["in_channels"])
    top, left, bottom, right = conv_padding(a["padding"], layer.name)
    if (top, left) == (bottom, right):
        padding = (top, left)
    else:
        x = F.pad(x, (left, right, top, bottom))
        padding = 0
    return F.conv2d(x, p["weight"], p.get("bias"), stride=pair(a["stride"], "stride"),
                    padding=padding, dilation=pair(a["dilation"], "dilation"),
                    groups=a["groups"])


def batchnorm_run(layer, xs, p):
    x = expect_channels(layer, xs[0], layer.attrs["num_features"])
    return F.batch_norm(x, p["running_mean"], p["running_var"], p["weight"], p["bias"],
                        training=False, eps=as_float(layer.attrs["eps"], "eps"))


def batchnorm_params(a):
    c = a["num_features"]
    return {"weight": [c], "bias": [c], "running_mean": [c], "running_var": [c]}


def linear_params(a):
    shapes = {"weight": [a["out_features"], a["in_features"]]}
    if a["bias"]:
        shapes["bias"] = [a["out_features"]]
    return shapes


def linear_run(layer, xs, p):
    x = xs[0]
    if x.dim() != 2 or x.shape[1] != layer.attrs["in_features"]:
        raise ModelError(f"layer {layer.name}: expects input [N, {layer.attrs['in_features']}], "
                         f"got {list(x.shape)}")
    return F.linear(x, p["weight"], p.get("bias"))


def maxpool_run(layer, xs, p):
    a = layer.attrs
    stride = a["kernel_size"] if a["stride"] is None else a["stride"]
    return F.max_pool2d(expect_4d(layer, xs[0]), pair(a["kernel_size"], "kernel_size"),
                        pair(stride, "stride"), pair(a["padding"], "padding"),
                        pair(a["dilation"], "dilation"), ceil_mode=a["ceil_mode"])


def avgpool_run(layer, xs, p):
    a = layer.attrs
    stride = a["kernel_size"] if a["stride"] is None else a["stride"]
    return F.avg_pool2d(expect_4d(layer, xs[0]), pair(a["kernel_size"], "kernel_size"),
                        pair(stride, "stride"), pair(a["padding"], "padding"),
                        ceil_mode=a["ceil_mode"], count_include_pad=a["count_include_pad"])


def pool_check(a, what):
    pair(a["kernel_size"], f"{what}.kernel_size")
    if a["stride"] is not None:
        pair(a["stride"], f"{what}.stride")
    pair(a["padding"], f"{what}.padding")
    for key in ("ceil_mode", "count_include_pad"):
        if key in a:
            as_bool(a[key], f"{what}.{key}")
    if "dilation" in a:
        pair(a["dilation"], f"{what}.dilation")


def adaptive_avgpool_run(layer, xs, p):
    return F.adaptive_avg_pool2d(expect_4d(layer, xs[0]),
                                 pair(layer.attrs["output_size"], "output_size"))


def add_run(layer, xs, p):
    if len(xs) != 2:
        raise ModelError(f"layer {layer.name}: add takes exactly 2 inputs")
    if xs[0].shape != xs[1].shape:
        raise ModelError(f"layer {layer.name}: add of shapes {list(xs[0].shape)} and "
                         f"{list(xs[1].shape)}")
    return xs[0] + xs[1]


def concat_run(layer, xs, p):
    if layer.attrs["dim"] != 1:
        raise ModelError(f"layer {layer.name}: concat supports dim 1 (channels) only")
    rest = {tuple(x.shape[:1]) + tuple(x.shape[2:]) for x in xs}
    if len(rest) != 1:
        raise ModelError(f"layer {layer.name}: concat inputs differ outside the channel dim")
    return torch.cat(xs, dim=1)


def split_check(a, what):
    if a["dim"] != 1:
        raise ModelError(f"{what}: split supports dim 1 (channels) only")
    if (a["chunks"] is None) == (a["sizes"] is None):
        raise ModelError(f"{what}: split needs exactly one of chunks or sizes")
    if a["chunks"] is not None:
        as_int(a["chunks"], f"{what}.chunks", 1)
    elif not (isinstance(a["sizes"], list) and a["sizes"]
              and all(isinstance(s, int) and s >= 1 for s in a["sizes"])):
        raise ModelError(f"{what}: sizes must be a list of positive integers")


def split_run(layer, xs, p):
    a = layer.attrs
    x = expect_4d(layer, xs[0])
    channels = x.shape[1]
    if a["chunks"] is not None:
        # torch.chunk: pieces of ceil(C / chunks), the last one what is left; a graph has a
        # fixed number of outputs, so fewer pieces than asked is an error.
        piece = -(-channels // a["chunks"])
        sizes = [min(piece, channels - start) for start in range(0, channels, piece)]
        if len(sizes) != a["chunks"]:
            raise ModelError(f"layer {layer.name}: chunks = {a['chunks']} of {channels} channels "
                             f"gives {len(sizes)} pieces {sizes}; use sizes instead")
    else:
        sizes = a["sizes"]
        if sum(sizes) != channels:
            raise ModelError(f"layer {layer.name}: sizes {sizes} do not sum to {channels}")
    return list(torch.split(x, sizes, dim=1))


def channel_shuffle_run(layer, xs, p):
    x = expect_4d(layer, xs[0])
    n, c, h, w = x.shape
    g = layer.attrs["groups"]
    if c % g:
        raise ModelError(f"layer {layer.name}: {c} channels not divisible by groups {g}")
    # channel k*g + j of the output is channel j*(c/g) + k of the input
    return x.reshape(n, g, c // g, h, w).transpose(1, 2).reshape(n, c, h, w)


def mul_run(layer, xs, p):
    """a * b, with b of a's shape or [N, C, 1, 1] for a [N, C, H, W] (squeeze-and-excitation)."""
    if len(xs) != 2:
        raise ModelError(f"layer {layer.name}: mul takes exactly 2 inputs")
    a, b = xs
    channel_scale = (a.dim() == 4 and b.dim() == 4 and b.shape[0] == a.shape[0]
                     and b.shape[1] == a.shape[1] and b.shape[2:] == (1, 1))
    if a.shape != b.shape and not channel_scale:
        raise ModelError(f"layer {layer.name}: mul of shapes {list(a.shape)} and "
                         f"{list(b.shape)}: the second must have the first's shape or be "
                         "[N, C, 1, 1]")
    return a * b


def flatten_run(layer, xs, p):
    return torch.flatten(xs[0], start_dim=layer.attrs["start_dim"])


def softmax_run(layer, xs, p):
    return torch.softmax(xs[0], dim=layer.attrs["dim"])


def dropout_check(a, what):
    if not 0.0 <= as_float(a["p"], f"{what}.p") < 1.0:
        raise ModelError(f"{what}: dropout p must be in [0, 1)")


def identity_run(layer, xs, p):
    return xs[0]


def int_attrs_check(*names):
    def check(a, what):
        for n in names:
            as_int(a[n], f"{what}.{n}", 1 if n not in ("dim", "start_dim") else None)
    return check


def combine_checks(*checks):
    def check(a, what):
        for c in checks:
            c(a, what)
    return check


OPS = {
    "conv2d": Op({"in_channels": REQUIRED, "out_channels": REQUIRED, "kernel_size": REQUIRED,
                  "stride": 1, "padding": 0, "dilation": 1, "groups": 1, "bias": True},
                 conv_run, conv_params, check=conv_check),
    "batchnorm2d": Op({"num_features": REQUIRED, "eps": 1e-5}, batchnorm_run, batchnorm_params,
                      check=combine_checks(int_attrs_check("num_features"),
                                           lambda a, w: as_float(a["eps"], f"{w}.eps"))),
    "linear": Op({"in_features": REQUIRED, "out_features": REQUIRED, "bias": True},
                 linear_run, linear_params,
                 check=combine_checks(int_attrs_check("in_features", "out_features"),
                                      lambda a, w: as_bool(a["bias"], f"{w}.bias"))),
    "relu": Op({}, lambda layer, xs, p: F.relu(xs[0])),
    "relu6": Op({}, lambda layer, xs, p: F.relu6(xs[0])),
    "sigmoid": Op({}, lambda layer, xs, p: torch.sigmoid(xs[0])),
    "hardsigmoid": Op({}, lambda layer, xs, p: F.hardsigmoid(xs[0])),
    "hardswish": Op({}, lambda layer, xs, p: F.hardswish(xs[0])),
    "silu": Op({}, lambda layer, xs, p: F.silu(xs[0])),
    "identity": Op({}, identity_run),
    "dropout": Op({"p": 0.5}, identity_run, check=dropout_check),
    "maxpool2d": Op({"kernel_size": REQUIRED, "stride": None, "padding": 0, "dilation": 1,
                     "ceil_mode": False}, maxpool_run, check=pool_check),
    "avgpool2d": Op({"kernel_size": REQUIRED, "stride": None, "padding": 0, "ceil_mode": False,
                     "count_include_pad": True}, avgpool_run, check=pool_check),
    "adaptive_avgpool2d": Op({"output_size": REQUIRED}, adaptive_avgpool_run,
                             check=lambda a, w: pair(a["output_size"], f"{w}.output_size")),
    "add": Op({}, add_run, multi_input=True),
    "mul": Op({}, mul_run, multi_input=True),
    "concat": Op({"dim": 1}, concat_run, multi_input=True),
    "split": Op({"dim": 1, "chunks": None, "sizes": None}, split_run, check=split_check),
    "channel_shuffle": Op({"groups": REQUIRED}, channel_shuffle_run,
                          check=int_attrs_check("groups")),
    "flatten": Op({"start_dim": 1}, flatten_run, check=int_attrs_check("start_dim")),
    "softmax": Op({"dim": 1}, softmax_run, check=int_attrs_check("dim")),
}


def expect_4d(layer, x):
    if x.dim() != 4:
        raise ModelError(f"layer {layer.name}: expects an NCHW input, got {list(x.shape)}")
    return x


def expect_channels(layer, x, channels):
    expect_4d(layer, x)
    if x.shape[1] != channels:
        raise ModelError(f"layer {layer.name}: expects {channels} input channels, "
                         f"got {x.shape[1]}")
    return x


# ---------------------------------------------------------------------------------------------
# The model


@dataclass
class Layer:
    name: str
    op: str
    inputs: list          # tensor names
    prefix: str           # parameter prefix
    attrs: dict           # every attribute of the op, defaults filled in
    param_shapes: dict = field(default_factory=dict)   # full parameter name -> shape


@dataclass
class Model:
    doc: dict
    input_name: str
    input_shape: list
    layers: list
    outputs: list
    params: dict          # full parameter name -> torch float32 tensor

    def run(self, x, keep_all=False, dtype=torch.float32):
        """Run an NCHW tensor (any batch) through the model; returns {output: tensor}, or with
        keep_all every tensor of the graph (input, layer outputs, NAME:i of splits).
        dtype=torch.float64 computes in double precision (parameters are converted)."""
        x = torch.as_tensor(x).to(dtype)
        if list(x.shape[1:]) != self.input_shape[1:]:
            raise ModelError(f"input has shape {list(x.shape)}, the model expects "
                             f"[N, {', '.join(map(str, self.input_shape[1:]))}]")
        values = {self.input_name: x}
        with torch.no_grad():
            for layer in self.layers:
                self._run_layer(layer, values, dtype)
        return values if keep_all else {name: values[name] for name in self.outputs}

    def _run_layer(self, layer, values, dtype):
        xs = [values[name] for name in layer.inputs]
        p = {key[len(layer.prefix) + 1:]: self.params[key].to(dtype)
             for key in layer.param_shapes}
        result = OPS[layer.op].run(layer, xs, p)
        if layer.op == "split":
            for i, part in enumerate(result):
                values[f"{layer.name}:{i}"] = part
        else:
            values[layer.name] = result

    def param_shapes(self):
        """Every parameter the layers use: full name -> shape (from the layer attributes)."""
        shapes = {}
        for layer in self.layers:
            shapes.update(layer.param_shapes)
        return shapes


def parse_layer(index, entry, previous, known):
    """Validate one layer entry; `previous` is the default input, `known` the tensor names."""
    what = f"layer #{index}"
    if not isinstance(entry, dict):
        raise ModelError(f"{what}: expected a mapping")
    name = entry.get("name")
    if not isinstance(name, str) or not name or ":" in name:
        raise ModelError(f"{what}: needs a name (a string without ':')")
    what = f"layer {name}"
    op_name = entry.get("op")
    if op_name not in OPS:
        raise ModelError(f"{what}: unknown op {op_name!r}")
    op = OPS[op_name]
    inputs = parse_inputs(what, entry, op, previous)
    for tensor in inputs:
        if tensor not in known:
            raise ModelError(f"{what}: input {tensor!r} is not the graph input or the output "
                             "of an earlier layer")
    attrs = parse_attributes(what, entry, op)
    prefix = entry.get("params", name)
    if not isinstance(prefix, str) or not prefix:
        raise ModelError(f"{what}: params must be a non-empty string")
    layer = Layer(name, op_name, inputs, prefix, attrs)
    layer.param_shapes = {f"{prefix}.{k}": v for k, v in op.params(attrs).items()}
    return layer


def parse_inputs(what, entry, op, previous):
    if op.multi_input:
        if "input" in entry:
            raise ModelError(f"{what}: {entry['op']} takes `inputs: [...]`, not `input`")
        inputs = entry.get("inputs")
        if not isinstance(inputs, list) or len(inputs) < 2:
            raise ModelError(f"{what}: needs `inputs:` with at least two tensor names")
        return [str(i) for i in inputs]
    if "inputs" in entry:
        raise ModelError(f"{what}: {entry['op']} takes a single `input`, not `inputs`")
    if "input" in entry:
        return [str(entry["input"])]
    if previous is None:
        raise ModelError(f"{what}: follows a split, so it must name its input (e.g. "
                         "`input: SPLIT:0`)")
    return [previous]


def parse_attributes(what, entry, op):
    attrs = {}
    for key, value in entry.items():
        if key in LAYER_KEYS:
            continue
        if key not in op.attributes:
            raise ModelError(f"{what}: unknown attribute {key!r} for op {entry['op']}")
        attrs[key] = value
    for key, default in op.attributes.items():
        if key not in attrs:
            if default is REQUIRED:
                raise ModelError(f"{what}: missing attribute {key!r}")
            attrs[key] = default
    op.check(attrs, what)
    return attrs


def parse_model(doc):
    """Validate the YAML document (a dict) and return (input_name, input_shape, layers, outputs)."""
    if not isinstance(doc, dict):
        raise ModelError("the model file must be a YAML mapping")
    unknown = set(doc) - TOP_LEVEL_KEYS
    if unknown:
        raise ModelError(f"unknown top-level keys: {sorted(unknown)}")
    if doc.get("format") != FORMAT:
        raise ModelError(f"format must be {FORMAT!r}, got {doc.get('format')!r}")
    input_name, input_shape = parse_input(doc.get("input"))
    parse_preprocess(doc.get("preprocess"))
    layers, produced = parse_layers(doc.get("layers"), input_name)
    outputs = doc.get("outputs")
    if outputs is None:
        last = layers[-1]
        if last.op == "split":
            raise ModelError("the last layer is a split: list the outputs under `outputs:`")
        outputs = [last.name]
    if not isinstance(outputs, list) or not outputs:
        raise ModelError("outputs must be a non-empty list of tensor names")
    for name in outputs:
        if name not in produced:
            raise ModelError(f"output {name!r} is not produced by any layer")
    return input_name, input_shape, layers, [str(o) for o in outputs]


def parse_input(spec):
    if not isinstance(spec, dict) or set(spec) - {"name", "shape"}:
        raise ModelError("input must be {name: NAME, shape: [N, C, H, W]}")
    shape = spec.get("shape")
    if not (isinstance(shape, list) and len(shape) == 4
            and all(isinstance(d, int) and d >= 1 for d in shape)):
        raise ModelError("input.shape must be [N, C, H, W] with positive integers")
    name = spec.get("name", "input")
    if not isinstance(name, str) or not name or ":" in name:
        raise ModelError("input.name must be a non-empty string without ':'")
    return name, shape


def parse_preprocess(spec):
    if spec is None:
        return
    if not isinstance(spec, dict) or set(spec) - PREPROCESS_KEYS:
        raise ModelError(f"preprocess may only have the keys {sorted(PREPROCESS_KEYS)}")
    if spec.get("channel_order", "RGB") not in ("RGB", "BGR", "GRAY"):
        raise ModelError("preprocess.channel_order must be RGB, BGR or GRAY")


def parse_layers(entries, input_name):
    if not isinstance(entries, list) or not entries:
        raise ModelError("layers must be a non-empty list")
    known = {input_name}
    produced = set()
    layers = []
    previous = input_name
    for index, entry in enumerate(entries):
        layer = parse_layer(index, entry, previous, known)
        if layer.name in known:
            raise ModelError(f"layer {layer.name}: name is not unique")
        outputs = split_outputs(layer) if layer.op == "split" else [layer.name]
        known.update(outputs)
        produced.update(outputs)
        layers.append(layer)
        previous = None if layer.op == "split" else layer.name
    return layers, produced


def split_outputs(layer):
    count = layer.attrs["chunks"] or len(layer.attrs["sizes"])
    return [f"{layer.name}:{i}" for i in range(count)]


# ---------------------------------------------------------------------------------------------
# Parameters


def inline_tensors(doc):
    """The `tensors:` block as {name: float32 array}."""
    block = doc.get("tensors") or {}
    if not isinstance(block, dict):
        raise ModelError("tensors must be a mapping name -> {shape, data}")
    tensors = {}
    for name, spec in block.items():
        if not isinstance(spec, dict) or set(spec) != {"shape", "data"}:
            raise ModelError(f"inline tensor {name!r}: needs exactly `shape` and `data`")
        array = np.asarray(spec["data"], dtype=np.float32)
        count = int(np.prod(spec["shape"], dtype=np.int64))
        if array.ndim != 1 or array.size != count:
            raise ModelError(f"inline tensor {name!r}: {array.size} numbers for shape "
                             f"{spec['shape']}")
        tensors[str(name)] = array.reshape(spec["shape"])
    return tensors


def gather_params(layers, sources):
    """Pick the parameters the layers use out of `sources` (dict name -> array) and check them."""
    params = {}
    for layer in layers:
        for key, shape in layer.param_shapes.items():
            if key not in sources:
                raise ModelError(f"layer {layer.name}: parameter {key!r} is missing")
            value = sources[key]
            value = value.detach().cpu() if isinstance(value, torch.Tensor) else value
            if value.dtype not in (np.float32, torch.float32):
                raise ModelError(f"parameter {key!r} has dtype {value.dtype}, needs float32")
            if list(value.shape) != list(shape):
                raise ModelError(f"parameter {key!r} has shape {list(value.shape)}, "
                                 f"layer {layer.name} needs {shape}")
            params[key] = torch.as_tensor(np.asarray(value), dtype=torch.float32)
    return params


def load_model(path, weights=None):
    """Load a model YAML. `weights` overrides the YAML's `weights:`: a safetensors path, or a
    dict name -> tensor/array (e.g. a PyTorch state_dict)."""
    with open(path) as f:
        doc = yaml.safe_load(f)
    input_name, input_shape, layers, outputs = parse_model(doc)
    sources = inline_tensors(doc)
    if weights is None and doc.get("weights"):
        weights = os.path.join(os.path.dirname(os.path.abspath(path)), doc["weights"])
    if isinstance(weights, str):
        weights = read_safetensors(weights)
    for name, value in (weights or {}).items():
        if name in sources:
            raise ModelError(f"tensor {name!r} is both inline and in the weights file")
        sources[name] = value
    return Model(doc, input_name, input_shape, layers, outputs, gather_params(layers, sources))


def parse_only(path):
    """Validate a YAML without weights; returns (input_shape, layers, outputs)."""
    with open(path) as f:
        doc = yaml.safe_load(f)
    _, input_shape, layers, outputs = parse_model(doc)
    return input_shape, layers, outputs


# ---------------------------------------------------------------------------------------------
# Command line


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="model YAML")
    ap.add_argument("--weights", help="safetensors file (default: the YAML's weights:)")
    ap.add_argument("--input", help=".npy input (float32 NCHW); default: seeded random")
    ap.add_argument("--batch", type=int, help="batch of the random input (default: YAML's N)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output", help="write the first output to this .npy file")
    ap.add_argument("--compare", help="golden .npy to compare the first output with")
    ap.add_argument("--params", action="store_true", help="list the parameters and exit")
    args = ap.parse_args(argv)

    if args.params:
        _, layers, _ = parse_only(args.model)
        for layer in layers:
            for key, shape in layer.param_shapes.items():
                print(key, shape)
        return 0
    model = load_model(args.model, args.weights)
    if args.input:
        x = np.load(args.input).astype(np.float32)
    else:
        shape = [args.batch or model.input_shape[0]] + model.input_shape[1:]
        x = np.random.default_rng(args.seed).standard_normal(shape, dtype=np.float32)
    outputs = model.run(torch.from_numpy(x))
    first = next(iter(outputs.values())).numpy()
    for name, value in outputs.items():
        print(f"{name}: shape {list(value.shape)}, max |value| {value.abs().max().item():.6g}")
    if args.output:
        np.save(args.output, first)
    if args.compare:
        golden = np.load(args.compare)
        diff = float(np.max(np.abs(golden - first)))
        print(f"max abs diff vs {args.compare}: {diff:.3g}")
        return 0 if diff <= 1e-4 * max(1.0, float(np.max(np.abs(golden)))) else 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ModelError as error:
        sys.exit(f"yaml_reference: {error}")
