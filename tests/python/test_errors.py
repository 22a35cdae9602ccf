"""Every bad argument gets an exception with a message naming it; nothing crashes or hangs."""
import os

import subprocess
import sys
import numpy as np
import polaformer
import pytest


def test_error_classes():
    assert issubclass(polaformer.InputError, polaformer.Error) and issubclass(polaformer.InputError, ValueError)
    assert issubclass(polaformer.InternalError, polaformer.Error) and issubclass(polaformer.InternalError, RuntimeError)


@pytest.mark.parametrize("path, match", [
    (None, "path is None"),
    (42, "path must be a str or os.PathLike"),
    ("/nonexistent/model.pola", "/nonexistent/model.pola"),
    ("/dev/null", "/dev/null"),
    ("/tmp", "/tmp"),
])
def test_bad_model_paths(path, match):
    with pytest.raises(polaformer.InputError, match=match):
        polaformer.Model(path)


def test_an_image_given_as_model_says_what_it_is(samples):
    with pytest.raises(polaformer.InputError, match="PNG image, not a model file"):
        polaformer.Model(samples[0])


def test_size_errors_name_the_method_not_the_c_function(pvt):
    # The library's message, worded for Python: the method called (not the C API function behind
    # it), the nearest valid sizes, and no option of the command-line tool.
    x = np.zeros((1, 1, 28, 28), np.float32)
    for method, call in (("Model.run", pvt.run), ("Model.features", pvt.features)):
        with pytest.raises(polaformer.InputError) as e:
            call(x)
        message = str(e.value)
        assert message.startswith(f"{method}: input size 28x28 is not valid"), message
        assert "height 32, width 32" in message, message
        assert "pola_" not in message and "--pad" not in message, message


@pytest.mark.parametrize("threads", [-1, 5000, 2 ** 80, "2", 1.5, True])
def test_bad_thread_counts(pvt_path, threads):
    with pytest.raises(polaformer.InputError, match="threads"):
        polaformer.Model(pvt_path, threads=threads)


def test_numpy_integers_are_thread_counts(pvt_path):
    assert polaformer.Model(pvt_path, threads=np.int64(2)).threads == 2


def test_unknown_precisions_are_refused(pvt_path):
    with pytest.raises(ValueError, match="unknown precision 'fp16'"):
        polaformer.Model(pvt_path, precision="fp16")
    with pytest.raises(ValueError, match="precision must be"):
        polaformer.Model(pvt_path, precision=16)


