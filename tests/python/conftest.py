"""Shared fixtures of the binding's tests: the shipped models, the `pola` tool, sample images, and
Fashion-MNIST test images written as PNG files (Debian's dataset-fashion-mnist)."""
import os
import subprocess
import sys

import numpy as np
import pytest

SOURCE = os.environ.get("POLA_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
POLA = os.environ.get("POLA_BIN", os.path.join(SOURCE, "build", "apps", "pola"))
MODELS = os.path.join(SOURCE, "models")
FASHION_DIR = "/usr/share/datasets/fashion-mnist"

sys.path.insert(0, os.path.join(SOURCE, "training"))
import fashion_data  # noqa: E402  (the project's IDX reader)


def pola(*args, **kwargs):
    """Runs the `pola` tool; returns stdout, failing the test with stderr on a non-zero exit."""
    r = subprocess.run([POLA, *map(str, args)], capture_output=True, text=True, **kwargs)
    assert r.returncode == 0, f"pola {' '.join(map(str, args))} failed: {r.stderr}"
    return r.stdout


@pytest.fixture(scope="session")
def pvt_path():
    return os.path.join(MODELS, "fashion_pola_pvt.pola")


@pytest.fixture(scope="session")
def swin_path():
    return os.path.join(MODELS, "fashion_pola_swin.pola")


@pytest.fixture(scope="session")
def pvt(pvt_path):
    import polaformer
    return polaformer.Model(pvt_path, threads=1)


@pytest.fixture(scope="session")
def samples():
    d = os.path.join(MODELS, "samples")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".png"))


def write_fashion_pngs(folder, count):
    """The first `count` Fashion-MNIST test images as PNG files in `folder`; returns (paths, labels)."""
    from PIL import Image
    images, labels = fashion_data.load_split("t10k", FASHION_DIR)
    os.makedirs(folder, exist_ok=True)
    paths = []
    for i in range(count):
        p = os.path.join(folder, f"{i:05d}.png")
        Image.fromarray(images[i]).save(p)
        paths.append(p)
    return paths, labels[:count]


@pytest.fixture(scope="session")
def fashion_pngs(tmp_path_factory):
    return write_fashion_pngs(str(tmp_path_factory.mktemp("fashion")), 300)


@pytest.fixture(scope="session")
def rng():
    return np.random.default_rng(23)
