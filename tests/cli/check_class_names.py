#!/usr/bin/python3
"""One strictness for a model file's class names, whichever way the file is opened.

A model file whose `classes` metadata does not hold exactly `num_classes` names (or holds a
non-string) is refused, with the file named, by every reader: `pola info`, `pola classify`,
`pola run`, `pola bench`, `pola attention-map`, and the C API's pola_model_load. (The engine
once fell back to made-up names "class_N" where `pola info` refused the file.)

The files are the shipped Fashion-MNIST PVT with its metadata rewritten here by the independent
safetensors writer of tests/reference (no torch needed).

  /usr/bin/python3 check_class_names.py --pola build/apps/pola --capi build/engine/api/libpolaformer.so
"""
import argparse
import ctypes
import glob
import json
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import model_integrity  # noqa: E402  (re-seals edited files: format version 2)
import safetensors_io  # noqa: E402
from cli_fixtures import check, exit_status, pola, process_detail  # noqa: E402

MODELS = os.path.join(HERE, "..", "..", "models")


def with_classes(src, dst, classes_text):
    tensors, meta = safetensors_io.load_file(src)
    model_integrity.save_model_file(dst, tensors, dict(meta, classes=classes_text))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pola", required=True)
    ap.add_argument("--capi", help="libpolaformer.so; its pola_model_load is checked too")
    args = ap.parse_args()
    src = os.path.join(MODELS, "fashion_pola_pvt.pola")
    image = sorted(glob.glob(os.path.join(MODELS, "samples", "*.png")))[0]
    _, meta = safetensors_io.load_file(src)
    names = json.loads(meta["classes"])
    with tempfile.TemporaryDirectory(prefix="pola_classes_") as tmp:
        x = os.path.join(tmp, "x.npy")
        np.save(x, np.zeros((1, 1, 32, 32), np.float32))
        cases = {
            "one name short": json.dumps(names[:-1]),
            "one name too many": json.dumps(names + ["extra"]),
            "a non-string name": json.dumps(names[:-1] + [7]),
        }
        for label, text in cases.items():
            model = os.path.join(tmp, label.replace(" ", "_") + ".pola")
            with_classes(src, model, text)
            commands = {
                "info": ["info", model],
                "classify": ["classify", "-m", model, image],
                "run": ["run", "-m", model, "-i", x, "-o", os.path.join(tmp, "logits.npy")],
                "bench": ["bench", "-m", model, "--runs", "1", "--warmup", "0"],
                "attention-map": ["attention-map", "-m", model, image, "--block", "block1.0", "--query", "1,1",
                                  "-o", os.path.join(tmp, "map.png")],
            }
            for name, argv in commands.items():
                r = pola(args, *argv, timeout=300)
                check(r.returncode == 1 and model in r.stderr and "metadata 'classes'" in r.stderr,
                      f"{label}: pola {name} refuses the file, naming it and 'classes'", process_detail(r))
            if args.capi:
                lib = ctypes.CDLL(args.capi)
                lib.pola_last_error.restype = ctypes.c_char_p
                handle = ctypes.c_void_p()
                status = lib.pola_model_load(model.encode(), None, ctypes.byref(handle))
                err = (lib.pola_last_error() or b"").decode()
                check(status == 1 and model in err and "metadata 'classes'" in err,
                      f"{label}: pola_model_load returns POLA_ERROR_INPUT naming the file", f"{status}: {err}")
        # The file as shipped still loads everywhere.
        r = pola(args, "classify", "-m", src, image, timeout=300)
        check(r.returncode == 0, "the shipped model (10 names for 10 classes) classifies", process_detail(r))
    if exit_status():
        sys.exit(1)
    print("all class-name checks passed")


if __name__ == "__main__":
    main()
