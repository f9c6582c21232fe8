"""Session.run / run_all: the CLI's outputs bit for bit, out=, copy=, run_all."""

from __future__ import annotations

import numpy as np
import pytest

import winfer
from conftest import FASHION, FASHION_EXAMPLES, MODELS, ROOT, TINY, ZOO_RESNET18, random_input, run_cli


def cli_output(cli, tmp_path, model, x, *flags):
    """`winfer run MODEL --input x.npy --output y.npy FLAGS` -> y."""
    np.save(tmp_path / "x.npy", x)
    run_cli(cli, "run", model, "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npy", "--top", "0", *flags)
    return np.load(tmp_path / "y.npy")


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_zoo_model_equals_cli_bitwise(cli, tmp_path):
    x = random_input((2, 3, 96, 128), seed=1)
    want = cli_output(cli, tmp_path, ZOO_RESNET18, x, "--random-weights", "7", "--threads", "1")
    m = winfer.Model(ZOO_RESNET18, random_weights=7)
    s = m.session(input_shape=x.shape, threads=1)
    got = s.run(x)
    assert got.shape == (2, 1000)
    assert same_bits(got, want)


def test_images_per_run_equals_cli_bitwise_and_the_whole_batch(cli, tmp_path):
    x = random_input((3, 3, 64, 80), seed=4)
    want = cli_output(cli, tmp_path, ZOO_RESNET18, x, "--random-weights", "7", "--threads", "2",
                      "--images-per-run", "2")
    m = winfer.Model(ZOO_RESNET18, random_weights=7)
    got = m.session(input_shape=x.shape, threads=2, images_per_run=2).run(x)
    assert same_bits(got, want)
    whole = m.session(input_shape=x.shape, threads=2, images_per_run=0).run(x)
    assert np.max(np.abs(got - whole)) <= 1e-5 * np.max(np.abs(whole))
    with pytest.raises(winfer.InvalidArgumentError, match="images_per_run must be >= 1"):
        m.session(input_shape=x.shape, images_per_run=-1)


def test_images_per_run_default_and_plan():
    m = winfer.Model(MODELS / "zoo" / "mobilenet_v2.yaml", random_weights=7)
    # The default on 2 threads: batch 8 in runs of 2 side by side; 0 = the whole batch at once.
    auto = m.plan(conv="im2win", batch=8, threads=2, input_shape=(8, 3, 64, 64))["algorithms"][0]
    assert (auto["images_per_run"], auto["lanes"]) == (2, 2)
    whole = m.plan(conv="im2win", threads=2, input_shape=(8, 3, 64, 64), images_per_run=0)["algorithms"][0]
    assert (whole["images_per_run"], whole["lanes"]) == (8, 1)
    assert whole["arena_bytes"] > auto["arena_bytes"]
    report = m.session(batch=8, threads=2, input_shape=(8, 3, 64, 64)).memory_report()
    assert (report["images_per_run"], report["lanes"], report["arena_bytes"]) == (2, 2, auto["arena_bytes"])
    one = m.plan(conv="im2win", threads=1, input_shape=(8, 3, 64, 64), images_per_run=1)["algorithms"][0]
    assert (one["images_per_run"], one["lanes"]) == (1, 1)
    with pytest.raises(winfer.InvalidArgumentError, match="images_per_run must be >= 1"):
        m.plan(images_per_run=-2)
    # ResNet-18's weights (45 MiB, read from memory by every run) outweigh its images: runs of 4.
    resnet = winfer.Model(ZOO_RESNET18, random_weights=7).plan(conv="im2win", batch=8, threads=2,
                                                               input_shape=(8, 3, 64, 64))["algorithms"][0]
    assert (resnet["images_per_run"], resnet["lanes"]) == (4, 2)


@pytest.mark.parametrize("conv", ["im2win", "im2col"])
def test_fashion_model_equals_cli_bitwise(cli, tmp_path, conv):
    x = random_input((4, 1, 28, 28), seed=2)
    want = cli_output(cli, tmp_path, FASHION, x, "--threads", "1", "--conv", conv)
    m = winfer.Model(str(FASHION))
    s = m.session(batch=4, threads=1, conv=conv)
    assert s.input_shape == (4, 1, 28, 28)
    assert same_bits(s.run(x), want)


def test_threads_default_to_affinity():
    import os

    s = winfer.Model(TINY).session()
    assert s.threads == len(os.sched_getaffinity(0)) == winfer.default_threads()


def test_out_is_written_and_returned():
    s = winfer.Model(TINY).session(threads=1)
    x = random_input(s.input_shape)
    want = s.run(x)
    out = np.full(s.output_shapes[0], np.nan, np.float32)
    view = out.reshape(-1)  # another view of the same buffer
    got = s.run(x, out=out)
    assert got is out
    assert same_bits(view.reshape(out.shape), want)


