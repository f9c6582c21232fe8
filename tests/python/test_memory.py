"""Zero copies, lifetimes and leaks: the engine reads the caller's buffer, writes into out=,
outputs outlive their session and model, and 1,000 runs leak no references or objects."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap

import numpy as np

import winfer
from conftest import TINY, random_input


def test_engine_reads_the_callers_buffer():
    s = winfer.Model(TINY).session(threads=1)
    x = random_input(s.input_shape)
    assert winfer._winfer._input_pointer(x) == x.__array_interface__["data"][0]
    # A view into a larger buffer: the view's own address, not a copy's
    big = np.zeros((2,) + s.input_shape[1:], np.float32)
    assert winfer._winfer._input_pointer(big[1:]) == big[1:].__array_interface__["data"][0]


def test_input_is_read_in_place():
    """What run() reads is what is in the caller's buffer at the time of the call: changing the
    buffer through another view changes the result, as it would not for a cached copy."""
    s = winfer.Model(TINY).session(threads=1)
    x = random_input(s.input_shape)
    first = s.run(x).copy()
    alias = x.reshape(-1)  # the same memory
    alias[:] = random_input(alias.shape, seed=5)
    second = s.run(x)
    assert not np.array_equal(first, second)
    assert np.array_equal(second, s.run(alias.reshape(s.input_shape).copy()))


def test_outputs_outlive_session_and_model():
    m = winfer.Model(TINY)
    s = m.session(threads=1)
    x = random_input(s.input_shape)
    y = s.run(x)
    outs = s.run_all(x)
    want = y.copy()
    del s, m
    gc.collect()
    # Memory handed back to the allocator would be reused by these allocations.
    junk = [np.full(want.shape, 7, np.float32) for _ in range(100)]
    assert np.array_equal(y, want) and np.array_equal(next(iter(outs.values())), want)
    assert y.flags.c_contiguous and y.dtype == np.float32
    del junk


def test_no_leaks_over_1000_runs():
    s = winfer.Model(TINY).session(threads=1)
    x = random_input(s.input_shape)
    out = np.empty(s.output_shapes[0], np.float32)
    for _ in range(20):  # warm-up: caches, first allocations
        s.run(x)
        s.run(x, out=out)
        s.run_all(x)
    gc.collect()
    x_refs, out_refs = sys.getrefcount(x), sys.getrefcount(out)
    objects = len(gc.get_objects())
    for _ in range(1000):
        y = s.run(x)
        s.run(x, out=out)
        s.run_all(x)
    del y
    gc.collect()
    assert sys.getrefcount(x) == x_refs
    assert sys.getrefcount(out) == out_refs
    assert len(gc.get_objects()) <= objects + 10


def peak_growth_script(body: str) -> str:
    return textwrap.dedent(
        """
        import resource, numpy as np, winfer
        def peak():
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        """
    ) + textwrap.dedent(body)


def run_script(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_large_input_adds_no_copy_to_peak_memory():
    """A 48 MiB input and out=: the second run raises the process's peak by far less than the
    input's size (a copy of it would add it all); the same run with copy=True on a float64
    array, which needs a float32 copy, does raise it by that much (the check can see a copy)."""
    code = peak_growth_script(
        """
        import sys
        m = winfer.Model(sys.argv[1] if len(sys.argv) > 1 else %r)
        s = m.session(input_shape=(4, 3, 1024, 1024), threads=1)
        x = np.ones(s.input_shape, np.float32)
        out = np.empty(s.output_shapes[0], np.float32)
        s.run(x, out=out)                       # touches the arena and everything else once
        before = peak(); s.run(x, out=out); in_place = peak() - before
        x64 = x.astype(np.float64)
        before = peak(); s.run(x64, out=out, copy=True); copied = peak() - before
        print(x.nbytes, in_place, copied)
        """
        % str(TINY)
    )
    nbytes, in_place, copied = map(int, run_script(code).split())
    assert in_place < nbytes // 8, (nbytes, in_place)
    assert copied > nbytes * 3 // 4, (nbytes, copied)
