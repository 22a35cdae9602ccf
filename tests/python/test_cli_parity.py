"""The binding gives what the `pola` tool gives on the same input: logits (pola run, at the model's
size and another), preprocessed
arrays (pola preprocess), top-k (pola classify --json) and the model description (pola info --json)."""
import json

import numpy as np
import pytest
from conftest import pola


@pytest.fixture(scope="module", params=["fashion_pola_pvt.pola", "fashion_pola_swin.pola"])
def model_and_path(request):
    import os
    import polaformer
    from conftest import MODELS
    path = os.path.join(MODELS, request.param)
    return polaformer.Model(path, threads=1), path


def test_run_equals_pola_run(model_and_path, rng, tmp_path):
    model, path = model_and_path
    x = rng.normal(size=(7, *model.input_shape)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    pola("run", "-m", path, "-i", tmp_path / "x.npy", "-o", tmp_path / "logits.npy", "--threads", 1)
    expected = np.load(tmp_path / "logits.npy")
    assert expected.shape == (7, model.num_classes)
    np.testing.assert_array_equal(model.run(x), expected)  # the same engine on the same batch: bit for bit


def test_run_at_another_size_equals_pola_run(model_and_path, rng, tmp_path):
    model, path = model_and_path
    channels, height, width = model.input_shape
    x = rng.normal(size=(3, channels, 2 * height, 3 * width)).astype(np.float32)  # not the model's own size
    np.save(tmp_path / "x.npy", x)
    pola("run", "-m", path, "-i", tmp_path / "x.npy", "-o", tmp_path / "logits.npy", "--threads", 1)
    got = model.run(x)
    np.testing.assert_array_equal(got, np.load(tmp_path / "logits.npy"))
    # and it is a different computation from the model's own size, not a resize or crop of the input
    assert np.abs(got - model.run(np.ascontiguousarray(x[:, :, :height, :width]))).max() > 1e-3


def test_auto_precision_run_equals_pola_run(model_and_path, rng, tmp_path):
    import polaformer
    _, path = model_and_path
    model = polaformer.Model(path, threads=1, precision="auto")  # bf16 on a CPU with native bf16
    x = rng.normal(size=(3, *model.input_shape)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    pola("run", "-m", path, "-i", tmp_path / "x.npy", "-o", tmp_path / "logits.npy", "--threads", 1,
         "--precision", "auto")
    np.testing.assert_array_equal(model.run(x), np.load(tmp_path / "logits.npy"))


@pytest.mark.parametrize("convert", [
    lambda x: x.astype(np.float64), lambda x: x.astype(np.float16), lambda x: x.astype(">f4"),
    lambda x: x.astype(">f8"), np.asfortranarray, lambda x: np.asfortranarray(x.astype(np.float64)),
    lambda x: np.rint(x * 40).astype(np.int16), lambda x: np.rint(x * 40).astype(">i8"),
    lambda x: np.clip(np.rint(x * 40 + 128), 0, 255).astype(np.uint8),
], ids=["float64", "float16", "big-endian float32", "big-endian float64", "Fortran float32", "Fortran float64",
        "int16", "big-endian int64", "uint8"])
def test_pola_run_converts_what_model_run_converts(model_and_path, rng, tmp_path, convert):
    # One rule for both: real numbers of any dtype, byte order or memory order, converted to float32.
    model, path = model_and_path
    x = convert(rng.normal(size=(2, *model.input_shape)).astype(np.float32))
    np.save(tmp_path / "x.npy", x)
    pola("run", "-m", path, "-i", tmp_path / "x.npy", "-o", tmp_path / "logits.npy", "--threads", 1)
    np.testing.assert_array_equal(np.load(tmp_path / "logits.npy"), model.run(x))


@pytest.mark.parametrize("dtype", [bool, np.complex64, "<U3"])
def test_pola_run_refuses_what_model_run_refuses(model_and_path, tmp_path, dtype):
    import polaformer
    import subprocess
    from conftest import POLA
    model, path = model_and_path
    x = np.zeros((1, *model.input_shape), dtype)
    np.save(tmp_path / "x.npy", x)
    r = subprocess.run([POLA, "run", "-m", path, "-i", tmp_path / "x.npy", "-o", tmp_path / "y.npy"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "dtype" in r.stderr and "real numbers" in r.stderr, r.stderr
    with pytest.raises(polaformer.InputError, match="dtype"):
        model.run(x)


def test_preprocess_equals_pola_preprocess(model_and_path, samples, tmp_path):
    model, path = model_and_path
    for image in samples[:3]:
        pola("preprocess", image, "-m", path, "-o", tmp_path / "x.npy")
        np.testing.assert_array_equal(model.preprocess(image), np.load(tmp_path / "x.npy")[0])


def test_classify_equals_pola_classify(model_and_path, samples):
    model, path = model_and_path
    lines = pola("classify", "-m", path, "--top", 3, "--batch", 4, "--threads", 1, "--json", *samples).splitlines()
    expected = [json.loads(line) for line in lines]
    got = model.classify(samples, top=3, batch=4)
    assert [e["file"] for e in expected] == samples
    for e, g in zip(expected, got):  # the same softmax of the same logits: the same doubles, and class indices
        assert [(t["class"], t["index"], t["prob"]) for t in e["top"]] == [(c, pair.index, p) for pair in g for c, p in [pair]]


def test_info_equals_pola_info(model_and_path):
    model, path = model_and_path
    assert model.info == json.loads(pola("info", "--json", path))


def test_int8_run_equals_pola_run(model_and_path, rng, tmp_path):
    import re
    import polaformer
    _, path = model_and_path
    quantized = tmp_path / "q.pola"
    shape = polaformer.Model(path, threads=1).input_shape
    np.save(tmp_path / "calibration.npy", rng.normal(size=(4, *shape)).astype(np.float32))
    pola("quantize", "-m", path, "--calibration", tmp_path / "calibration.npy", "-o", quantized)
    int8 = re.search(r"^\s*int8\s+(\S+)", pola("--version"), re.M).group(1)
    if int8 == "none":
        with pytest.raises(ValueError, match="AMX-INT8"):
            polaformer.Model(str(quantized), threads=1, precision="int8")
        return
    model = polaformer.Model(str(quantized), threads=1, precision="int8")
    assert model.precision == "int8"
    x = rng.normal(size=(3, *model.input_shape)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    pola("run", "-m", quantized, "-i", tmp_path / "x.npy", "-o", tmp_path / "logits.npy", "--threads", 1,
         "--precision", "int8")
    np.testing.assert_array_equal(model.run(x), np.load(tmp_path / "logits.npy"))
    with pytest.raises(ValueError, match="quantize it first"):
        polaformer.Model(path, threads=1, precision="int8")