def test_copy_converts_only_when_asked():
    s = winfer.Model(TINY).session(threads=1)
    x = random_input(s.input_shape)
    want = s.run(x)
    assert same_bits(s.run(x.astype(np.float64), copy=True), want)
    assert same_bits(s.run(np.asfortranarray(x), copy=True), want)
    assert same_bits(s.run(x.tolist(), copy=True), want)


def test_unaligned_input_and_output():
    s = winfer.Model(TINY).session(threads=1)
    x = random_input(s.input_shape)
    want = s.run(x)
    n = x.size
    buffer = np.empty(n + 1, np.float32)
    unaligned = buffer[1:].reshape(x.shape)  # 4 bytes past an aligned start: C-contiguous all the same
    unaligned[...] = x
    out_buffer = np.empty(want.size + 1, np.float32)
    out = out_buffer[1:].reshape(want.shape)
    assert same_bits(s.run(unaligned, out=out), want)


def test_session_properties():
    m = winfer.Model(TINY)
    s = m.session(batch=3, conv="im2col", threads=1)
    assert s.input_shape == (3, 3, 32, 32)
    assert s.input_name == "input"
    assert s.output_names == list(m.outputs)
    assert s.output_shapes == [(3, 10)]
    assert s.device == "cpu" and s.conv == "im2col" and s.threads == 1
    report = s.memory_report()
    assert report["arena_bytes"] > 0 and report["buffers"] and report["steps"]
    s.run(random_input(s.input_shape))
    assert [t["name"] for t in s.timings()] == report["steps"]
    assert "winfer.Session" in repr(s)


MULTI_OUTPUT = """format: winfer/1
name: two_outputs
input: {name: input, shape: [1, 1, 6, 6]}
outputs: [pool, fc]
layers:
  - {name: conv, op: conv2d, in_channels: 1, out_channels: 2, kernel_size: 3}
  - {name: relu, op: relu}
  - {name: pool, op: adaptive_avgpool2d, output_size: 1}
  - {name: flatten, op: flatten}
  - {name: fc, op: linear, in_features: 2, out_features: 3}
"""


def test_run_all_multi_output(tmp_path):
    path = tmp_path / "two_outputs.yaml"
    path.write_text(MULTI_OUTPUT)
    m = winfer.Model(path, random_weights=3)
    assert list(m.outputs) == ["pool", "fc"]
    s = m.session(batch=2, threads=1)
    x = random_input(s.input_shape)
    outs = s.run_all(x)
    assert list(outs) == ["pool", "fc"]
    assert outs["pool"].shape == (2, 2, 1, 1) and outs["fc"].shape == (2, 3)
    assert same_bits(s.run(x), outs["pool"])
    # out= by name: the given array is filled, the other one new
    fc = np.empty((2, 3), np.float32)
    again = s.run_all(x, out={"fc": fc})
    assert again["fc"] is fc and same_bits(fc, outs["fc"]) and same_bits(again["pool"], outs["pool"])
    # and as a sequence
    pool = np.empty((2, 2, 1, 1), np.float32)
    third = s.run_all(x, out=[pool, fc])
    assert third["pool"] is pool and same_bits(pool, outs["pool"])


def test_onnx_model_equals_cli_bitwise(cli, tmp_path):
    path = ROOT / "tests" / "fuzz" / "corpus" / "onnx" / "tiny_net.onnx"  # a small ONNX file of the fuzz corpus
    m = winfer.Model(path)
    assert list(m.inputs.values()) == [(1, 3, 8, 8)] and m.labels == []
    x = random_input((1, 3, 8, 8), seed=4)
    want = cli_output(cli, tmp_path, path, x, "--threads", "1")
    assert same_bits(m.session(threads=1).run(x), want)


def test_quantized_model_runs_like_the_cli(cli, tmp_path):
    """A model from `winfer quantize` loads and runs in Python as any other, on the INT8 kernels."""
    out = tmp_path / "fashion_resnet.int8.yaml"
    run_cli(cli, "quantize", FASHION, "--calibrate", FASHION_EXAMPLES, "-o", out)
    x = random_input((3, 1, 28, 28), seed=4)
    want = cli_output(cli, tmp_path, out, x, "--threads", "1")
    m = winfer.Model(str(out))
    precisions = [layer["precision"] for layer in m.info()["layers"]]
    assert precisions.count("int8") >= 8 and "int8 (simulated)" not in precisions
    got = m.session(batch=3, threads=1).run(x)
    assert same_bits(got, want)
