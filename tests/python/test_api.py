"""polaformer.Model and friends: what each call returns, for every kind of input it accepts."""
import io
import os
import re
import subprocess
import pathlib
import tracemalloc

import numpy as np
import polaformer
import pytest
from conftest import pola


def softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


def test_version_matches_the_tool():
    assert polaformer.__version__ and polaformer.__version__ in pola("--version")


def test_model_describes_itself(pvt, pvt_path):
    assert pvt.path == pvt_path
    assert pvt.input_shape == (1, 32, 32)
    assert pvt.num_classes == 10 == len(pvt.classes)
    assert pvt.classes[9] == "Ankle boot"
    assert pvt.threads == 1 and pvt.precision == "fp32"
    info = pvt.info
    for key in ("family", "config", "classes", "preprocess", "parameters"):
        assert key in info, key
    assert info["classes"] == pvt.classes
    assert info["preprocess"]["channels"] == 1
    assert "fashion_pola_pvt.pola" in repr(pvt)


def test_precision_none_and_fp32_load(pvt_path):
    for p in (None, "fp32"):
        assert polaformer.Model(pvt_path, threads=1, precision=p).precision == "fp32"


def test_precision_auto_is_what_pola_version_says(pvt_path, samples):
    version = pola("--version")
    picked = re.search(r"precision\s+auto = (\w+)", version).group(1)
    m = polaformer.Model(pvt_path, threads=1, precision="auto")
    assert m.precision == picked
    # bf16 answers close to fp32 (and bit-equal to pola run at that precision: test_cli_parity)
    x = np.stack([m.preprocess(p) for p in samples])
    exact = polaformer.Model(pvt_path, threads=1).run(x)
    assert np.abs(m.run(x) - exact).max() <= 3e-2 * np.abs(exact).max()


def test_classify_ranks_softmax_of_run(pvt, samples):
    x = np.stack([pvt.preprocess(p) for p in samples])
    logits = pvt.run(x)
    assert logits.shape == (len(samples), 10) and logits.dtype == np.float32
    ranked = pvt.classify(samples, top=3, batch=len(samples))
    for row, z in zip(ranked, logits):
        p = softmax(z.astype(np.float64))
        best = np.argsort(-p, kind="stable")[:3]
        assert [c for c, _ in row] == [pvt.classes[i] for i in best]
        np.testing.assert_allclose([q for _, q in row], p[best], rtol=1e-5, atol=1e-7)
    # the shipped samples are named after their class, and the model knows them all
    for path, row in zip(samples, ranked):
        label = os.path.basename(path)[5:-4]
        assert row[0][0].lower().replace("/", "-").replace(" ", "-") == label


def test_every_image_form_gives_the_same_answer(pvt, samples):
    from PIL import Image
    path = samples[0]
    data = open(path, "rb").read()
    grey = np.asarray(Image.open(path).convert("L"))
    rgb = np.asarray(Image.open(path).convert("RGB"))
    rgba = np.asarray(Image.open(path).convert("RGBA"))
    forms = [path, pathlib.Path(path), data, bytearray(data), memoryview(data), grey, grey[:, :, None], rgb, rgba,
             np.asfortranarray(rgb), rgb[:, ::-1][:, ::-1]]
    expected = pvt.preprocess(path)
    for form in forms:
        np.testing.assert_array_equal(pvt.preprocess(form), expected)
    answers = pvt.classify(forms, top=2)
    assert len(answers) == len(forms)
    assert all(a == answers[0] for a in answers)
    alone = pvt.classify(path, top=2)  # one image alone is a list of one (a batch of 1: rounding may differ)
    assert len(alone) == 1 and [c for c, _ in alone[0]] == [c for c, _ in answers[0]]
    np.testing.assert_allclose([p for _, p in alone[0]], [p for _, p in answers[0]], rtol=1e-4)


def test_a_4d_uint8_array_is_a_list_of_images(pvt, samples):
    from PIL import Image
    stack = np.stack([np.asarray(Image.open(p).convert("L")) for p in samples])[..., None]  # N x H x W x 1
    assert pvt.classify(stack, top=1) == pvt.classify(samples, top=1)
    # N x H x W would be one H x W x C image: refused for its channel count, not guessed at
    with pytest.raises(polaformer.InputError, match="C = 1"):
        pvt.classify(stack[..., 0])
    assert pvt.classify([], top=1) == []


def test_threads_zero_and_none_mean_all_cores(pvt_path):
    # as the CLI's --threads 0; .threads says how many threads that is, never 0
    cores = len(os.sched_getaffinity(0))
    for threads in (0, None):
        assert polaformer.Model(pvt_path, threads=threads).threads == cores, threads
    assert polaformer.Model(pvt_path).threads == cores


