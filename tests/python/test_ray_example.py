"""apps/examples/ray_classify.py on a local Ray with 2 workers: its predictions equal `winfer
classify`'s on ~200 Fashion-MNIST test images written as PNG files at test time.

Ray (`ray[data]`, with Pillow for its image reader) is a test requirement only
(tests/python/requirements-ray.txt): without it these tests skip, unless WINFER_REQUIRE_RAY=1
(scripts/python_test.sh sets it, so CI cannot skip them).
"""

from __future__ import annotations

import csv
import gzip
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from conftest import FASHION, ROOT, cli_json

FASHION_TEST_IMAGES = Path("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz")
EXAMPLE = ROOT / "apps" / "examples" / "ray_classify.py"
IMAGES = 200
BATCH = 16


def _need(module: str):
    try:
        return importlib.import_module(module)
    except ImportError:
        if os.environ.get("WINFER_REQUIRE_RAY") == "1":
            raise
        pytest.skip(f"{module} is not installed (pip install -r tests/python/requirements-ray.txt)")


@pytest.fixture(scope="module")
def fashion_pngs(tmp_path_factory) -> Path:
    """The first IMAGES Fashion-MNIST test images as 28x28 grayscale PNG files."""
    _need("ray")
    image_module = _need("PIL.Image")
    if not FASHION_TEST_IMAGES.exists():
        pytest.skip(f"{FASHION_TEST_IMAGES} is missing (apt-get install dataset-fashion-mnist)")
    raw = gzip.decompress(FASHION_TEST_IMAGES.read_bytes())
    pixels = np.frombuffer(raw, np.uint8, offset=16).reshape(-1, 28, 28)
    folder = tmp_path_factory.mktemp("fashion_png")
    for i in range(IMAGES):
        image_module.fromarray(pixels[i], mode="L").save(folder / f"{i:05d}.png")
    return folder


@pytest.fixture(scope="module")
def cli_top1(cli, fashion_pngs) -> dict:
    # The CLI's batch is the example's: a different batch size may round differently (e.g. the
    # linear layer's GEMM blocks M differently), an image's place in the batch does not.
    report = cli_json(cli, "classify", FASHION, fashion_pngs, "--top", "1", "--json", "--threads", "1",
                      "--batch", str(BATCH))
    return {image["path"]: (image["top"][0]["label"], image["top"][0]["class"], image["top"][0]["probability"])
            for image in report["images"]}


def run_example(images: Path, output: Path, *flags: str) -> str:
    # Ray's session folder: a short path of our own (its Unix sockets live there, and a socket
    # path may not exceed 107 bytes, which pytest's tmp_path can), removed afterwards.
    ray_dir = tempfile.mkdtemp(prefix="winfer-ray-")
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")  # no reports sent anywhere
    env.pop("RAY_ADDRESS", None)  # always the local Ray
    try:
        done = subprocess.run(
            [sys.executable, str(EXAMPLE), str(FASHION), str(images), "-o", str(output), "--workers", "2",
             "--threads", "1", "--batch", str(BATCH), "--ray-temp-dir", ray_dir, *flags],
            capture_output=True, text=True, env=env, timeout=600)
    finally:
        shutil.rmtree(ray_dir, ignore_errors=True)
    assert done.returncode == 0, f"ray_classify.py failed ({done.returncode}):\n{done.stdout}\n{done.stderr[-4000:]}"
    return done.stdout


def assert_equal_to_cli(rows: list, cli_top1: dict):
    assert len(rows) == IMAGES
    got = {row["path"]: row for row in rows}
    assert sorted(got) == sorted(cli_top1)
    for path, (label, index, probability) in cli_top1.items():
        row = got[path]
        assert (row["label"], int(row["index"])) == (label, index), path
        assert float(f"{float(row['probability']):.6g}") == probability, path  # the CLI prints %.6g


def test_csv_with_ray_decoding_equals_cli(fashion_pngs, cli_top1, tmp_path):
    output = tmp_path / "out"
    stdout = run_example(fashion_pngs, output)
    assert f"{IMAGES} images in" in stdout
    rows = []
    for part in sorted(output.glob("*.csv")):
        with open(part, newline="") as f:
            rows += list(csv.DictReader(f))
    assert_equal_to_cli(rows, cli_top1)


def test_parquet_with_winfer_decoding_equals_cli(fashion_pngs, cli_top1, tmp_path):
    pq = _need("pyarrow.parquet")
    output = tmp_path / "out"
    run_example(fashion_pngs, output, "--format", "parquet", "--decode", "winfer")
    rows = pq.read_table(output).to_pylist()
    assert_equal_to_cli(rows, cli_top1)
