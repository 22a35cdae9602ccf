"""polaformer.convert: the converter of `pola convert` through the C API (pola_convert). A model file
is a valid input (its metadata re-written), so the shipped model stands in for a checkpoint here; the
checkpoint formats themselves are tested with the tool (tests/cli, tests/weights)."""
import os

import numpy as np
import polaformer
import pytest
from conftest import pola

NEW_NAMES = [f"kind {i}" for i in range(10)]


def test_convert_rewrites_names_and_preprocessing(pvt_path, pvt, samples, tmp_path, rng):
    labels = tmp_path / "labels.txt"
    labels.write_text("\n".join(NEW_NAMES) + "\n")
    out = tmp_path / "renamed.pola"
    assert polaformer.convert(pvt_path, out, labels=labels, mean=0.5, std=[0.25], resize=32, crop=32,
                              interpolation="bicubic") is None
    m = polaformer.Model(out, threads=1)
    assert m.classes == NEW_NAMES
    assert m.info["preprocess"]["mean"] == [0.5] and m.info["preprocess"]["std"] == [0.25]
    x = rng.normal(size=(3, 1, 32, 32)).astype(np.float32)
    np.testing.assert_array_equal(m.run(x), pvt.run(x))  # the weights are untouched
    # the same file as `pola convert` writes from the same arguments
    tool_out = tmp_path / "by_tool.pola"
    pola("convert", pvt_path, "-o", tool_out, "--labels", labels, "--mean", "0.5", "--std", "0.25", "--resize", 32,
         "--crop", 32, "--interpolation", "bicubic")
    assert open(tool_out, "rb").read() == open(out, "rb").read()


def test_convert_keeps_what_is_not_given(pvt_path, pvt, tmp_path):
    out = tmp_path / "same.pola"
    polaformer.convert(str(pvt_path), str(out))
    again = polaformer.Model(out)
    assert again.classes == pvt.classes and again.info["preprocess"] == pvt.info["preprocess"]


@pytest.mark.parametrize("kwargs, match", [
    (dict(labels="/nonexistent/labels.txt"), "/nonexistent/labels.txt"),
    (dict(arch="pola_swin_t"), "pola_swin_t"),
    (dict(interpolation="bilinear"), "bilinear"),
    (dict(mean=[0.1, 0.2]), "mean"),
    (dict(mean=[]), "mean is empty"),
    (dict(mean="0.5"), "mean must be numbers"),
    (dict(std=[0.0]), "std"),
    (dict(resize=0), "resize must be >= 1"),
    (dict(crop=48, resize=64), "crop"),
    (dict(arch=3), "arch must be a str"),
])
def test_bad_conversions_write_nothing(pvt_path, tmp_path, kwargs, match):
    out = tmp_path / "out.pola"
    with pytest.raises(polaformer.InputError, match=match):
        polaformer.convert(pvt_path, out, **kwargs)
    assert not out.exists()


def test_convert_never_overwrites_its_input(pvt_path, tmp_path):
    copy = tmp_path / "model.pola"
    copy.write_bytes(open(pvt_path, "rb").read())
    before = copy.read_bytes()
    with pytest.raises(polaformer.InputError, match="model.pola"):
        polaformer.convert(copy, copy)
    labels = tmp_path / "labels.txt"
    labels.write_text("\n".join(NEW_NAMES) + "\n")
    with pytest.raises(polaformer.InputError, match="labels.txt"):
        polaformer.convert(copy, labels, labels=labels)
    assert copy.read_bytes() == before and labels.read_text().startswith("kind 0")


def test_bad_paths(tmp_path, samples):
    with pytest.raises(polaformer.InputError, match="checkpoint must be a path"):
        polaformer.convert(None, tmp_path / "x.pola")
    with pytest.raises(polaformer.InputError, match="output must be a path"):
        polaformer.convert(samples[0], None)
    with pytest.raises(polaformer.InputError, match="/nonexistent.pth"):
        polaformer.convert("/nonexistent.pth", tmp_path / "x.pola")
    with pytest.raises(polaformer.InputError, match="not a recognised checkpoint"):
        polaformer.convert(samples[0], tmp_path / "x.pola")
    assert not os.path.exists(tmp_path / "x.pola")


def test_convert_takes_the_weight_dtype_as_pola_convert_does(pvt_path, pvt, tmp_path, rng):
    out, tool_out = tmp_path / "bf16.pola", tmp_path / "bf16_by_tool.pola"
    polaformer.convert(pvt_path, out, dtype="bf16")
    pola("convert", pvt_path, "-o", tool_out, "--dtype", "bf16")
    assert open(out, "rb").read() == open(tool_out, "rb").read()
    assert os.path.getsize(out) < 0.75 * os.path.getsize(pvt_path)  # the weight matrices in half the bytes
    x = rng.normal(size=(2, 1, 32, 32)).astype(np.float32)
    exact = pvt.run(x)
    assert np.abs(polaformer.Model(out, threads=1).run(x) - exact).max() < 3e-2 * np.abs(exact).max()
    polaformer.convert(out, tmp_path / "f32.pola", dtype="f32")  # and back (the bf16 values, stored as f32)
    polaformer.convert(pvt_path, tmp_path / "default.pola", dtype=None)
    pola("convert", pvt_path, "-o", tmp_path / "default_by_tool.pola")
    assert open(tmp_path / "default.pola", "rb").read() == open(tmp_path / "default_by_tool.pola", "rb").read()


