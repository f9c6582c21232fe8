"""N Python threads with N sessions: the same results as one thread (the GIL is released while
the engine runs; whether they overlap is tested in test_errors.py)."""

from __future__ import annotations

import threading

import numpy as np

import winfer
from conftest import FASHION, random_input


def test_four_threads_four_sessions_equal_one_thread():
    m = winfer.Model(FASHION)  # one model, shared by every session
    inputs = [random_input((8, 1, 28, 28), seed=i) for i in range(4)]
    reference_session = m.session(batch=8, threads=1)
    want = [reference_session.run(x) for x in inputs]

    sessions = [m.session(batch=8, threads=1) for _ in range(4)]
    results: list = [None] * 4
    failures: list = []
    start = threading.Barrier(4)

    def work(i: int) -> None:
        try:
            start.wait()
            outs = []
            for _ in range(5):
                outs.append(sessions[i].run(inputs[i]))
            results[i] = outs
        except BaseException as e:  # reported below, not lost in the thread
            failures.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    for i in range(4):
        for out in results[i]:
            assert out.tobytes() == want[i].tobytes()


def test_classify_from_threads_with_one_session_each():
    m = winfer.Model(FASHION)
    images = [np.full((28, 28), 16 * i, np.uint8) for i in range(6)]
    want = winfer.classify(m, images, top=3, threads=1)
    got: dict = {}

    def work(i: int) -> None:
        got[i] = winfer.classify(m.session(batch=2, threads=1), images, top=3)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(got[i] == want for i in range(3))
