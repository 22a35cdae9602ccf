#!/usr/bin/python3
"""What a new user sees when they get the command line wrong, and `pola --version`.

- an unknown subcommand names itself and the nearest command ("did you mean");
- an unknown option names itself (not "--model is required") and the nearest option;
- a word where a number goes says it is not a number (not a range error);
- what CLI11 itself refuses (a missing required option, a value out of range, a word that is not
  a choice, an extra argument) is one `pola: error:` line naming the command, in plain words:
  no "Check ... FAILED", no bound printed as a 300-digit number;
- --precision's help is one short line that points to `pola --version`;
- a PyTorch checkpoint, pickle, .npy, image, text or bare safetensors file given as the model is
  named for what it is, with the convert command where one applies;
- `pola help` and `pola help COMMAND` print what --help prints;
- with the shipped model and samples: counts of one read "1 channel", "1 image"; `pola features`
  on a 28x28 sample names `--size 32x32` (the size classify resizes it to) and `--pad`, never the
  non-command "pola --pad";
- every subcommand's --help shows the defaults of options that have one;
- `pola --version` gives the version from CMakeLists.txt, the git revision of the
  source, the compiler, the ISA chosen (and POLA_ISA when it forced one) and the
  oneDNN version of the headers built against.

  /usr/bin/python3 check_cli_messages.py --pola build/apps/pola --source .
"""
import argparse
import os
import re
import subprocess
import sys

from cli_fixtures import check, exit_status, pola, process_detail


def usage_errors(args):
    cases = [  # argv, what stderr must contain (all of it)
        (["clasify", "x.png"], ["unknown command 'clasify'", "did you mean 'classify'"]),
        (["convrt", "a.pth"], ["unknown command 'convrt'", "did you mean 'convert'"]),
        (["frobnicate"], ["unknown command 'frobnicate'"]),
        (["classify", "--modle", "m.pola", "x.png"], ["unknown option '--modle'", "did you mean '--model'"]),
        (["info", "--jsn", "m.pola"], ["unknown option '--jsn'", "did you mean '--json'"]),
        (["--verzion"], ["unknown option '--verzion'", "did you mean '--version'"]),
        (["classify", "-m", "m.pola", "--threads", "abc", "x.png"], ["--threads", "'abc' is not a whole number"]),
        (["classify", "-m", "m.pola", "--threads=two", "x.png"], ["--threads", "'two' is not a whole number"]),
        (["classify", "-m", "m.pola", "-tfour", "x.png"], ["-t", "'four' is not a whole number"]),
        (["bench", "-m", "m.pola", "--runs", "1.5"], ["--runs", "'1.5' is not a whole number"]),
    ]
    for argv, needles in cases:
        r = pola(args, *argv)
        ok = r.returncode == 1 and all(n in r.stderr for n in needles) and "internal error" not in r.stderr
        if "frobnicate" in argv:  # nothing is near it: no suggestion made up
            ok = ok and "did you mean" not in r.stderr
        check(ok, f"pola {' '.join(argv)} -> exit 1 naming {needles}", process_detail(r))
    cli11_cases = [  # refused by CLI11's parsing: argv, what stderr must contain
        (["run", "-m", "m.pola", "-i", "x.npy", "-o", "y.npy", "--precision", "fp16"],
         ["pola run", "--precision", "'fp16'", "fp32, bf16, int8 or auto"]),
        (["eval", "-m", "m.pola", "-d", "data", "--limit", "-1"], ["pola eval", "--limit", "-1", "at least 0"]),
        (["classify", "-m", "m.pola", "--batch", "5000", "x.png"], ["--batch", "5000", "1..4096"]),
        (["convert", "a.pth", "-o", "b.pola", "--dtype", "f16"], ["--dtype", "'f16'", "f32", "bf16"]),
        (["classify", "x.png"], ["pola classify", "--model", "required"]),
        (["run", "-m", "m.pola", "-o", "y.npy"], ["pola run", "--input", "required"]),
        (["run", "-m"], ["--model needs a value"]),
        (["run", "-m", "m.pola", "-i", "x.npy", "-o", "y.npy", "extra"], ["unexpected argument 'extra'"]),
    ]
    for argv, needles in cli11_cases:
        r = pola(args, *argv)
        lines = r.stderr.strip().splitlines()
        ok = (r.returncode == 1 and len(lines) == 1 and lines[0].startswith("pola: error: ")
              and all(n in r.stderr for n in needles)
              and not re.search(r"FAILED|Check |\d{13,}|Run with --help", r.stderr))
        check(ok, f"pola {' '.join(argv)} -> one 'pola: error:' line naming {needles}", process_detail(r))
    # Negative numbers and '-' are values, not options.
    r = pola(args, "classify", "-m", "missing.pola", "-k", "-3", "x.png")
    check(r.returncode == 1 and "unknown option" not in r.stderr,
          "a negative number is a value (range error, not 'unknown option')", process_detail(r))
    r = pola(args)
    check(r.returncode == 1 and "Usage: pola" in r.stderr, "bare `pola` prints the usage and exits 1",
          process_detail(r))


