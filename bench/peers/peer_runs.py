"""One measurement = one fresh process of one engine; its peak RSS is measured by GNU time.

Every runner returns a Measurement. The engine reports median/p90 itself (`pola bench --json`);
for PyTorch and ORT they are computed here from the per-run times, with the same interpolated
percentile rule the engine uses.
"""
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OPENBLAS_TUNING_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


@dataclasses.dataclass
class Measurement:
    engine: str
    model: str
    batch: int
    threads: int
    round: int
    median_ms: float
    p90_ms: float
    peak_rss_mb: float          # the process's maximum resident set (GNU time)
    load1_before: float         # 1-minute load average when the process started
    load1_after: float
    wall_s: float               # the whole process, start-up and model load included
    details: dict               # engine-specific extras (ISA, commit, GFLOP/s, self-reported RSS, ...)


def percentile(values, q):
    """Linear interpolation between ranks (the rule of `pola bench`)."""
    v = sorted(values)
    idx = q * (len(v) - 1)
    lo = int(idx)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (idx - lo)


class MeasurementTimeout(RuntimeError):
    pass


def run_measured(cmd, env=None, cwd=None, timeout_s=None):
    """Run cmd to completion; (stdout text, peak RSS MB of that process alone, wall seconds).

    The peak comes from GNU time, not from our own wait4: Linux carries the forking process's
    resident size into the child's ru_maxrss at exec, so a child forked straight from this
    Python (torch imported, ~330 MB) would never report less than that. /usr/bin/time is small
    and forks the measured command itself. A command still running after timeout_s is killed
    with its whole process group (a loaded machine can stretch a run 20x)."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as rss_file:
        wrapped = ["/usr/bin/time", "-f", "%M", "-o", rss_file.name] + list(cmd)
        proc = subprocess.Popen(wrapped, stdout=subprocess.PIPE, stderr=err, env=env, cwd=cwd,
                                start_new_session=True)
        timer = threading.Timer(timeout_s, os.killpg, (proc.pid, signal.SIGKILL)) if timeout_s else None
        if timer:
            timer.start()
        out = proc.stdout.read()
        proc.stdout.close()
        proc.wait()
        if timer:
            timer.cancel()
        if timeout_s and time.monotonic() - start >= timeout_s and proc.returncode != 0:
            raise MeasurementTimeout(f"{' '.join(cmd)} killed after {timeout_s:.0f} s")
        if proc.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{err.read().decode(errors='replace')[-2000:]}")
        # GNU time writes "Command exited with non-zero status" lines first on failure; the number is last.
        peak_kb = float(rss_file.read().split()[-1])
    return out.decode(), peak_kb / 1024, time.monotonic() - start


def last_json_line(text):
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError(f"no JSON line in output:\n{text[-1000:]}")


def child_env(extra, unset=()):
    env = dict(os.environ, **extra)
    for name in unset:
        env.pop(name, None)
    return env


def int8_model_path(case):
    """The int8 file of a case: `pola quantize` of its model.pola (int8_compare.py makes it)."""
    return os.path.join(case.dir, "model.int8.pola")


def int8_onnx_path(case, batch):
    """The QDQ ONNX graph of a case at one batch size (qdq_export.py, from int8_model_path's scales)."""
    return os.path.join(case.dir, f"b{batch}.int8.onnx")


class Runners:
    """How to start each engine; `measure(engine, ...)` runs one process and returns a Measurement."""

    def __init__(self, pola_binary, runs_for_batch, warmup, peak_gflops, extra_env=None, timeout_s=None,
                 no_spin=False):
        self.pola = pola_binary
        self.no_spin = no_spin
        self.extra_env = dict(extra_env or {})   # applied to every engine alike (--env)
        self.timeout_s = timeout_s
        self.runs_for_batch = runs_for_batch
        self.warmup = warmup
        self.peak_gflops = peak_gflops

    def command(self, engine, case, batch, threads):
        runs = self.runs_for_batch(batch)
        if self.no_spin and engine != "ort":
            # The engine and PyTorch (and OpenBLAS-openmp) wait in libgomp; ORT gets --spin 0 below.
            extra = dict(self.extra_env, OMP_WAIT_POLICY="passive")
        else:
            extra = self.extra_env
        if engine in ("engine", "engine_bf16", "engine_int8"):
            # engine_bf16: `--precision bf16` (refused, and so a failed row, on a CPU without native bf16).
            # engine_int8: `--precision int8` on the file `pola quantize` made (int8_model_path, below).
            precision = {"engine": "fp32", "engine_bf16": "bf16", "engine_int8": "int8"}[engine]
            model = int8_model_path(case) if engine == "engine_int8" else case.model_path
            peak = ["--peak-gflops", str(self.peak_gflops)] if self.peak_gflops else []
            return [self.pola, "bench", "--model", model, "--batch", str(batch), "--threads", str(threads),
                    "--runs", str(runs), "--warmup", str(self.warmup), "--json", "--precision", precision] + peak, \
                child_env(extra)
        if engine in ("pytorch", "pytorch_openblas_unset", "pytorch_bf16", "pytorch_int8"):
            unset = OPENBLAS_TUNING_VARS if engine == "pytorch_openblas_unset" else ()
            env = child_env(extra, unset)
            # pytorch_bf16: the whole model and the input cast with .bfloat16() (torch 1.13's CPU autocast
            # fails on these models in layer_norm).
            return ["/usr/bin/python3", os.path.join(HERE, "torch_bench.py"), "--model", case.model_path,
                    "--batch", str(batch), "--threads", str(threads), "--runs", str(runs),
                    "--warmup", str(self.warmup)] + (["--bf16"] if engine == "pytorch_bf16" else []) + \
                (["--int8"] if engine == "pytorch_int8" else []), env
        if engine in ("ort", "ort_int8"):
            # ort_int8: the QDQ graph qdq_export.py wrote from the engine's int8 file (int8_onnx_path).
            shape = ",".join(str(d) for d in (batch, case.channels, case.size, case.size))
            onnx_model = int8_onnx_path(case, batch) if engine == "ort_int8" else case.onnx_path(batch)
            return ["node", os.path.join(HERE, "ort_bench.js"), "--model", onnx_model, "--shape", shape,
                    "--threads", str(threads), "--runs", str(runs), "--warmup", str(self.warmup)] + \
                (["--spin", "0"] if self.no_spin else []), child_env(extra)
        raise ValueError(f"unknown engine {engine}")

    def measure(self, engine, case, batch, threads, round_index):
        cmd, env = self.command(engine, case, batch, threads)
        load_before = os.getloadavg()[0]
        out, rss, wall = run_measured(cmd, env=env, cwd=HERE, timeout_s=self.timeout_s)
        load_after = os.getloadavg()[0]
        result = last_json_line(out)
        if engine in ("engine", "engine_bf16", "engine_int8"):
            median, p90 = result["median_ms"], result["p90_ms"]
            details = {k: result[k] for k in ("isa", "commit", "gflops", "peak_share", "images_per_s", "precision",
                                              "bf16_isa", "peak_gflops", "packed_weights_mb") if k in result}
            details["self_reported_rss_mb"] = result.get("peak_rss_mb")
        else:
            median, p90 = percentile(result["times_ms"], 0.5), percentile(result["times_ms"], 0.9)
            details = {"version": result.get("version"), "runs": len(result["times_ms"])}
            if result.get("qengine"):
                details["qengine"] = result["qengine"]
                details["int8_linears"] = result.get("int8_linears")
            if "session_create_ms" in result:
                details["session_create_ms"] = result["session_create_ms"]
        return Measurement(engine, case.arch, batch, threads, round_index, median, p90, rss,
                           load_before, load_after, wall, details)


def log(message):
    print(message, file=sys.stderr, flush=True)
