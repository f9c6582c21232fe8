"""Model.plan(): the dict of `winfer plan --json --no-measure`, the same keys and planned numbers."""

from __future__ import annotations

import winfer
from conftest import FASHION, TINY, ZOO_RESNET18, cli_json

# Measured by the CLI's child process only, or worded differently on purpose.
NOT_COMPARED = {"measure_note"}


def compare(cli, model_path, conv, *flags, **kwargs):
    want = cli_json(cli, "plan", model_path, "--json", "--no-measure", "--conv", conv, *flags)
    got = winfer.Model(model_path).plan(conv=conv, **kwargs)
    assert set(got) == set(want)
    for key in want:
        if key != "algorithms":
            assert got[key] == want[key], key
    assert len(got["algorithms"]) == len(want["algorithms"])
    for g, w in zip(got["algorithms"], want["algorithms"]):
        assert set(g) == set(w), g["conv"]
        for key in w:
            if key not in NOT_COMPARED:
                assert g[key] == w[key], (g["conv"], key)
    return got


def test_plan_equals_cli(cli):
    got = compare(cli, str(TINY), "im2win,im2col")
    assert [a["conv"] for a in got["algorithms"]] == ["im2win", "im2col"]
    assert got["algorithms"][0]["measured_peak_bytes"] is None


def test_plan_with_batch_and_unknown_algorithm(cli):
    got = compare(cli, str(FASHION), "direct,nonesuch", "--batch", "4", batch=4)
    assert got["batch"] == 4 and got["input_shape"] == [4, 1, 28, 28]
    assert got["algorithms"][1]["available"] is False and "nonesuch" in got["algorithms"][1]["error"]


def test_plan_of_a_model_without_weights(cli):
    got = compare(cli, str(ZOO_RESNET18), "im2win", "--size", "64x64", input_shape=(1, 3, 64, 64))
    assert got["random_weights_by_default"] is True


def test_plan_conv_forms():
    m = winfer.Model(TINY)
    assert [a["conv"] for a in m.plan()["algorithms"]] == ["im2win", "im2col"]
    assert [a["conv"] for a in m.plan(conv=["direct"])["algorithms"]] == ["direct"]
    assert [a["conv"] for a in m.plan(conv="all")["algorithms"]] == winfer.conv_algorithms()
