"""Files the CLI tests feed to `pola`: a small model made by the PyTorch reference, a photo,
and the kinds of wrong file users pass by mistake."""
import os
import sys

import numpy as np

REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference")
sys.path.insert(0, REFERENCE)

# A 3-channel 72 x 72 PVT with spatial reduction (21 classes): small, and its
# preprocess metadata is usable for images.
FIXTURE_ARCH = "reduced_pvt_sr"


def make_fixtures(work, seed=11):
    from make_case import make_case
    from pola_config import get_config
    import skimage.data
    import skimage.io

    os.makedirs(work, exist_ok=True)
    make_case(os.path.join(work, "case"), get_config(FIXTURE_ARCH), arch=FIXTURE_ARCH, seed=seed, batch=2)
    f = {
        "model": os.path.join(work, "case", "model.pola"),
        "input": os.path.join(work, "case", "input.npy"),
        "logits": os.path.join(work, "case", "logits.npy"),
        "photo": os.path.join(work, "chelsea.png"),
        "photo2": os.path.join(work, "astronaut.jpg"),
        "missing": os.path.join(work, "no_such_file.png"),
        "random": os.path.join(work, "random_bytes.pola"),
        "text": os.path.join(work, "notes.txt"),
        "wrong_shape": os.path.join(work, "wrong_shape.npy"),
    }
    skimage.io.imsave(f["photo"], skimage.data.chelsea(), check_contrast=False)
    skimage.io.imsave(f["photo2"], skimage.data.astronaut(), check_contrast=False)
    with open(f["random"], "wb") as out:
        out.write(np.random.default_rng(seed).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    with open(f["text"], "w") as out:
        out.write("not an image\n")
    np.save(f["wrong_shape"], np.zeros((1, 3, 10, 10), np.float32))
    return f
