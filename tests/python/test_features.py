"""Model.features: backbone features at any input size, equal to what `pola features` writes for
the same images (whose values the parity tests check against the PyTorch reference)."""
import os

import numpy as np
import pytest

from conftest import pola


def test_features_match_the_cli_at_a_non_square_size(pvt, pvt_path, tmp_path):
    x = np.random.default_rng(5).standard_normal((2, 1, 64, 96)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    pola("features", "-m", pvt_path, "-i", tmp_path / "x.npy", "-o", tmp_path / "cli", "-t", "1")
    got = pvt.features(x)
    assert sorted(got) == ["pooled", "stage1", "stage2", "stage3", "stage4"]
    for name, array in got.items():
        want = np.load(tmp_path / "cli" / f"{name}.npy")
        assert array.dtype == np.float32 and array.shape == want.shape, name
        np.testing.assert_allclose(array, want, rtol=0, atol=1e-5 * np.abs(want).max(), err_msg=name)
    assert got["stage1"].shape == (2, 32, 16, 24) and got["stage4"].shape == (2, 192, 2, 3)


def test_only_the_stages_asked_for(pvt):
    x = np.zeros((1, 1, 32, 64), np.float32)
    got = pvt.features(x, stages=[2], pooled=False)
    assert list(got) == ["stage2"] and got["stage2"].shape == (1, 64, 4, 8)
    full = pvt.features(x)
    np.testing.assert_array_equal(got["stage2"], full["stage2"])


@pytest.mark.parametrize("bad, message", [
    (np.zeros((1, 1, 30, 64), np.float32), "nearest valid: height 32"),
    (np.zeros((1, 3, 32, 32), np.float32), "must have shape (N, 1, H, W)"),
    (None, "x is None"),
])
def test_refused_inputs(pvt, bad, message):
    import polaformer
    with pytest.raises(polaformer.InputError, match=None) as e:
        pvt.features(bad)
    assert message in str(e.value)


@pytest.mark.parametrize("stages, message", [([0], "stage 0 is not in 1..4"), ([1, 1], "listed twice"),
                                             (["a"], "stage numbers")])
def test_refused_stages(pvt, stages, message):
    import polaformer
    with pytest.raises(polaformer.InputError) as e:
        pvt.features(np.zeros((1, 1, 32, 32), np.float32), stages=stages)
    assert message in str(e.value)
