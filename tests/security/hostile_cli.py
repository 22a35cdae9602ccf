#!/usr/bin/python3
"""Hostile inputs across the `pola` CLI: every case must end in exit code 1 with a
"pola: error:" message, within a time limit, under an address-space limit (so a huge
allocation fails the case instead of swapping), with no sanitizer report, no output file
left behind and nothing run from a pickle.

  hostile_cli.py --pola build/apps/pola [--as-limit-mb 4096] [--timeout 60] [-k FILTER]

--as-limit-mb 0 disables the address-space limit (needed for AddressSanitizer builds,
which reserve terabytes of shadow memory; there ASan's own allocation limit takes over).
The unit-level refusals of weights/ are in tests/weights; this table covers what reaches
the command line: run, info, convert, preprocess and classify.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_inputs as H  # noqa: E402

PWNED = "/tmp/pola_security_pwned"


def model_cases():
    """(name, bytes) of model files `pola run` / `pola info` / `pola classify` must refuse."""
    pvt = H.seed("model_file", "tiny_pvt.pola")
    cases = [("empty", b""), ("random 4 kB", H.random_bytes(4096, 1)),
             ("random after a small header length", b"\x40" + b"\0" * 7 + H.random_bytes(200, 2))]
    for cut in (1, 7, 8, 9, 100, 1000, len(pvt) // 2, len(pvt) - 4, len(pvt) - 1):
        cases.append((f"truncated at {cut}", pvt[:cut]))
    n = len(pvt)
    cases += [
        ("header length 2^64-1", b"\xff" * 8 + pvt[8:]),
        ("header length past the end", (n).to_bytes(8, "little") + pvt[8:]),
        ("header length 99 MB, file small", (99 << 20).to_bytes(8, "little") + pvt[8:]),
        ("tensor offsets outside the file", H.model_with_header_edit(
            "tiny_pvt.pola", lambda h: h["head.bias"].update(data_offsets=[n * 4, n * 4 + 20]))),
        ("tensor begin > end", H.model_with_header_edit(
            "tiny_pvt.pola", lambda h: h["head.bias"].update(data_offsets=[20, 0]))),
        ("absurd shape, zero bytes", H.model_with_header_edit(
            "tiny_pvt.pola", lambda h: h["head.bias"].update(shape=[2 ** 62, 4, 0]))),
        ("shape product overflows", H.model_with_header_edit(
            "tiny_pvt.pola", lambda h: h["head.bias"].update(shape=[2 ** 40, 2 ** 40]))),
        ("rank 40 tensor", H.model_with_header_edit(
            "tiny_pvt.pola", lambda h: h["head.bias"].update(shape=[1] * 39 + [h["head.bias"]["shape"][0]]))),
        ("F16 tensor in a model file", H.model_with_header_edit(
            "tiny_pvt.pola", lambda h: h["head.bias"].update(dtype="F16"))),
        ("extra tensor", H.model_with_header_edit(
            "tiny_pvt.pola", lambda h: h.update({"evil": dict(h["head.bias"])}))),
        ("missing tensor", H.model_with_header_edit("tiny_pvt.pola", lambda h: h.pop("head.weight"))),
        ("format is not polaformer", H.model_with_metadata("tiny_pvt.pola", format="gguf")),
        ("format_version 99", H.model_with_metadata("tiny_pvt.pola", format_version="99")),
        ("no config", H.model_with_metadata("tiny_pvt.pola", config=None)),
        ("config is not JSON", H.model_with_metadata("tiny_pvt.pola", config="{'family': 'pvt'")),
        ("config is a list", H.model_with_metadata("tiny_pvt.pola", config="[1, 2]")),
        ("config deeply nested", H.model_with_metadata("tiny_pvt.pola", config="[" * 100000 + "]" * 100000)),
        ("family unknown", H.model_with_config("tiny_pvt.pola", family="resnet")),
        ("huge dims, small tensors", H.model_with_config("tiny_pvt.pola", embed_dims=[65536] * 4, num_heads=[1] * 4)),
        ("num_classes 10^6, tiny head", H.model_with_config("tiny_pvt.pola", num_classes=1000000)),
        ("num_classes 2^40", H.model_with_config("tiny_pvt.pola", num_classes=2 ** 40)),
        ("depth 1000", H.model_with_config("tiny_pvt.pola", depths=[1000] * 4)),
        ("depth -1", H.model_with_config("tiny_pvt.pola", depths=[-1, 1, 1, 1])),
        ("9 stages", H.model_with_config("tiny_pvt.pola", depths=[1] * 9)),
        ("img_size 4096", H.model_with_config("tiny_pvt.pola", img_size=4096)),
        ("img_size 0", H.model_with_config("tiny_pvt.pola", img_size=0)),
        ("img_size as float", H.model_with_config("tiny_pvt.pola", img_size=16.5)),
        ("alpha NaN", H.model_with_config_text("tiny_pvt.pola", lambda t: t.replace('"alpha": 4', '"alpha": NaN'))),
        ("alpha 1e999", H.model_with_config_text("tiny_pvt.pola", lambda t: t.replace('"alpha": 4', '"alpha": 1e999'))),
        ("patch size 0", H.model_with_config("tiny_pvt.pola", patch_sizes=[0, 2, 2, 2])),
        ("sr_ratio larger than the stage", H.model_with_config("tiny_pvt.pola", sr_ratios=[64, 1, 1, 1])),
        ("heads do not divide dims", H.model_with_config("tiny_pvt.pola", num_heads=[3, 2, 2, 2])),
        ("PVT config on Swin tensors", H.model_with_config(
            "tiny_swin.pola", family="pvt", patch_sizes=[4, 2, 2, 2], sr_ratios=[1, 1, 1, 1],
            attn_types=["L"] * 4)),
        ("Swin window 1024 on tiny tensors", H.model_with_config("tiny_swin.pola", window_size_softmax=1024,
                                                                 img_size=4096)),
        ("Swin windows of one token, 2^30 tokens: 100 GB of activations", H.swin_one_token_windows()),
        ("Swin softmax window 256: a 1 MB table expanding to 17 GB", H.swin_huge_softmax_window()),
    ]
    return cases


def npy_cases():
    """(name, bytes) of inputs `pola run` must refuse (the model is tiny_pvt: (B, 3, 16, 16))."""
    good = H.npy_array(np.zeros((1, 3, 16, 16), np.float32))
    cases = [("empty", b""), ("random", H.random_bytes(500, 3)), ("bad magic", b"\x93NUMPZ" + good[6:])]
    for cut in (5, 9, 11, 40, 127, 128, 129, len(good) - 1):
        cases.append((f"truncated at {cut}", good[:cut]))
    body = np.zeros((1, 3, 16, 16), np.float32).tobytes()
    cases += [
        ("header length past the end", good[:8] + b"\xff\xff" + good[10:]),
        ("version 2 header length 4 GB", b"\x93NUMPY\x02\x00\xff\xff\xff\xff" + good[12:]),
        ("version 9", b"\x93NUMPY\x09\x00" + good[8:]),
        ("absurd shape", H.npy("{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000, 3, 16, 16), }", body)),
        ("shape overflows 64 bits", H.npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }")),
        ("dimension beyond 2^63", H.npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }")),
        ("negative dimension", H.npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3, 16, 16), }", body)),
        ("17 dimensions", H.npy("{'descr': '<f4', 'fortran_order': False, 'shape': (" + "1, " * 17 + "), }")),
        # real dtypes in either byte order, and Fortran order, are converted (as Model.run does); these are not
        ("complex64", H.npy_array(np.zeros((1, 3, 16, 16), np.complex64))),
        ("bool", H.npy_array(np.zeros((1, 3, 16, 16), bool))),
        ("object dtype code", H.npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", b"\0" * 8)),
        ("float64 data of float32 size", H.npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 3, 16, 16), }", body)),
        ("fortran order, data short", H.npy("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 3, 16, 16), }", body[:-4])),
        ("python call in the header", H.npy("{'descr': __import__('os').system('touch " + PWNED + "'), "
                                            "'fortran_order': False, 'shape': (1, 3, 16, 16), }", body)),
        ("missing shape", H.npy("{'descr': '<f4', 'fortran_order': False, }", body)),
        ("duplicate key", H.npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 16, 16), }", body)),
        ("unterminated string", H.npy("{'descr': '<f4, 'fortran_order': False, 'shape': (1, 3, 16, 16), }", body)),
        ("data shorter than the shape", H.npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 16, 16), }", body[:-4])),
        ("data longer than the shape", H.npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 16, 16), }", body + b"\0" * 4)),
        ("wrong image size", H.npy_array(np.zeros((1, 3, 15, 16), np.float32))),
        ("wrong channels", H.npy_array(np.zeros((1, 1, 16, 16), np.float32))),
        ("rank 3", H.npy_array(np.zeros((3, 16, 16), np.float32))),
        ("batch 0", H.npy_array(np.zeros((0, 3, 16, 16), np.float32))),
        ("batch 5000", H.npy("{'descr': '<f4', 'fortran_order': False, 'shape': (5000, 3, 16, 16), }", body * 5000)),
    ]
    return cases


def checkpoint_cases():
    """(name, bytes) of checkpoints `pola convert` must refuse."""
    bare = H.seed("checkpoint", "tiny_pvt_bare.pth")
    st = H.seed("checkpoint", "tiny_pvt.safetensors")
    cases = [("empty", b""), ("random", H.random_bytes(3000, 4)), ("zip signature then random", b"PK\3\4" + H.random_bytes(3000, 5))]
    for cut in (4, 30, 1000, len(bare) // 2, len(bare) - 22, len(bare) - 1):
        cases.append((f"torch zip truncated at {cut}", bare[:cut]))
    for cut in (8, 9, 100, len(st) // 2, len(st) - 1):
        cases.append((f"safetensors truncated at {cut}", st[:cut]))
    marker_cmd = "touch " + PWNED
    cases += [
        ("safetensors header length 2^64-1", b"\xff" * 8 + b"{" + st[9:]),
        ("safetensors offsets outside the file", H.join_safetensors(
            *_edit(H.split_safetensors(st), lambda h: next(v for k, v in h.items() if k != "__metadata__")
                   .update(data_offsets=[len(st), len(st) + 4])))),
        ("zip without data.pkl", H.torch_zip(b"").replace(b"archive/data.pkl", b"archive/data.pkx")),
        ("legacy torch.save (bare pickle)", b"\x80\x02}q\x00."),
        ("pickle calls os.system", H.torch_zip(H.pickle_calling(os.system, (marker_cmd,)))),
        ("pickle calls builtins.exec", H.torch_zip(H.pickle_calling(exec, ("open('" + PWNED + "', 'w')",)))),
        ("pickle calls subprocess.Popen", H.torch_zip(H.pickle_calling(subprocess.Popen, (["touch", PWNED],)))),
        ("pickle root is os.system(...)", H.torch_zip(H.pickle.dumps(H._Calls(os.system, (marker_cmd,)), protocol=2))),
        ("pickle nested 100000 lists deep", H.torch_zip(H.deep_list_pickle(100000))),
        ("pickle with 100000 open MARKs", H.torch_zip(H.deep_mark_pickle(100000))),
        ("pickle larger than it deflates (zip bomb)", H.zip_bomb_pickle()),
        ("tensor view past its storage", H.torch_zip(_tensor_pickle(numel=4, size=(1000,)), {"0": b"\0" * 16})),
        ("storage smaller than claimed", H.torch_zip(_tensor_pickle(numel=1000, size=(1000,)), {"0": b"\0" * 16})),
        ("storage claims 2^60 elements", H.torch_zip(_tensor_pickle(numel=2 ** 60, size=(4,)), {"0": b"\0" * 16})),
        ("not a PolaFormer checkpoint", H.seed("checkpoint", "views.pth")),
        ("a .npy array is not a checkpoint", H.seed("npy", "nchw_f32.npy")),
        ("block index 999999 (depth a million)", H.safetensors_checkpoint_with({"block1.999999.norm1.weight": np.zeros(4)})),
        ("attn_mask with 2^62 windows", _swin_with_mask_shape([2 ** 62, 2 ** 62, 0])),
    ]
    return cases


def _edit(header_body, fn):
    header, body = header_body
    fn(header)
    return header, body


def _tensor_pickle(numel, size):
    """A state dict {'patch_embed1.proj.weight': tensor} whose storage '0' claims `numel` floats."""
    # Written by hand: protocol 2 opcodes for {'w': _rebuild_tensor_v2(pid, 0, size, stride, False, {})}.
    def s(text):
        b = text.encode()
        return b"X" + len(b).to_bytes(4, "little") + b

    stride, acc = [], 1
    for d in reversed(size):
        stride.insert(0, acc)
        acc *= d
    tup = lambda xs: b"(" + b"".join(b"\x8a\x08" + x.to_bytes(8, "little", signed=True) for x in xs) + b"t"
    pid = b"(" + s("storage") + b"ctorch\nFloatStorage\n" + s("0") + s("cpu") + b"\x8a\x08" + numel.to_bytes(8, "little") + b"tQ"
    call = b"ctorch._utils\n_rebuild_tensor_v2\n(" + pid + b"K\x00" + tup(size) + tup(stride) + b"\x89}tR"
    return b"\x80\x02}" + s("patch_embed1.proj.weight") + call + b"s."


def _swin_with_mask_shape(shape):
    """The tiny Swin checkpoint with its first attn_mask given `shape` and no data (numpy cannot
    even create such an array; a zero dimension makes it hold zero bytes)."""
    header, body = H.split_safetensors(H.seed("checkpoint", "tiny_swin.safetensors"))
    key = next(k for k in header if k.endswith("attn_mask"))
    begin = header[key]["data_offsets"][0]
    header[key].update(shape=shape, data_offsets=[begin, begin])
    return H.join_safetensors(header, body)


def image_cases():
    """(name, bytes) of images `pola preprocess` / `pola classify` must refuse."""
    png = H.seed("image", "rgb.png")
    jpg = H.seed("image", "rgb.jpg")
    cases = [("empty", b""), ("random", H.random_bytes(2000, 6))]
    for cut in (8, 20, 33, len(png) // 2, len(png) - 13):
        cases.append((f"png truncated at {cut}", png[:cut]))
    for cut in (2, 20, len(jpg) // 2):
        cases.append((f"jpeg truncated at {cut}", jpg[:cut]))
    cases += [
        ("png 2^31-1 x 2^31-1 header", H.png_header_only(2 ** 31 - 1, 2 ** 31 - 1)),
        ("png 0 x 5 header", H.png_header_only(0, 5)),
        ("png 16-bit 40000 x 40000 header", H.png_header_only(40000, 40000, depth=16)),
        ("png 20000 x 20000 of zeros (decompression bomb)", H.png_bomb()),
        ("jpeg 65535 x 65535 header", H.jpeg_header_only(65535, 65535)),
        ("jpeg 0 x 0 header", H.jpeg_header_only(0, 0)),
        ("bmp 100000 x -100000", H.bmp_header(100000, -100000)),
        ("bmp width -1", H.bmp_header(-1, 10)),
        ("bmp 32768 x 32768 x 32 bpp", H.bmp_header(32768, 32768, 32)),
        ("gif 65535 x 65535", H.gif_header(65535, 65535)),
        ("ppm 100000 x 100000", b"P6\n100000 100000\n255\n" + b"\0" * 30),
        ("ppm maxval 0", b"P6\n2 2\n0\n" + b"\0" * 12),
        ("ppm maxval 70000", b"P6\n2 2\n70000\n" + b"\0" * 24),
        ("ppm dimensions overflow int", b"P6\n99999999999 99999999999\n255\n"),
        ("pgm missing pixels", b"P5\n4 4\n255\n" + b"\0" * 3),
        ("text file", b"these are not the pixels you are looking for\n"),
    ]
    return cases


def bad_preprocess_models():
    base = "tiny_pvt.pola"
    return [
        ("preprocess crop differs from img_size", H.model_with_metadata(base, preprocess=json.dumps(
            {"input_size": 17, "resize": 20, "crop": 17}))),
        ("preprocess resize 10^9", H.model_with_metadata(base, preprocess=json.dumps(
            {"input_size": 16, "resize": 10 ** 9, "crop": 16}))),
        ("preprocess 7 channels", H.model_with_metadata(base, preprocess=json.dumps({"channels": 7}))),
        ("preprocess std 0", H.model_with_metadata(base, preprocess=json.dumps(
            {"input_size": 16, "resize": 18, "crop": 16, "std": [0, 1, 1]}))),
        ("preprocess not JSON", H.model_with_metadata(base, preprocess="{")),
        ("no preprocess", H.model_with_metadata(base, preprocess=None)),
    ]


class Runner:
    """Collects the cases, then runs them on a few worker threads (each case is one process)."""

    def __init__(self, pola, as_limit_mb, timeout, workdir, name_filter):
        self.pola, self.as_limit_mb, self.timeout, self.dir = pola, as_limit_mb, timeout, workdir
        self.filter = name_filter
        self.cases = []

    def file(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def expect_refused(self, label, argv, outputs=()):
        """Queues a case. `outputs` must not exist afterwards; each case gets its own output
        names (tag substituted) so that parallel cases never share a file."""
        if self.filter and self.filter not in label:
            return
        tag = str(len(self.cases))
        argv = [a.replace("@TAG@", tag) for a in argv]
        outputs = [o.replace("@TAG@", tag) for o in outputs]
        self.cases.append((label, argv, outputs))

    def run_one(self, case):
        label, argv, outputs = case
        cmd = [self.pola] + argv
        if self.as_limit_mb:
            cmd = ["prlimit", f"--as={self.as_limit_mb << 20}", "--"] + cmd
        t0 = time.monotonic()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=self.timeout)
            rc, err = r.returncode, r.stderr
        except subprocess.TimeoutExpired:
            rc, err = "timeout", ""
        took = time.monotonic() - t0
        problems = []
        if rc != 1:
            problems.append(f"exit code {rc}, expected 1")
        if "pola: error:" not in err:
            problems.append("no 'pola: error:' message")
        for bad in ("internal error", "Sanitizer", "runtime error", "Traceback", "terminate called"):
            if bad in err:
                problems.append(f"stderr mentions {bad!r}")
        for out in outputs:
            if os.path.exists(out):
                problems.append(f"left {os.path.basename(out)} behind")
        return label, took, err, problems

    def run_all(self, jobs):
        if os.path.exists(PWNED):
            os.remove(PWNED)
        failures, slowest = [], (0.0, "")
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            for label, took, err, problems in pool.map(self.run_one, self.cases):
                slowest = max(slowest, (took, label))
                line = err.strip().splitlines()[-1] if err.strip() else ""
                print(f"{'ok  ' if not problems else 'FAIL'} {took:5.2f}s {label:.78s}\n       {line[:150]}")
                if problems:
                    print("       -> " + "; ".join(problems))
                    if err.strip():
                        print("       stderr: " + err.strip()[-2000:].replace("\n", "\n               "))
                    failures.append(label)
        # Checked once at the end: with parallel cases a marker cannot be pinned on one of them.
        if os.path.exists(PWNED):
            os.remove(PWNED)
            print("FAIL a pickle or .npy header ran code: the marker file " + PWNED + " was created")
            failures.append("code execution")
        print(f"slowest case: {slowest[1]} ({slowest[0]:.2f} s)")
        return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", required=True)
    ap.add_argument("--as-limit-mb", type=int, default=4096)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("-k", dest="filter", default="", help="only cases whose label contains this text")
    ap.add_argument("--jobs", type=int, default=2, help="cases run at the same time")
    args = ap.parse_args()
    if args.as_limit_mb and not shutil.which("prlimit"):
        sys.exit("prlimit (util-linux) not found; pass --as-limit-mb 0 to run without it")
    work = tempfile.mkdtemp(prefix="pola_hostile_")
    try:
        run = Runner(args.pola, args.as_limit_mb, args.timeout, work, args.filter)
        good_model = run.file("good.pola", H.seed("model_file", "tiny_pvt.pola"))
        good_input = run.file("good.npy", H.npy_array(np.zeros((1, 3, 16, 16), np.float32)))
        good_image = run.file("good.png", H.seed("image", "rgb.png"))
        out_npy = os.path.join(work, "out@TAG@.npy")
        out_model = os.path.join(work, "out@TAG@.pola")
        run.expect_refused("run: model is a directory", ["run", "-m", work, "-i", good_input, "-o", out_npy], [out_npy])
        run.expect_refused("run: model does not exist", ["run", "-m", work + "/nope.pola", "-i", good_input, "-o", out_npy], [out_npy])

        models = model_cases()
        for i, (name, data) in enumerate(models):
            m = run.file(f"model{i}.pola", data)
            run.expect_refused("run: model " + name, ["run", "-m", m, "-i", good_input, "-o", out_npy, "-t", "1"], [out_npy])
            run.expect_refused("info: model " + name, ["info", m])
        for i, (name, data) in enumerate(models[:12]):
            m = run.file(f"cmodel{i}.pola", data)
            run.expect_refused("classify: model " + name, ["classify", "-m", m, good_image, "-t", "1"])
        for i, (name, data) in enumerate(bad_preprocess_models()):
            m = run.file(f"pmodel{i}.pola", data)
            run.expect_refused("classify: " + name, ["classify", "-m", m, good_image, "-t", "1"])
        for i, (name, data) in enumerate(npy_cases()):
            x = run.file(f"input{i}.npy", data)
            run.expect_refused("run: input " + name, ["run", "-m", good_model, "-i", x, "-o", out_npy, "-t", "1"], [out_npy])
        for i, (name, data) in enumerate(checkpoint_cases()):
            c = run.file(f"ckpt{i}.pth", data)
            run.expect_refused("convert: " + name, ["convert", c, "-o", out_model], [out_model])
        good_ckpt = run.file("good.pth", H.seed("checkpoint", "tiny_pvt_bare.pth"))
        run.expect_refused("convert: --arch disagrees", ["convert", good_ckpt, "-o", out_model, "--arch", "pola_swin_t"], [out_model])
        run.expect_refused("convert: --arch unknown", ["convert", good_ckpt, "-o", out_model, "--arch", "rm -rf /"], [out_model])
        run.expect_refused("convert: output directory missing", ["convert", good_ckpt, "-o", work + "/no/such/dir/m.pola"])
        for i, (name, data) in enumerate(image_cases()):
            img = run.file(f"image{i}.img", data)
            run.expect_refused("preprocess: " + name, ["preprocess", img, "-o", out_npy], [out_npy])
            run.expect_refused("classify: image " + name, ["classify", "-m", good_model, img, "-t", "1"])
        failures = run.run_all(args.jobs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"FAILED: {len(failures)} of {len(run.cases)} cases")
        return 1
    print(f"OK: {len(run.cases)} hostile inputs refused with exit code 1"
          + (f" under a {args.as_limit_mb} MB address-space limit" if args.as_limit_mb else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