def non_model_files(args):
    """Files users pass where a model belongs: each is named for what it is."""
    import json
    import pickle
    import struct
    import tempfile

    import numpy as np
    import torch
    d = tempfile.mkdtemp(prefix="pola_kinds_")
    paths = {k: os.path.join(d, k)
             for k in ("ckpt.pth", "legacy.pth", "array.npy", "photo.png", "plain.safetensors", "notes.txt",
                       "lfs.pola")}
    with open(paths["notes.txt"], "w") as f:
        f.write("not an image\nand not a model either\n")
    with open(paths["lfs.pola"], "w") as f:  # what a clone without git-lfs holds in place of a model
        f.write("version https://git-lfs.github.com/spec/v1\noid sha256:" + "ab" * 32 + "\nsize 3443344\n")
    torch.save({"model": {"head.weight": torch.zeros(2, 2)}}, paths["ckpt.pth"])
    with open(paths["legacy.pth"], "wb") as f:
        pickle.dump({"head.weight": [0.0]}, f, protocol=2)
    np.save(paths["array.npy"], np.zeros((1, 3, 8, 8), np.float32))
    with open(paths["photo.png"], "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + bytes(64))
    header = json.dumps({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(paths["plain.safetensors"], "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + bytes(4))
    expected = {
        "ckpt.pth": ["PyTorch checkpoint", "pola convert " + paths["ckpt.pth"] + " -o MODEL.pola"],
        "legacy.pth": ["pickle", "pola convert"],
        "array.npy": ["NumPy array"],
        "photo.png": ["PNG image"],
        "plain.safetensors": ["safetensors file without PolaFormer metadata", "pola convert"],
        "notes.txt": ["text file, not a model file"],
        "lfs.pola": ["Git LFS pointer", "git lfs pull"],
    }
    for name, needles in expected.items():
        for argv in (["info", paths[name]], ["classify", "-m", paths[name], paths["photo.png"]]):
            r = pola(args, *argv)
            ok = (r.returncode == 1 and paths[name] in r.stderr and all(n in r.stderr for n in needles)
                  and "header length" not in r.stderr)
            check(ok, f"pola {argv[0]} with {name} as the model says {needles}", process_detail(r))


def help_command(args):
    for argv in ([], ["classify"], ["eval"]):
        want, got = pola(args, *argv, "--help"), pola(args, "help", *argv)
        check(got.returncode == 0 and want.returncode == 0 and got.stdout == want.stdout and "Usage: pola" in got.stdout,
              f"pola help {' '.join(argv)} prints what pola {' '.join(argv)} --help prints", process_detail(got))
    r = pola(args, "help", "clasify")
    check(r.returncode == 1 and r.stderr.startswith("pola: error: ") and "did you mean 'classify'" in r.stderr,
          "pola help clasify -> exit 1, did you mean 'classify'", process_detail(r))


def shipped_model_messages(args):
    import tempfile
    models = os.path.join(args.source, "models")
    model, sample = os.path.join(models, "fashion_pola_pvt.pola"), os.path.join(models, "samples", "0018_bag.png")
    r = pola(args, "info", model)
    line = next((ln for ln in r.stdout.splitlines() if ln.split()[:1] == ["input"]), "")
    check(r.returncode == 0 and line.rstrip().endswith(", 1 channel"), "info of a grey model: '1 channel'",
          process_detail(r))
    r = pola(args, "classify", "-m", model, sample, "--verbose")
    check(r.returncode == 0 and re.search(r"\b1 image\b", r.stderr) and "1 images" not in r.stderr,
          "classify --verbose of one image: '1 image'", process_detail(r))
    with tempfile.TemporaryDirectory(prefix="pola_msgs_") as d:
        labels = os.path.join(d, "labels.txt")
        with open(labels, "w") as f:
            f.write("0018_bag.png\tBag\n")
        r = pola(args, "eval", "-m", model, "-d", os.path.dirname(sample), "--labels", labels)
        check(r.returncode == 0 and "(1 image under" in r.stdout and "1 images" not in r.stdout,
              "eval of a one-line labels file: '1 image'", process_detail(r))
        r = pola(args, "features", "-m", model, sample, "-o", os.path.join(d, "features"))
        check(r.returncode == 1 and r.stderr.startswith("pola: error: " + sample) and "--size 32x32" in r.stderr
              and "--pad" in r.stderr and "pola --pad" not in r.stderr,
              "features on a 28x28 sample suggests --size 32x32 and --pad", process_detail(r))
        r = pola(args, "features", "-m", model, sample, "--size", "32x32", "-o", os.path.join(d, "features"))
        check(r.returncode == 0, "... and --size 32x32 works", process_detail(r))


def help_defaults(args):
    r = pola(args, "classify", "--help")
    check(r.returncode == 0 and re.search(r"--top\b.*=5", r.stdout) and re.search(r"--batch\b.*=8", r.stdout),
          "classify --help shows --top's default (5) and --batch's (8)", process_detail(r))
    for command in ("run", "classify", "eval", "bench", "features"):
        r = pola(args, command, "--help")
        line = next((ln for ln in r.stdout.splitlines() if ln.lstrip().startswith("--precision")), "")
        description = line.split("PRECISION", 1)[-1].strip()
        check(r.returncode == 0 and line and "pola --version" in description and len(description) <= 120,
              f"{command} --help: --precision is one line of at most 120 characters pointing to pola --version",
              f"{len(description)} characters: {line!r}")
    r = pola(args, "bench", "--help")
    check(r.returncode == 0 and re.search(r"--runs\b.*=\d+", r.stdout), "bench --help shows defaults", process_detail(r))


def version(args):
    cmake = open(os.path.join(args.source, "CMakeLists.txt")).read()
    want_version = re.search(r"project\(polaformer VERSION (\S+)", cmake).group(1)
    header = open("/usr/include/oneapi/dnnl/dnnl_version.h").read()
    want_dnnl = ".".join(re.search(rf"#define DNNL_VERSION_{p} (\d+)", header).group(1)
                         for p in ("MAJOR", "MINOR", "PATCH"))
    rev = subprocess.run(["git", "-C", args.source, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    r = pola(args, "--version")
    out = r.stdout
    check(r.returncode == 0 and out.startswith(f"pola {want_version}\n"), f"--version: first line 'pola {want_version}'",
          process_detail(r))
    if rev.returncode == 0:
        check(f"revision  {rev.stdout.strip()}" in out, f"--version: revision {rev.stdout.strip()}", process_detail(r))
    check(re.search(r"compiler  (gcc|clang) \d+\.\d+", out) is not None, "--version: compiler named",
          process_detail(r))
    check(f"oneDNN    {want_dnnl}" in out, f"--version: oneDNN {want_dnnl}", process_detail(r))
    check(re.search(r"isa       (scalar|avx2|avx512|avx512_bf16|amx_bf16) ", out) is not None, "--version: the chosen ISA",
          process_detail(r))
    forced = pola(args, "--version", env={"POLA_ISA": "scalar"})
    check("isa       scalar (POLA_ISA=scalar)" in forced.stdout, "--version under POLA_ISA=scalar says scalar and why",
          process_detail(forced))
    check(re.search(r"cache     L1d [1-9]\d* KB per core, ", out) is not None, "--version: the L1d size the kernels use",
          process_detail(r))
    l1d = pola(args, "--version", env={"POLA_L1D_BYTES": "48K"})
    check("cache     L1d 48 KB per core (POLA_L1D_BYTES=48K)" in l1d.stdout,
          "--version under POLA_L1D_BYTES=48K says 48 KB and why", process_detail(l1d))
    bad = pola(args, "--version", env={"POLA_L1D_BYTES": "48KB"})
    check("POLA_L1D_BYTES=48KB is not a size" in bad.stderr and "(POLA_L1D_BYTES" not in bad.stdout,
          "--version under a bad POLA_L1D_BYTES names it on stderr and uses the detected size", process_detail(bad))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pola", required=True)
    p.add_argument("--source", required=True)
    args = p.parse_args()
    usage_errors(args)
    non_model_files(args)
    help_command(args)
    shipped_model_messages(args)
    help_defaults(args)
    version(args)
    if exit_status():
        sys.exit(1)
    print("all command-line message checks passed")


if __name__ == "__main__":
    main()