def test_bf16_without_native_bf16_names_what_is_missing(pvt_path):
    # The ISA is chosen once per process, so a CPU without bf16 (POLA_ISA=avx512 caps it) is
    # emulated in a child interpreter.
    code = ("import polaformer, sys\n"
            "try:\n"
            f"    polaformer.Model({pvt_path!r}, precision='bf16')\n"
            "except ValueError as e:\n"
            "    print(e); sys.exit(3)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, POLA_ISA="avx512"), timeout=120)
    assert r.returncode == 3 and "AMX-BF16" in r.stdout, (r.returncode, r.stdout, r.stderr)


@pytest.mark.parametrize("x, match", [
    (None, "x is None"),
    (np.float32(1.0), r"shape \(\)"),
    (np.array(1.0, np.float32), r"shape \(\)"),
    (np.zeros(1024, np.float32), r"shape \(1024,\)"),
    (np.zeros((1, 32, 32), np.float32), r"shape \(1, 32, 32\)"),
    (np.zeros((2, 3, 32, 32), np.float32), r"expected \(N, 1, 32, 32\) or \(N, 1, H, W\)"),
    # any H x W the library accepts runs; others get its message, naming the nearest valid sizes
    (np.zeros((2, 1, 32, 31), np.float32), r"^Model.run: .*32x31 is not valid.*multiples of 32.*width 32"),
    (np.zeros((2, 1, 60, 96), np.float32), r"^Model.run: .*60x96 is not valid.*height 32 or 64"),
    (np.zeros((2, 1, 0, 32), np.float32), r"^Model.run: .*0x32 is out of range"),
    (np.broadcast_to(np.float32(0), (1, 1, 32, 2 ** 40)), r"^Model.run: .*more than the engine takes"),
    (np.broadcast_to(np.float32(0), (1, 1, 32, 2 ** 20)), r"^Model.run: .*32x1048576 is out of range"),
    (np.zeros((1, 1, 32, 32), bool), "dtype bool"),
    (np.zeros((1, 1, 32, 32), np.complex64), "dtype complex64"),
    (np.zeros((1, 1, 32, 32), object), "dtype object"),
    ("a string", "dtype <U8|dtype str"),
    ([[1.0], [2.0, 3.0]], "not an array of numbers|dtype object"),
    ({"a": 1}, "dtype object"),
])
def test_bad_batches(pvt, x, match):
    with pytest.raises(polaformer.InputError, match=match):
        pvt.run(x)


def test_a_huge_broadcast_batch_is_refused_before_any_allocation(pvt):
    x = np.broadcast_to(np.zeros((1, 1, 1, 1), np.float32), (2 ** 40, 1, 32, 32))
    with pytest.raises(polaformer.InputError, match="images; at most .* per call"):
        pvt.run(x)


def test_non_finite_inputs_get_the_engine_message(pvt_path, pvt):
    x = np.zeros((2, 1, 32, 32), np.float32)
    x[1, 0, 3, 4] = np.nan
    with pytest.raises(polaformer.InputError, match="(?i)nan|finite"):
        pvt.run(x)
    lenient = polaformer.Model(pvt_path, threads=1, allow_nonfinite=True)
    assert lenient.run(x).shape == (2, 10)


def test_bad_images(pvt, tmp_path):
    notes = tmp_path / "notes.png"
    notes.write_text("not an image")
    cases = [
        (None, "images is None"),
        ([None], r"images\[0\] is None"),
        ([1], r"images\[0\]: expected a path, encoded image bytes or an HWC uint8 array, got int"),
        (["/nonexistent/x.png"], r"images\[0\]: .*/nonexistent/x.png"),
        ([str(notes)], r"images\[0\]: .*notes.png"),
        (["/dev/zero"], r"images\[0\]: .*/dev/zero"),
        ([b"not an image"], r"images\[0\]: "),
        ([b""], r"images\[0\]: .*empty"),
        ([np.zeros((8, 8), np.float32)], r"images\[0\]: .*uint8"),
        ([np.zeros((8, 8, 7), np.uint8)], "C = 1"),
        ([np.zeros((0, 8), np.uint8)], "size 0 x 8"),
        ([np.zeros(8, np.uint8)], "H x W"),
        (3.5, "got float"),
    ]
    for images, match in cases:
        with pytest.raises(polaformer.InputError, match=match):
            pvt.classify(images)


def test_bad_classify_arguments(pvt, samples):
    with pytest.raises(polaformer.InputError, match="top must be >= 1"):
        pvt.classify(samples, top=0)
    with pytest.raises(polaformer.InputError, match="batch must be in 1..256"):
        pvt.classify(samples, batch=0)
    with pytest.raises(TypeError):
        pvt.classify(samples, top="3")


def test_bad_preprocess_arguments(pvt):
    with pytest.raises(polaformer.InputError, match="the image is None"):
        pvt.preprocess(None)
    with pytest.raises(polaformer.InputError, match="got list"):
        pvt.preprocess([[1, 2]])


def test_a_failed_call_leaves_the_model_usable(pvt, samples):
    with pytest.raises(polaformer.InputError):
        pvt.run(None)
    assert len(pvt.classify(samples, top=1)) == len(samples)


def test_an_error_in_a_later_engine_call_says_which_images(pvt):
    x = np.zeros((600, 1, 32, 32), np.float32)
    x[300, 0, 1, 2] = np.inf
    with pytest.raises(polaformer.InputError, match=r"images 256\.\.511 .*image 44,"):
        pvt.run(x)
