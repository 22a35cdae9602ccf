"""A run the machine cannot hold is refused before anything is allocated: polaformer.InputError naming the
need and what is available, and no growth of the process's peak resident memory. POLA_MEMORY_LIMIT_BYTES
stands in for a small machine (the engine reads it at every check), so no large computer is needed: with
the shipped Fashion-MNIST model (32x32 inputs) a 2048x2048 image needs about 0.3 GiB. Runs under the
limit still run; the need the engine computes is close enough that a limit 2% above it lets the run
through and one 2% below its working memory does not."""
import os
import re

import numpy as np
import polaformer
import pytest

LIMIT = 64 << 20
BIG = 2048
# Far below the ~300 MiB each refused run would need.
MAX_GROWTH_KIB = 32 * 1024


def peak_rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/self/status")


@pytest.fixture
def model(pvt_path):
    return polaformer.Model(pvt_path, threads=1)


@pytest.fixture
def limited(monkeypatch):
    monkeypatch.setenv("POLA_MEMORY_LIMIT_BYTES", str(LIMIT))


def refusal(shape):
    return re.escape(shape) + r" needs [0-9.]+ [KMG]iB \(the plan's working memory .*\); 64\.0 MiB is available " \
        r"\(POLA_MEMORY_LIMIT_BYTES\)"


def test_run_too_large_for_memory_is_refused_before_allocating(model, limited):
    x = np.zeros((1, 1, BIG, BIG), np.float32)  # zero pages: reading them costs no resident memory
    before = peak_rss_kib()
    with pytest.raises(polaformer.InputError, match=refusal("a batch of 1 image of 2048x2048")):
        model.run(x)
    assert peak_rss_kib() - before < MAX_GROWTH_KIB


def test_features_too_large_for_memory_are_refused(model, limited):
    x = np.zeros((1, 1, BIG, BIG), np.float32)
    before = peak_rss_kib()
    with pytest.raises(polaformer.InputError, match=refusal("2048x2048")):
        model.features(x, stages=[1], pooled=False)
    assert peak_rss_kib() - before < MAX_GROWTH_KIB


def test_classify_refuses_a_batch_too_large_before_decoding(model, samples, monkeypatch):
    # 256 images of 32x32 need ~20 MiB; 4 MiB is too little (the model's batch-1 plan is already built).
    monkeypatch.setenv("POLA_MEMORY_LIMIT_BYTES", str(4 << 20))
    with pytest.raises(polaformer.InputError, match=r"a batch of 256 images of 32x32 needs .* 4\.00 MiB is available"):
        model.classify(samples[:1] * 256, batch=256)


def test_a_limit_that_is_not_a_number_is_named(model, monkeypatch):
    monkeypatch.setenv("POLA_MEMORY_LIMIT_BYTES", "lots")
    with pytest.raises(polaformer.InputError, match="POLA_MEMORY_LIMIT_BYTES='lots' is not a number of bytes"):
        model.run(np.zeros((1, 1, 96, 96), np.float32))


@pytest.mark.parametrize("batch, height, width", [(1, 512, 384), (200, 32, 32)])
def test_memory_need_is_what_the_run_is_checked_against(model, monkeypatch, batch, height, width):
    # Shapes Model.run hands to the engine in one call (larger images go one at a time).
    need = model.memory_need(batch, height, width)
    assert need["total"] == need["working"] + need["inputs"] + need["outputs"]
    assert need["inputs"] == batch * 1 * height * width * 4 and need["outputs"] == batch * 10 * 4
    assert need["available"] > 0
    x = np.random.default_rng(5).standard_normal((batch, 1, height, width)).astype(np.float32)
    want = polaformer.Model(model.path, threads=1).run(x)
    # The caller holds x, so the run itself is checked for its working memory.
    monkeypatch.setenv("POLA_MEMORY_LIMIT_BYTES", str(int(need["working"] * 0.98)))
    images = "image" if batch == 1 else "images"
    with pytest.raises(polaformer.InputError, match=f"a batch of {batch} {images} of {height}x{width} needs"):
        model.run(x)
    monkeypatch.setenv("POLA_MEMORY_LIMIT_BYTES", str(int(need["working"] * 1.02)))
    np.testing.assert_array_equal(model.run(x), want)


def test_memory_need_arguments(model):
    assert model.memory_need(64)["working"] > model.memory_need(1)["working"]
    own, explicit = model.memory_need(2), model.memory_need(2, 32, 32)
    assert all(own[k] == explicit[k] for k in ("working", "inputs", "outputs", "total"))
    with pytest.raises(polaformer.InputError, match="input size 100x100"):
        model.memory_need(1, 100, 100)
    with pytest.raises(polaformer.InputError, match="batch"):
        model.memory_need(0)
    with pytest.raises(polaformer.InputError, match="both height and width"):
        model.memory_need(1, 64)