def test_each_prediction_carries_its_class_index(pvt, samples):
    for row in pvt.classify(samples, top=3):
        for pair in row:
            name, prob = pair  # still a (class, probability) pair
            assert pvt.classes[pair.index] == name == pair.class_name and pair.prob == prob


def test_a_bad_image_in_a_list_does_not_lose_the_others(pvt, samples, tmp_path):
    # As `pola classify`: every readable image is classified, each bad one named; the call then
    # fails (InputError, as the CLI's exit code 1) with the results of the others attached.
    notes = tmp_path / "notes.png"
    notes.write_text("not an image")
    missing = str(tmp_path / "missing.png")
    images = [samples[0], str(notes), samples[1], missing, samples[2]]
    with pytest.raises(polaformer.InputError) as info:
        pvt.classify(images, top=2, batch=2)
    e = info.value
    assert [r is None for r in e.results] == [False, True, False, True, False]
    assert e.failures == [(1, f"{notes}: not an image file (unknown format)"),
                          (3, f"{missing}: cannot open: No such file or directory")]
    assert str(e).startswith("Model.classify: 2 of 5 images could not be classified")
    assert f"images[1]: {notes}: not an image file" in str(e) and f"images[3]: {missing}: cannot open" in str(e)
    assert [e.results[i] for i in (0, 2, 4)] == pvt.classify(samples[:3], top=2, batch=2)
    # one image alone: the same exception, for the one image
    with pytest.raises(polaformer.InputError, match="the image: .*missing.png: cannot open") as one:
        pvt.classify(missing)
    assert one.value.results == [None] and one.value.failures == [(0, f"{missing}: cannot open: No such file or directory")]


def test_top_is_clipped_to_the_class_count(pvt, samples):
    assert len(pvt.classify(samples[0], top=50)[0]) == 10
    assert abs(sum(p for _, p in pvt.classify(samples[0], top=10)[0]) - 1) < 1e-5


def test_layouts_and_dtypes_are_converted(pvt, rng):
    x = rng.normal(size=(6, 1, 32, 32)).astype(np.float32)
    expected = pvt.run(x)
    # Each image's logits depend on that image only (up to the rounding of another batch size).
    for variant in (np.asfortranarray(x), x.astype(np.float64), x.astype(">f4"), x.tolist(),
                    np.ascontiguousarray(np.concatenate([x, x], axis=3))[:, :, :, :32], x[::-1][::-1]):
        np.testing.assert_allclose(pvt.run(variant), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(pvt.run(x[::2]), expected[::2], rtol=1e-5, atol=1e-5)
    ints = rng.integers(-2, 3, size=(2, 1, 32, 32))
    np.testing.assert_allclose(pvt.run(ints), pvt.run(ints.astype(np.float32)), rtol=1e-6, atol=1e-6)
    one = np.broadcast_to(x[:1], (3, 1, 32, 32))  # zero strides
    np.testing.assert_allclose(pvt.run(one), np.repeat(expected[:1], 3, axis=0), rtol=1e-5, atol=1e-5)
    assert pvt.run(np.zeros((0, 1, 32, 32), np.float32)).shape == (0, 10)


def test_input_is_never_modified(pvt, rng):
    x = rng.normal(size=(3, 1, 32, 32)).astype(np.float32)
    before = x.copy()
    pvt.run(x)
    np.testing.assert_array_equal(x, before)


def traced_peak(fn):
    """Peak bytes numpy (and Python) allocated while fn ran (numpy reports to tracemalloc)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_c_contiguous_float32_is_read_in_place(pvt):
    x = np.zeros((600, 1, 32, 32), np.float32)  # 2.4 MB; the logits are 24 KB
    assert traced_peak(lambda: pvt.run(x)) < x.nbytes / 4


def test_other_layouts_are_converted_a_slice_at_a_time(pvt):
    x = np.zeros((600, 1, 32, 32), np.float64)  # a float32 copy of it all would be 2.4 MB
    peak = traced_peak(lambda: pvt.run(x))
    assert peak < 0.5 * 600 * 1024 * 4, peak  # a slice of 256 images is 1 MB


def test_help_is_useful():
    out = io.StringIO()
    import pydoc
    out.write(pydoc.render_doc(polaformer.Model, renderer=pydoc.plaintext))
    text = out.getvalue()
    for word in ("run(", "classify(", "preprocess(", "info", "threads", "precision", "GIL"):
        assert word in text, word
    assert "checkpoint" in polaformer.convert.__doc__


def test_type_stubs_ship_with_the_package():
    folder = os.path.dirname(polaformer.__file__)
    stub = open(os.path.join(folder, "__init__.pyi")).read()
    assert os.path.exists(os.path.join(folder, "py.typed"))
    for name in ("class Model", "def run", "def classify", "def preprocess", "def info", "def convert", "InputError"):
        assert name in stub, name
