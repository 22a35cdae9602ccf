"""The GIL is released during inference: two Python threads on one Model are inside the engine at the
same time. Shown by counting, not timing: the binding's run probe holds each run at a barrier until two
runs are in progress at once. Were the GIL held across a run, the second thread could never enter and
the barrier would give up after its timeout (recorded as a timeout, so the test fails)."""
import threading

import numpy as np
import polaformer
from polaformer import _core

BARRIER_TIMEOUT = 60.0  # only reached when the GIL is not released, i.e. when the test fails


def run_two_threads(call):
    _core._testing_arm_run_barrier(2, BARRIER_TIMEOUT)
    results, errors = [None, None], []

    def body(i):
        try:
            results[i] = call()
        except Exception as e:  # noqa: BLE001  (reported by the assertion below)
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = _core._testing_run_stats()
    _core._testing_arm_run_barrier(0, 0)
    assert not errors, errors
    return results, stats


def test_two_runs_overlap(pvt, rng):
    x = rng.normal(size=(4, 1, 32, 32)).astype(np.float32)
    expected = pvt.run(x)
    (a, b), stats = run_two_threads(lambda: pvt.run(x))
    assert stats == {"max_active": 2, "barrier_passed": 1, "barrier_timeouts": 0}, stats
    np.testing.assert_array_equal(a, expected)
    np.testing.assert_array_equal(b, expected)


def test_two_classifies_overlap(pvt, samples):
    expected = pvt.classify(samples, top=3)
    (a, b), stats = run_two_threads(lambda: pvt.classify(samples, top=3))
    assert stats["barrier_passed"] == 1 and stats["barrier_timeouts"] == 0 and stats["max_active"] == 2, stats
    assert a == expected and b == expected


def test_the_probe_counts_one_thread_as_one(pvt):
    _core._testing_arm_run_barrier(0, 0)
    pvt.run(np.zeros((1, 1, 32, 32), np.float32))
    assert _core._testing_run_stats() == {"max_active": 1, "barrier_passed": 0, "barrier_timeouts": 0}


def test_many_threads_share_one_model(pvt_path, samples):
    model = polaformer.Model(pvt_path, threads=1)
    expected = model.classify(samples, top=2, batch=1)
    out, lock = [], threading.Lock()

    def body():
        for _ in range(3):
            r = model.classify(samples, top=2, batch=1)
            with lock:
                out.append(r)

    threads = [threading.Thread(target=body) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out) == 12 and all(r == expected for r in out)
