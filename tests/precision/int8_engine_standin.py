#!/usr/bin/python3
"""A stand-in for `pola` (quantize, run, eval) made of the Python reference, computing in float32
as the engine does: it exercises check_int8_logits.py and check_int8_fashion.py before the engine
has int8, and with STANDIN_BREAK set it commits one mistake, to show that those checks fail.

  int8_engine_standin.py quantize --model M --calibration DATA -o OUT [--images 256] [--split train]
  int8_engine_standin.py run -m M -i X.npy -o Y.npy [--precision fp32|int8] [--dump-dir D]
  int8_engine_standin.py eval -m M --data DIR [--split t10k] [--limit N] [--precision P]
                              [--json] [--predictions OUT.csv]

quantize: int8_quantize.quantize_file with float32 calibration runs (as the engine's fp32 plan).
run: float files in float32; int8 files at fp32 as float_activations, at int8 as the static
fake quantization, in float32 (so roundings near ties fall as they may); --dump-dir writes the
named intermediates of dump_names.py as (B, N, C) float32.
STANDIN_BREAK: int8_as_fp32 (int8 runs quantize no activation), scale_off_by_one_step,
per_tensor_weights (the int8_fake_quant traps), input_scale_x2 (quantize writes twice max|x|/127),
weights_truncated (quantize rounds weights toward zero).
"""
import argparse
import csv
import gzip
import json
import os
import struct
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, os.path.join(HERE, "..", "training"))

import int8_fake_quant  # noqa: E402
import int8_quantize  # noqa: E402
import safetensors_io  # noqa: E402
from polaformer_ref import build_model, run  # noqa: E402

BREAK = os.environ.get("STANDIN_BREAK", "")


def is_int8(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        return '"I8"' in f.read(n).decode()


def logits_of(path, x, precision, dump=False):
    if is_int8(path):
        qm = int8_fake_quant.QuantizedModel(path)
        mode = "static" if precision == "int8" and BREAK != "int8_as_fp32" else "float_activations"
        traps = [BREAK] if precision == "int8" and BREAK in int8_fake_quant.INT8_TRAPS else []
        return qm.logits(x, mode=mode, traps=traps, dtype=torch.float32, dump=dump)
    if precision == "int8":
        sys.exit("standin: --precision int8 needs a file with I8 weights")
    tensors, meta = safetensors_io.load_file(path)
    model = build_model(json.loads(meta["config"]))
    model.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=False)
    logits, dumps = run(model, torch.from_numpy(x), dtype=torch.float32, dump=dump)
    logits = logits.to(torch.float64).numpy()
    return (logits, {k: v.numpy() for k, v in dumps.items()}) if dump else logits


def quantize(args):
    if BREAK == "input_scale_x2":
        original = int8_quantize.input_scale_of
        int8_quantize.input_scale_of = lambda amax: original(2 * amax)
    if BREAK == "weights_truncated":
        def truncated(w):
            q, s = int8_fake_quant.quantize_weight(w)
            t = np.trunc(w.astype(np.float64) / s.astype(np.float64)[:, None])
            return np.clip(t, -127, 127).astype(np.int8), s
        int8_quantize.quantize_weight = truncated
    int8_quantize.quantize_file(args.model, args.output, args.calibration, args.images, args.split,
                                dtype=torch.float32)


def run_command(args):
    x = np.load(args.input).astype(np.float32)
    if args.dump_dir:
        logits, dumps = logits_of(args.model, x, args.precision, dump=True)
        os.makedirs(args.dump_dir, exist_ok=True)
        for name, a in dumps.items():
            np.save(os.path.join(args.dump_dir, name + ".npy"), np.asarray(a, np.float32))
    else:
        logits = logits_of(args.model, x, args.precision)
    np.save(args.output, logits.astype(np.float32))


def eval_command(args):
    from fashion_reference import preprocess_pixels
    images = int8_quantize.read_idx_images(args.data, args.split)
    labels = None
    for name in (f"{args.split}-labels-idx1-ubyte.gz", f"{args.split}-labels-idx1-ubyte"):
        path = os.path.join(args.data, name)
        if os.path.exists(path):
            with (gzip.open if name.endswith(".gz") else open)(path, "rb") as f:
                blob = f.read()
            (count,) = struct.unpack(">I", blob[4:8])
            labels = np.frombuffer(blob, np.uint8, offset=8, count=count).astype(np.int64)
    n = args.limit or len(labels)
    _, meta = safetensors_io.load_file(args.model)
    x = preprocess_pixels(images[:n], json.loads(meta["preprocess"]))
    start = time.time()
    logits = np.concatenate([logits_of(args.model, x[i:i + 500], args.precision) for i in range(0, n, 500)])
    top1 = logits.argmax(1)
    if args.predictions:
        with open(args.predictions, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["index", "label", "top1"])
            w.writerows([i, int(labels[i]), int(top1[i])] for i in range(n))
    report = {"images": n, "top1_accuracy": float((top1 == labels[:n]).mean()),
              "images_per_second": n / (time.time() - start)}
    print(json.dumps(report) if args.json else report)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    q = sub.add_parser("quantize")
    q.add_argument("--model", "-m", required=True)
    q.add_argument("--calibration", required=True)
    q.add_argument("-o", "--output", required=True)
    q.add_argument("--images", type=int, default=256)
    q.add_argument("--split", default="train")
    q.add_argument("--threads", type=int, default=2)
    r = sub.add_parser("run")
    r.add_argument("--model", "-m", required=True)
    r.add_argument("--input", "-i", required=True)
    r.add_argument("--output", "-o", required=True)
    r.add_argument("--precision", default="fp32")
    r.add_argument("--threads", type=int, default=2)
    r.add_argument("--dump-dir")
    e = sub.add_parser("eval")
    e.add_argument("--model", "-m", required=True)
    e.add_argument("--data", "-d", required=True)
    e.add_argument("--split", default="t10k")
    e.add_argument("--limit", type=int, default=0)
    e.add_argument("--precision", default="fp32")
    e.add_argument("--threads", type=int, default=2)
    e.add_argument("--json", action="store_true")
    e.add_argument("--predictions")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    {"quantize": quantize, "run": run_command, "eval": eval_command}[args.command](args)


if __name__ == "__main__":
    main()
