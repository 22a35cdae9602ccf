#!/usr/bin/python3
"""Guest instructions per image of the aarch64 `pola run`, counted under qemu-user.

  count_instructions.py --model M.pola [--model ...] [--configs own,onednn_ref,scalar]
                        [--batches 1,3] [--build build-arm64] [--threads 1]

Counters (--counter):
  plugin  (default) insn_count_plugin.c, a TCG plugin compiled here, loaded into Debian's dynamic
          `qemu-aarch64` (package qemu-user; Debian's qemu-user-static has no plugin support, and no
          plugin ships): every executed block adds its length inline. Full emulation speed.
  native, python  qemu's own logs, for a qemu without plugins (a few M guest instructions per
          second: hours for pvt_tiny): `-d in_asm,exec,nochain` prints each translated block's instructions once
and a line for every execution of a block (`nochain` makes every execution go through the logger).
Summing the block lengths over the executions is the number of guest instructions retired, on all
threads. The log streams through a pipe, never to disk, into qemu_log_count.cpp (compiled here
with the host's g++; the same rule as count_from_log below, which `--counter python` uses: a few
M log lines per second is too slow for pvt_tiny's billions).
Per image = (count at the larger batch - count at the smaller) / (batch difference): the process
start, the model load and the plan, paid once per run, cancel out.
Configurations (one aarch64 binary, chosen by environment):
  own         NEON kernels, the engine's own fp32 GEMM (the aarch64 default)
  onednn_ref  NEON kernels, oneDNN's GEMMs (its reference loops on NEON: POLA_GEMM_F32=onednn)
  scalar      POLA_ISA=scalar: every kernel its scalar reference, the fp32 GEMM included
Input: random images of the model's input size (seeded), so only the model file is needed.
--self-check counts a loop of known length first (3 instructions per iteration, cross-compiled
here) and refuses to go on unless the count is 3 within 1e-4.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONFIGS = {"own": {}, "onednn_ref": {"POLA_GEMM_F32": "onednn"}, "scalar": {"POLA_ISA": "scalar"}}


def count_from_log(stream):
    """Sum the block lengths over the executions logged in `stream` (qemu -d in_asm,exec,nochain)."""
    length = {}
    total = 0
    pc, n, in_block = None, 0, False
    for raw in stream:
        if raw.startswith(b"Trace "):
            # "Trace 0: 0xHOST [cs_base/PC/flags/cflags] " - the guest PC is the second field.
            guest = raw.split(b"[", 1)[1].split(b"/", 2)[1]
            total += length.get(guest, 0)
        elif raw.startswith(b"IN:"):
            in_block, pc, n = True, None, 0
        elif in_block:
            if raw.startswith(b"0x"):
                if pc is None:
                    pc = int(raw.split(b":", 1)[0], 16)
                n += 1
            elif raw.strip() == b"" and pc is not None:
                length[b"%016x" % pc] = n
                in_block = False
    return total


COUNTER = None  # the compiled qemu_log_count, or None for count_from_log
PLUGIN = None   # the compiled insn_count_plugin.so: counts inside qemu, no log


def build_counter(workdir):
    exe = os.path.join(workdir, "qemu_log_count")
    subprocess.run(["g++", "-O2", "-o", exe, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                          "qemu_log_count.cpp")], check=True)
    return exe


def build_plugin(workdir):
    so = os.path.join(workdir, "insn_count_plugin.so")
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", so, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                           "insn_count_plugin.c")], check=True)
    return so


def plugin_run(program_args, env, workdir):
    """Guest instructions retired by one run under qemu-aarch64 with the counting plugin."""
    out = os.path.join(workdir, "count.txt")
    if os.path.exists(out):
        os.remove(out)
    cmd = ["qemu-aarch64", "-plugin", f"{PLUGIN},out={out}"] + program_args
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if r.returncode != 0 or not os.path.exists(out):
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.decode(errors='replace')[-500:]}")
    with open(out) as f:
        return int(f.read())


def counted_run(program_args, env, workdir):
    """Guest instructions retired by one qemu-user run of program_args."""
    if PLUGIN:
        return plugin_run(program_args, env, workdir)
    fifo = os.path.join(workdir, "qemu.log")
    if os.path.exists(fifo):
        os.remove(fifo)
    os.mkfifo(fifo)
    cmd = ["qemu-aarch64-static", "-d", "in_asm,exec,nochain", "-D", fifo] + program_args
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        with open(fifo, "rb", buffering=1 << 20) as stream:
            if COUNTER:
                total = int(subprocess.run([COUNTER], stdin=stream, capture_output=True, check=True).stdout)
            else:
                total = count_from_log(stream)
        if proc.wait() != 0:
            err.seek(0)
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {err.read().decode(errors='replace')[-500:]}")
    return total


def guest_instructions(args, model, images, env_extra, workdir):
    libdirs = f"{args.root}/usr/lib/aarch64-linux-gnu:{args.root}/lib/aarch64-linux-gnu"
    env = dict(os.environ, QEMU_LD_PREFIX="/usr/aarch64-linux-gnu", LD_LIBRARY_PATH=libdirs, **env_extra)
    out = os.path.join(workdir, "logits.npy")
    return counted_run([os.path.join(args.build, "apps", "pola"), "run", "-m", model, "-i", images, "-o", out,
                        "--threads", str(args.threads)], env, workdir)


LOOP_C = r"""
int main(int argc, char **argv) {
  long n = 1000000L * argc;
  __asm__ volatile("1: subs %0, %0, #1\n\t add x9, x9, #1\n\t b.ne 1b" : "+r"(n) : : "x9", "cc");
  return 0;
}
"""


def self_check(workdir):
    """The counter on a loop of 3 instructions, run for 1 and 3 million iterations: 3 each."""
    src, exe = os.path.join(workdir, "loop.c"), os.path.join(workdir, "loop")
    with open(src, "w") as f:
        f.write(LOOP_C)
    subprocess.run(["aarch64-linux-gnu-gcc", "-O1", "-static", src, "-o", exe], check=True)
    one, three = counted_run([exe], dict(os.environ), workdir), counted_run([exe, "x", "y"], dict(os.environ), workdir)
    per_iteration = (three - one) / 2e6
    print(f"self-check: {per_iteration} instructions per iteration of a 3-instruction loop")
    # A few instructions of start-up differ with the argument count (libc walks argv).
    return abs(per_iteration - 3.0) < 1e-4


def model_input(model, batch, path):
    """A random (batch, C, H, W) batch of the model's input size, read from `pola info --json`."""
    info = json.loads(subprocess.run([os.path.join(ROOT, "build", "apps", "pola"), "info", model, "--json"],
                                     capture_output=True, text=True, check=True).stdout)
    size = info["config"].get("img_size", 224)
    channels = info["config"].get("in_chans", 3)
    rng = np.random.default_rng(7)
    np.save(path, rng.standard_normal((batch, channels, size, size)).astype(np.float32))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--configs", default="own,onednn_ref,scalar")
    ap.add_argument("--batches", default="1,3")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--build", default=os.path.join(ROOT, "build-arm64"))
    ap.add_argument("--root", default=os.environ.get("POLA_ARM64_ROOT", "/opt/pola-arm64"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--self-check", action="store_true", help="check the counter on a known loop first")
    ap.add_argument("--counter", choices=("plugin", "native", "python"), default="plugin")
    args = ap.parse_args()
    global COUNTER, PLUGIN
    small, large = (int(b) for b in args.batches.split(","))
    rows = []
    with tempfile.TemporaryDirectory(prefix="pola_insn_") as tmp:
        if args.counter == "native":
            COUNTER = build_counter(tmp)
        elif args.counter == "plugin":
            PLUGIN = build_plugin(tmp)
        if args.self_check and not self_check(tmp):
            print("ERROR: the instruction counter is off on the known loop", file=sys.stderr)
            return 1
        for model in args.model:
            inputs = {}
            for b in (small, large):
                inputs[b] = os.path.join(tmp, f"input_b{b}.npy")
                model_input(model, b, inputs[b])
            for config in args.configs.split(","):
                counts = {b: guest_instructions(args, model, inputs[b], CONFIGS[config], tmp) for b in (small, large)}
                per_image = (counts[large] - counts[small]) / (large - small)
                rows.append({"model": os.path.basename(model), "config": config, "per_image": per_image,
                             "counts": counts})
                print(f"{os.path.basename(model):28s} {config:11s} {per_image / 1e6:10.1f} M instructions per image "
                      f"(runs of {small} and {large}: {counts[small] / 1e6:.1f} M, {counts[large] / 1e6:.1f} M)",
                      flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
