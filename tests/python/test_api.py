"""The package itself: what Model tells, docstrings on every public name, the type stubs."""

from __future__ import annotations

import inspect
from pathlib import Path

import winfer
from conftest import FASHION, TINY


def test_model_description():
    m = winfer.Model(FASHION)
    assert m.name and m.path.endswith("fashion_resnet.yaml")
    assert m.inputs == {"input": (1, 1, 28, 28)} or list(m.inputs.values()) == [(1, 1, 28, 28)]
    assert list(m.outputs.values()) == [(1, 10)]
    assert m.labels[7] == "Sneaker" and len(m.labels) == 10
    assert m.weights.endswith("fashion_resnet.safetensors")
    assert m.preprocess["channel_order"] == "GRAY"
    info = m.info()
    assert {"name", "path", "weights", "inputs", "outputs", "layers", "params", "flops", "multiply_adds"} <= set(info)
    assert info["params"] == sum(layer["params"] for layer in info["layers"]) > 0
    assert info["flops"] == sum(layer["flops"] for layer in info["layers"]) > 0
    assert {"name", "op", "inputs", "outputs", "output_shapes", "fused", "params", "flops", "precision"} == set(
        info["layers"][0]
    )
    assert all(layer["precision"] == "" for layer in info["layers"])  # an FP32 model
    assert "winfer.Model" in repr(m)


def test_model_takes_paths_and_random_weights(tmp_path):
    a = winfer.Model(Path(TINY), random_weights=5)
    b = winfer.Model(str(TINY), random_weights=5)
    assert a.weights == b.weights == "random(seed=5)"


def test_conv_algorithms():
    names = winfer.conv_algorithms()
    assert "im2win" in names and "im2col" in names


def public_names():
    for name in winfer.__all__:
        obj = getattr(winfer, name)
        yield name, obj
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for member, value in vars(obj).items():
                if not member.startswith("_"):
                    yield f"{name}.{member}", value


def test_every_public_name_has_a_docstring():
    missing = [name for name, obj in public_names() if not (getattr(obj, "__doc__", None) or "").strip()]
    assert not missing, missing


def test_type_stubs_are_installed():
    package = Path(winfer.__file__).parent
    assert (package / "py.typed").exists()
    stub = (package / "_winfer.pyi").read_text()
    for name in ("class Model", "class Session", "def run(", "def run_all(", "def plan(", "def session("):
        assert name in stub, name
