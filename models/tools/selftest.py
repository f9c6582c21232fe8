#!/usr/bin/python3
"""Quick self-test of the model tooling (a few seconds on 2 cores):

  * the zoo YAML files are up to date (gen_zoo.py --check);
  * safetensors_io round-trips tensors;
  * yaml_reference.py reproduces the committed golden outputs of models/examples;
  * the format checks reject a few broken models;
  * the smallest zoo models match torchvision (check_zoo.py; run it without arguments for all).

Usage: /usr/bin/python3 models/tools/selftest.py
"""

import os
import sys
import tempfile

import numpy as np
import torch

TOOLS = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.normpath(os.path.join(TOOLS, "..", "examples"))
sys.path.insert(0, TOOLS)
import check_zoo  # noqa: E402
import gen_zoo  # noqa: E402
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402
from yaml_reference import ModelError, load_model  # noqa: E402


def test_safetensors_round_trip():
    tensors = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.ones([1], np.float32)}
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "t.safetensors")
        write_safetensors(path, tensors, {"k": "v"})
        back = read_safetensors(path)
        with open(path, "rb") as f:
            header_len = int.from_bytes(f.read(8), "little")
    assert (8 + header_len) % 8 == 0
    assert set(back) == set(tensors)
    assert all(np.array_equal(back[k], tensors[k]) for k in tensors)


def test_examples_match_golden():
    for name in ("tiny_net", "tiny_inline"):
        model = load_model(os.path.join(EXAMPLES, f"{name}.yaml"))
        x = torch.from_numpy(np.load(os.path.join(EXAMPLES, f"{name}.input.npy")))
        golden = np.load(os.path.join(EXAMPLES, f"{name}.output.npy"))
        got = model.run(x)[model.outputs[0]].numpy()
        assert np.max(np.abs(got - golden)) < 1e-5, name


def test_rejects_broken_models():
    base = "format: winfer/1\ninput: {shape: [1, 4, 8, 8]}\nlayers:\n"
    broken = [
        "  - {name: c, op: conv2d, in_channels: 4, out_channels: 4, kernel_size: 3, foo: 1}\n",
        "  - {name: s, op: split, chunks: 2}\n  - {name: r, op: relu}\n",
        "  - {name: a, op: add, inputs: [input, nope]}\n",
        "  - {name: r, op: relu}\n  - {name: r, op: relu}\n",
        "  - {name: c, op: conv2d, in_channels: 4, out_channels: 2, kernel_size: 1}\n"
        "tensors:\n  c.weight: {shape: [2, 4], data: [1, 2, 3, 4, 5, 6, 7, 8]}\n",
    ]
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "m.yaml")
        for text in broken:
            with open(path, "w") as f:
                f.write(base + text)
            try:
                load_model(path)
            except ModelError:
                continue
            raise AssertionError(f"accepted a broken model:\n{text}")


def main():
    assert gen_zoo.main(["--check"]) == 0, "zoo files are out of date"
    test_safetensors_round_trip()
    test_examples_match_golden()
    test_rejects_broken_models()
    assert check_zoo.main(["resnet18", "shufflenet_v2_x0_5"]) == 0
    print("selftest: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
