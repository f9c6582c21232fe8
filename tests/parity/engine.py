"""The engine's side of the parity tests: which algorithms it has, model copies, single runs."""

import os
import re
import subprocess
import time
from dataclasses import dataclass

import numpy as np

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# Any model with inline weights will do to ask the engine for its algorithms.
PROBE_MODEL = os.path.join(REPO, "models", "examples", "tiny_inline.yaml")


class EngineError(RuntimeError):
    """The engine failed to run, or answered in a way these tests do not understand."""


def discover_algorithms(winfer):
    """The user-selectable convolution algorithms, as the engine itself lists them.

    Asking for an algorithm that does not exist makes `winfer run` fail with
    "unknown convolution algorithm '?' (known: direct, im2col)". Reading the list from there
    means a newly registered algorithm is tested without touching these tests or the build.
    """
    result = subprocess.run([winfer, "run", PROBE_MODEL, "--conv", "?", "--repeat", "0",
                             "--top", "0"], capture_output=True, text=True)
    match = re.search(r"known: ([^)]*)\)", result.stderr)
    if result.returncode == 0 or not match:
        raise EngineError("could not read the list of convolution algorithms from "
                          f"`winfer run --conv ?` (exit {result.returncode}): {result.stderr!r}")
    names = [name.strip() for name in match.group(1).split(",") if name.strip()]
    if not names:
        raise EngineError(f"the engine lists no convolution algorithms: {result.stderr!r}")
    return names


def model_variant(yaml_path, out_dir, height=None, width=None, outputs=None):
    """A copy of a model YAML with another input H x W and/or other graph outputs.

    The engine takes the batch from the input .npy but H and W from the YAML, so another input
    size needs a copy. Only the `input:` (and `outputs:`) lines change, by text substitution, so
    the layers stay byte for byte those of the zoo file; the relative `labels:` path is made
    absolute because the copy lives in the build folder. Returns the original path when nothing
    changes.
    """
    if height is None and outputs is None:
        return yaml_path
    with open(yaml_path) as f:
        text = f.read()
    suffix = []
    if height is not None:
        text, count = re.subn(r"^(input:.*shape: \[\s*\d+\s*,\s*\d+\s*,)\s*\d+\s*,\s*\d+\s*\]",
                              rf"\g<1> {height}, {width}]", text, count=1, flags=re.M)
        if count != 1:
            raise EngineError(f"{yaml_path}: no `input: {{..., shape: [N, C, H, W]}}` line")
        suffix.append(f"{height}x{width}")
    if outputs is not None:
        line = "outputs: [" + ", ".join(f"'{name}'" for name in outputs) + "]"
        text, count = re.subn(r"^outputs:.*$", line, text, count=1, flags=re.M)
        if count != 1:
            raise EngineError(f"{yaml_path}: no `outputs:` line to replace")
        suffix.append("out-" + re.sub(r"[^A-Za-z0-9_.-]", "_", "+".join(outputs)))
    folder = os.path.dirname(os.path.abspath(yaml_path))
    text = re.sub(r"^labels:\s*(\S+)\s*$",
                  lambda m: "labels: " + os.path.normpath(os.path.join(folder, m.group(1))),
                  text, count=1, flags=re.M)
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.splitext(os.path.basename(yaml_path))[0]
    path = os.path.join(out_dir, f"{stem}.{'.'.join(suffix)}.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


@dataclass
class Engine:
    """How to run the engine: the `winfer` CLI, or the unfused runner of tests/parity."""
    winfer: str
    unfused_runner: str = ""   # set: run through it, with batch norm not folded
    threads: int = 1

    def command(self, yaml_path, weights, x_path, y_path, algorithm):
        if self.unfused_runner:
            if not weights:
                raise EngineError("the unfused runner needs a YAML model and its weights")
            return [self.unfused_runner, yaml_path, weights, x_path, y_path, algorithm,
                    str(self.threads)]
        # No weights: the model file carries its own (an ONNX file).
        return ([self.winfer, "run", yaml_path] + (["--weights", weights] if weights else [])
                + ["--input", x_path, "--output", y_path, "--conv", algorithm,
                   "--threads", str(self.threads), "--repeat", "0", "--top", "0"])

    def run(self, yaml_path, weights, x_path, y_path, algorithm):
        """Run once; returns (output array, wall seconds incl. loading, inference ms)."""
        if os.path.exists(y_path):
            os.remove(y_path)  # never compare a stale output of an earlier run
        start = time.time()
        result = subprocess.run(self.command(yaml_path, weights, x_path, y_path, algorithm),
                                capture_output=True, text=True)
        wall = time.time() - start
        if result.returncode != 0:
            raise EngineError(f"engine exited with {result.returncode}: "
                              f"{result.stderr.strip()[-2000:]}")
        match = re.search(r"run: (?:median )?([0-9.]+) ms", result.stderr)
        run_ms = float(match.group(1)) if match else float("nan")
        return np.load(y_path), wall, run_ms
