"""winfer.classify: the numbers of `winfer classify --json`, for files, file bytes and pixels."""

from __future__ import annotations

import numpy as np
import pytest

import winfer
from conftest import FASHION, FASHION_EXAMPLES, TINY, cli_json


def cli_top(cli, model, paths, top=5, *flags):
    report = cli_json(cli, "classify", model, *paths, "--top", str(top), "--json", "--threads", "1", *flags)
    return [[(t["label"], t["probability"], t["class"]) for t in image["top"]] for image in report["images"]]


def assert_same(got, want):
    assert len(got) == len(want)
    for g_image, w_image in zip(got, want):
        assert [(p.label, p.index) for p in g_image] == [(label, index) for label, _, index in w_image]
        for p, (_, probability, _) in zip(g_image, w_image):
            assert isinstance(p, winfer.Prediction)
            # the CLI prints %.6g
            assert float(f"{p.probability:.6g}") == probability


def test_files_equal_cli(cli):
    paths = sorted(str(p) for p in FASHION_EXAMPLES.glob("*.png"))
    want = cli_top(cli, FASHION, paths, 3)
    got = winfer.classify(winfer.Model(FASHION), paths, top=3, threads=1)
    assert_same(got, want)
    assert got[paths.index(str(FASHION_EXAMPLES / "sneaker.png"))][0].label == "Sneaker"


def test_path_bytes_and_session_agree(cli):
    paths = sorted(FASHION_EXAMPLES.glob("*.png"))[:5]
    want = winfer.classify(FASHION, paths, top=2, threads=1)
    as_bytes = winfer.classify(FASHION, [p.read_bytes() for p in paths], top=2, threads=1)
    session = winfer.Model(FASHION).session(batch=2, threads=1)  # batches of 2, the last one short
    reused = winfer.classify(session, paths, top=2)
    assert as_bytes == want and reused == want


def write_pnm(path, pixels: np.ndarray) -> None:
    """PGM (HxW) or PPM (HxWx3): formats the CLI reads, written without any imaging library."""
    magic = b"P5" if pixels.ndim == 2 else b"P6"
    path.write_bytes(magic + b"\n%d %d\n255\n" % (pixels.shape[1], pixels.shape[0]) + pixels.tobytes())


def test_pixel_arrays_equal_cli_on_the_same_pixels(cli, tmp_path):
    rng = np.random.default_rng(3)
    gray = rng.integers(0, 256, size=(40, 36), dtype=np.uint8)
    rgb = rng.integers(0, 256, size=(32, 32, 3), dtype=np.uint8)
    write_pnm(tmp_path / "gray.pgm", gray)
    write_pnm(tmp_path / "rgb.ppm", rgb)
    # tiny_net: RGB, resize 32, crop 32: both images go through resize and color conversion
    want = cli_top(cli, TINY, [tmp_path / "gray.pgm", tmp_path / "rgb.ppm"], 4)
    rgba = np.concatenate([rgb, np.full((32, 32, 1), 200, np.uint8)], axis=2)
    got = winfer.classify(TINY, [gray, rgb], top=4, threads=1)
    assert_same(got, want)
    assert winfer.classify(TINY, [gray[:, :, None], rgba], top=4, threads=1) == got


def test_preprocess_and_labels_override(cli):
    path = str(FASHION_EXAMPLES / "bag.png")
    names = [f"c{i}" for i in range(10)]
    got = winfer.classify(FASHION, [path], top=3, threads=1, preprocess="none", labels=names)
    want = cli_top(cli, FASHION, [path], 3, "--preprocess", "none")
    assert [(p.index, float(f"{p.probability:.6g}")) for p in got[0]] == [(i, pr) for _, pr, i in want[0]]
    assert [p.label for p in got[0]] == [f"c{p.index}" for p in got[0]]


def test_empty_list_and_top():
    assert winfer.classify(TINY, [], top=3) == []
    with pytest.raises(winfer.InvalidArgumentError, match="top must be >= 1"):
        winfer.classify(TINY, [np.zeros((4, 4), np.uint8)], top=0)
