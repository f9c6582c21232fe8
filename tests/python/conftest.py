"""Shared fixtures of the winfer Python tests (scripts/python_test.sh runs them).

The tests compare the package with the `winfer` CLI: the one the package installed beside the
interpreter (the same build), else $WINFER_CLI, else build/bin/winfer. They write only into
pytest's tmp_path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
TINY = MODELS / "examples" / "tiny_net.yaml"
FASHION = MODELS / "fashion" / "fashion_resnet.yaml"
ZOO_RESNET18 = MODELS / "zoo" / "resnet18.yaml"
FASHION_EXAMPLES = MODELS / "fashion" / "examples"


def _find_cli() -> str:
    beside = Path(sys.executable).parent / "winfer"
    for candidate in (os.environ.get("WINFER_CLI"), str(beside), str(ROOT / "build" / "bin" / "winfer")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("winfer")
    if found:
        return found
    pytest.skip("no winfer CLI (the package installs one beside python; or set WINFER_CLI)")


@pytest.fixture(scope="session")
def cli() -> str:
    return _find_cli()


def run_cli(cli: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Runs the CLI; its stdout as text. Fails the test with its stderr when it fails."""
    done = subprocess.run([cli, *map(str, args)], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise AssertionError(f"winfer {' '.join(map(str, args))} failed ({done.returncode}):\n{done.stderr}")
    return done


def cli_json(cli: str, *args: str) -> dict:
    return json.loads(run_cli(cli, *args).stdout)


def random_input(shape, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, size=shape).astype(np.float32)
