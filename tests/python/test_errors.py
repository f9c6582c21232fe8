"""Every error the package documents (docs/EMBEDDING.md, "Python"): its class, its builtin base
and the engine's message, unchanged."""

from __future__ import annotations

import numpy as np
import pytest

import winfer
from conftest import TINY, ZOO_RESNET18, random_input


@pytest.fixture(scope="module")
def session():
    return winfer.Model(TINY).session(threads=1)


def test_hierarchy():
    pairs = {
        winfer.InvalidArgumentError: ValueError,
        winfer.NotFoundError: FileNotFoundError,
        winfer.IoError: OSError,
        winfer.ParseError: ValueError,
        winfer.ShapeError: ValueError,
        winfer.UnsupportedError: NotImplementedError,
        winfer.InternalError: RuntimeError,
        winfer.OutOfMemoryError: MemoryError,
        winfer.DeviceError: RuntimeError,
    }
    for cls, builtin in pairs.items():
        assert issubclass(cls, winfer.Error) and issubclass(cls, builtin)
        assert cls.__doc__ and cls.code


def test_missing_model_file(tmp_path):
    path = tmp_path / "missing.yaml"
    with pytest.raises(winfer.NotFoundError) as e:
        winfer.Model(path)
    assert isinstance(e.value, FileNotFoundError)
    assert str(path) in str(e.value) and e.value.code == "not found"
    assert e.value.message == str(e.value)


def test_missing_weights_file(tmp_path):
    with pytest.raises(winfer.NotFoundError, match="nothing.safetensors"):
        winfer.Model(TINY, weights=tmp_path / "nothing.safetensors")


def test_parse_error_names_file_and_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("format: winfer/1\nname: broken\ninput: {name: x, shape: [1, 3, 8, 8]\n")
    with pytest.raises(winfer.ParseError, match="broken.yaml") as e:
        winfer.Model(path)
    assert isinstance(e.value, ValueError)


def test_folder_as_model_is_refused(tmp_path):
    with pytest.raises(winfer.Error, match=str(tmp_path)):
        winfer.Model(tmp_path)


def test_wrong_dtype_is_type_error(session):
    x = random_input(session.input_shape).astype(np.float64)
    with pytest.raises(TypeError, match="float64, expected float32.*copy=True"):
        session.run(x)


def test_not_an_array_is_type_error(session):
    with pytest.raises(TypeError, match="got list"):
        session.run(random_input(session.input_shape).tolist())


def test_non_contiguous_is_value_error(session):
    shape = session.input_shape
    x = np.zeros((shape[0], shape[1], shape[2], shape[3] * 2), np.float32)[..., ::2]
    with pytest.raises(winfer.InvalidArgumentError, match="not C-contiguous.*copy=True") as e:
        session.run(x)
    assert isinstance(e.value, ValueError)
    with pytest.raises(winfer.InvalidArgumentError, match="not C-contiguous"):
        session.run(np.asfortranarray(random_input(shape)))


def test_wrong_shape_names_both(session):
    with pytest.raises(winfer.ShapeError, match=r"\(2, 3, 32, 32\), expected \(1, 3, 32, 32\)") as e:
        session.run(random_input((2, 3, 32, 32)))
    assert isinstance(e.value, ValueError)
    with pytest.raises(winfer.ShapeError):  # even with copy=True: a copy does not change the shape
        session.run(random_input((1, 3, 16, 16)), copy=True)


def test_bad_out(session):
    x = random_input(session.input_shape)
    shape = session.output_shapes[0]
    with pytest.raises(TypeError, match="out has dtype float64"):
        session.run(x, out=np.zeros(shape, np.float64))
    with pytest.raises(winfer.ShapeError, match="out has shape"):
        session.run(x, out=np.zeros((shape[0], shape[1] + 1), np.float32))
    read_only = np.zeros(shape, np.float32)
    read_only.flags.writeable = False
    with pytest.raises(winfer.InvalidArgumentError, match="read-only"):
        session.run(x, out=read_only)
    with pytest.raises(winfer.InvalidArgumentError, match="not C-contiguous"):
        session.run(x, out=np.zeros((shape[0], shape[1] * 2), np.float32)[:, ::2])


