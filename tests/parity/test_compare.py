#!/usr/bin/python3
"""Checks of the parity criteria themselves (compare.py) and of the model copies (engine.py).

A comparison that passes everything would make the whole parity suite worthless, so its
decisions are pinned down here on small hand-made logits. Needs numpy only (seconds).
Exit status 0 pass, 1 fail, 77 skipped (no numpy).
"""

import os
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not importable")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import MIN_INPUT_SENSITIVITY, compare_logits, input_sensitivity, top_k  # noqa: E402
from engine import REPO, model_variant  # noqa: E402

# Ten classes, max |logit| = 10, so tol = 1e-4 * 10 = 1e-3 and ties are gaps <= 2e-3.
TORCH = np.array([[10.0, 9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0]])


def logits(**changes):
    row = TORCH.copy()
    for index, value in changes.items():
        row[0, int(index[1:])] = value
    return row


def test_identical_passes_with_exact_top5():
    result = compare_logits(TORCH, TORCH)
    assert result.passed and result.top5 == "exact" and result.relative_error == 0


def test_error_just_within_and_beyond_the_bound():
    assert compare_logits(logits(c9=1.0 + 0.9e-3), TORCH).passed
    beyond = compare_logits(logits(c9=1.0 + 1.1e-3), TORCH)
    assert not beyond.passed and "relative error" in beyond.problem


def test_swap_of_near_tie_at_the_top5_boundary_is_excused():
    # torch: class 4 = 6.0 (5th), class 5 = 5.9995 (6th); the engine swaps them within tol.
    reference = TORCH.copy()
    reference[0, 5] = 5.9995
    engine = reference.copy()
    engine[0, 4], engine[0, 5] = 5.9996, 5.9999
    result = compare_logits(engine, reference)
    assert result.passed and result.top5 == "ties", result
    assert "[5] instead of [4]" in result.top5_note


def test_reordering_inside_the_top5_is_a_tie_not_exact():
    reference = TORCH.copy()
    reference[0, 1] = 9.9995
    engine = reference.copy()
    engine[0, 0], engine[0, 1] = 9.9996, 9.9999
    result = compare_logits(engine, reference)
    assert result.passed and result.top5 == "ties"


def test_real_top5_change_fails():
    engine = logits(c7=6.5)  # class 7 (torch 3.0) jumps into the top 5
    result = compare_logits(engine, TORCH)
    assert not result.passed and result.top5 == "DIFFERENT"


def test_non_finite_and_shape_mismatch_fail():
    assert not compare_logits(logits(c3=np.nan), TORCH).passed
    assert not compare_logits(logits(c3=np.inf), TORCH).passed
    assert not compare_logits(TORCH[:, :9], TORCH).passed


def test_each_image_of_a_batch_is_ranked_on_its_own():
    reference = np.vstack([TORCH, TORCH[:, ::-1]])
    assert top_k(reference[1]) == [9, 8, 7, 6, 5]
    assert compare_logits(reference, reference).passed
    wrong = reference.copy()
    wrong[1, 0] = 9.5  # only the second image's top 5 changes (and its error is large)
    result = compare_logits(wrong, reference)
    assert not result.passed and result.top5 == "DIFFERENT" and "image 1" in result.top5_note


def test_input_sensitivity_flags_logits_that_ignore_the_input():
    lively = np.vstack([TORCH, TORCH[:, ::-1]])
    assert input_sensitivity(lively) == 0.9  # |10 - 1| / 10
    dead = np.vstack([TORCH, TORCH + 1e-6])
    assert input_sensitivity(dead) < MIN_INPUT_SENSITIVITY


def test_model_variant_changes_only_input_size_and_outputs():
    zoo = os.path.join(REPO, "models", "zoo", "resnet18.yaml")
    with tempfile.TemporaryDirectory() as folder:
        path = model_variant(zoo, folder, 160, 224, outputs=["layer1.0.add"])
        with open(zoo) as f:
            original = f.read().splitlines()
        with open(path) as f:
            copy = f.read().splitlines()
    changed = [(a, b) for a, b in zip(original, copy) if a != b]
    assert len(original) == len(copy)
    assert [a.split(":")[0] for a, _ in changed] == ["input", "labels", "outputs"], changed
    assert "shape: [1, 3, 160, 224]" in changed[0][1]
    assert changed[2][1] == "outputs: ['layer1.0.add']"
    assert model_variant(zoo, "unused") == zoo


def test_onnx_runs_are_named_apart_and_run_without_weights():
    from engine import Engine
    from parity import parse_args
    common = ["--winfer", "w", "--work-dir", "d", "--model", "resnet18"]
    assert parse_args(common).name == "resnet18"
    assert parse_args(common + ["--onnx", "17"]).name == "resnet18.onnx17"
    assert parse_args(common + ["--onnx", "13", "--dynamic"]).name == "resnet18.onnx13.dynamic"
    assert parse_args(common + ["--onnx", "13", "--dynamic", "batch", "--size", "160x160"]
                      ).name == "resnet18.onnx13.dynamic-batch.160x160"
    args = parse_args(common + ["--onnx", "17", "--dynamic", "--inputs", "2x224x224,1x160x224"])
    assert args.dynamic == ("batch", "height", "width") and args.inputs[1] == (1, 160, 224)
    onnx = Engine("winfer").command("m.onnx", None, "x.npy", "y.npy", "im2col")
    assert "--weights" not in onnx and onnx[:3] == ["winfer", "run", "m.onnx"], onnx
    assert Engine("winfer").command("m.yaml", "w.st", "x", "y", "direct")[3:5] == ["--weights",
                                                                                 "w.st"]


def main():
    tests = [(name, f) for name, f in globals().items() if name.startswith("test_")]
    failures = 0
    for name, test in tests:
        try:
            test()
            print(f"ok    {name}")
        except AssertionError as error:
            failures += 1
            print(f"FAIL  {name}: {error}")
    print(f"{len(tests) - failures}/{len(tests)} passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