def test_convert_takes_the_labels_as_a_list(pvt_path, tmp_path):
    # a list of names, or a file of them: the same checks, the same bytes written
    labels = tmp_path / "labels.txt"
    labels.write_text("\n".join(NEW_NAMES) + "\n")
    from_list, from_file = tmp_path / "from_list.pola", tmp_path / "from_file.pola"
    polaformer.convert(pvt_path, from_list, labels=NEW_NAMES)
    polaformer.convert(pvt_path, from_file, labels=labels)
    assert polaformer.Model(from_list, threads=1).classes == NEW_NAMES
    assert open(from_list, "rb").read() == open(from_file, "rb").read()
    polaformer.convert(pvt_path, tmp_path / "from_tuple.pola", labels=tuple(f" {n} " for n in NEW_NAMES))
    assert open(tmp_path / "from_tuple.pola", "rb").read() == open(from_file, "rb").read()  # spaces dropped, as in a file


@pytest.mark.parametrize("kwargs, match", [
    (dict(labels=NEW_NAMES[:9]), "9 class names, but the model has 10"),
    (dict(labels=NEW_NAMES[:9] + ["kind 0"]), r"labels\[9\]: class name 'kind 0' appears twice .*labels\[0\]"),
    (dict(labels=NEW_NAMES[:9] + ["  "]), r"labels\[9\] is empty"),
    (dict(labels=[]), "labels is empty"),
    (dict(labels=NEW_NAMES[:9] + [3]), r"labels\[9\] must be a str"),
    (dict(labels=NEW_NAMES[:9] + ["a\0b"]), r"labels\[9\] holds a NUL"),
    (dict(labels=3), "labels must be a path .* or a sequence of class names"),
    (dict(dtype="fp16"), "dtype 'fp16'.*f32.*bf16"),
    (dict(dtype=16), "dtype must be"),
])
def test_bad_labels_and_dtypes_write_nothing(pvt_path, tmp_path, kwargs, match):
    out = tmp_path / "out.pola"
    with pytest.raises(polaformer.InputError, match=match):
        polaformer.convert(pvt_path, out, **kwargs)
    assert not out.exists()


def _training_checkpoint(pvt_path, tmp_path):
    """A torch.save dict holding 'model' (the shipped model's tensors) and 'state_dict_ema' (the same,
    with every bias shifted), as PolaFormer++ training checkpoints do."""
    torch = pytest.importorskip("torch")
    import sys
    sys.path.insert(0, os.path.join(os.environ["POLA_SOURCE_DIR"], "tests", "reference"))
    import safetensors_io
    tensors, _ = safetensors_io.load_file(str(pvt_path))
    raw = {k: torch.from_numpy(v.copy()) for k, v in tensors.items()}
    ema = {k: v + 0.125 if k.endswith(".bias") else v.clone() for k, v in raw.items()}
    path = tmp_path / "ckpt.pth"
    torch.save({"model": raw, "state_dict_ema": ema, "epoch": 3}, path)
    return path


def test_convert_takes_the_weights_choice_as_pola_convert_does(pvt_path, tmp_path):
    ckpt = _training_checkpoint(pvt_path, tmp_path)
    for choice in ("raw", "ema"):
        out, tool_out = tmp_path / f"{choice}.pola", tmp_path / f"{choice}_by_tool.pola"
        polaformer.convert(ckpt, out, weights=choice)
        pola("convert", ckpt, "-o", tool_out, "--weights", choice)
        assert open(out, "rb").read() == open(tool_out, "rb").read()
    polaformer.convert(ckpt, tmp_path / "default.pola")
    assert open(tmp_path / "default.pola", "rb").read() == open(tmp_path / "raw.pola", "rb").read()
    assert open(tmp_path / "raw.pola", "rb").read() != open(tmp_path / "ema.pola", "rb").read()


@pytest.mark.parametrize("weights, match", [
    ("ema", "state_dict_ema"),  # a model file holds one state dict
    ("best", "weights 'best' is not one of raw, ema"),
    (1, "weights must be"),
])
def test_bad_weights_choices_write_nothing(pvt_path, tmp_path, weights, match):
    out = tmp_path / "out.pola"
    with pytest.raises(polaformer.InputError, match=match):
        polaformer.convert(pvt_path, out, weights=weights)
    assert not out.exists()