def test_bad_session_options():
    m = winfer.Model(TINY)
    with pytest.raises(winfer.InvalidArgumentError, match="threads must be >= 1"):
        m.session(threads=0)
    with pytest.raises(winfer.InvalidArgumentError, match="batch must be >= 1"):
        m.session(batch=0)
    with pytest.raises(winfer.Error, match="nonesuch"):
        m.session(conv="nonesuch")
    with pytest.raises(winfer.InvalidArgumentError, match="unknown device 'tpu'"):
        m.session(device="tpu")
    with pytest.raises(winfer.Error, match="dim 1"):
        m.session(input_shape=(1, 4, 32, 32))


def test_memory_budget_too_small():
    with pytest.raises(winfer.OutOfMemoryError) as e:
        winfer.Model(TINY).session(memory_budget=1)
    assert isinstance(e.value, MemoryError)


def test_cuda_without_device_or_build():
    # A CPU-only package (the default) or a machine without a GPU: an error naming why, never a crash.
    try:
        s = winfer.Model(TINY).session(device="cuda")
    except (winfer.DeviceError, winfer.UnsupportedError) as e:
        assert "CUDA" in str(e) or "cuda" in str(e)
    else:
        assert s.device.startswith("cuda")


def test_structure_only_model_cannot_run():
    m = winfer.Model(ZOO_RESNET18)  # names no weights: loaded as its structure
    assert m.weights == "none" and m.info()["structure_only"]
    with pytest.raises(winfer.InvalidArgumentError, match="random_weights=SEED"):
        m.session()


def test_second_run_on_a_running_session_is_refused():
    """Two threads, one session: the run that finds the session busy raises the engine's error
    (and it can only find it busy because the GIL is released while the engine runs)."""
    import threading

    s = winfer.Model(ZOO_RESNET18, random_weights=1).session(batch=1, threads=1, input_shape=(1, 3, 160, 160))
    x = random_input(s.input_shape)
    errors, done = [], threading.Event()

    def long_runs():
        try:
            for _ in range(3):
                s.run(x)
        except winfer.InvalidArgumentError as e:
            errors.append(e)
        finally:
            done.set()

    t = threading.Thread(target=long_runs)
    t.start()
    while not done.is_set() and not errors:
        try:
            s.run(x)
        except winfer.InvalidArgumentError as e:
            errors.append(e)
    t.join()
    assert errors, "the two threads never overlapped: was the GIL held during the run?"
    assert "already running on another thread" in str(errors[0])


def test_classify_errors(tmp_path):
    m = winfer.Model(TINY)
    with pytest.raises(winfer.NotFoundError, match="no_such.png"):
        winfer.classify(m, [str(tmp_path / "no_such.png")])
    junk = tmp_path / "junk.png"
    junk.write_bytes(b"not an image at all")
    with pytest.raises(winfer.Error, match="junk.png"):
        winfer.classify(m, [junk])
    with pytest.raises(TypeError, match="uint8"):
        winfer.classify(m, [np.zeros((8, 8, 3), np.float32)])
    with pytest.raises(winfer.ShapeError, match="HxW"):
        winfer.classify(m, [np.zeros((8, 8, 2), np.uint8)])
    with pytest.raises(winfer.Error, match="--preprocess nonsense"):
        winfer.classify(m, [np.zeros((8, 8, 3), np.uint8)], preprocess="nonsense")
    with pytest.raises(winfer.NotFoundError, match="labels.txt"):
        winfer.classify(m, [np.zeros((8, 8, 3), np.uint8)], labels=str(tmp_path / "labels.txt"))


def test_autotune_cache_with_auto_only(tmp_path):
    cache = tmp_path / "tune.txt"
    model = winfer.Model(TINY)
    session = model.session(conv="auto", threads=1, autotune_cache=str(cache))
    assert session.run(random_input(next(iter(model.inputs.values())))).shape[0] == 1
    text = cache.read_text()
    assert text.startswith("# winfer conv autotune cache") and "threads=1" in text
    # Another session finds every layer there: it measures nothing and adds nothing.
    model.session(conv="auto", threads=1, autotune_cache=str(cache))
    assert cache.read_text() == text
    unused = tmp_path / "unused.txt"
    with pytest.raises(winfer.InvalidArgumentError, match="autotune_cache keeps the per-layer timings of conv='auto'"):
        model.session(autotune_cache=str(unused))
    assert not unused.exists()
