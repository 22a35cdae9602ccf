#!/usr/bin/python3
"""Every endpoint of `pola serve`, its answers against the CLI, and its refusals.

With the shipped Fashion-MNIST models (two served at once):
  - health, server and model metadata, model readiness, /metrics (Prometheus text with every family);
  - /classify of each sample image answers exactly the JSON line `pola classify --json` prints
    (file name from ?file=, same probabilities to the last digit), ?top=K honoured;
  - /infer (JSON data, binary tensor in, binary tensor out) gives logits bit-equal to `pola run` at
    batch 1, and equal within 1e-5 for a request of several images;
  - 400 with a JSON error naming the problem: bad image, wrong shape, wrong datatype, wrong input name,
    malformed JSON, non-number data, bad ?top; 404: unknown model, unknown path; 413: body over
    --max-body-mb; 401: missing or wrong key with --api-key-file (and 200 with the right one);
  - one access-log line per request on stderr.

  /usr/bin/python3 check_serve_endpoints.py --pola build/apps/pola --models models
"""
import glob
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_fixture import Server, free_port, test_arguments, infer_body, infer_logits, pola_run_logits  # noqa: E402


def expect_error(server, status, method, path, body=None, headers=None, mention=""):
    got, h, data = server.request(method, path, body, headers)
    assert got == status, f"{method} {path}: status {got} (expected {status}): {data[:300]!r}"
    assert h.get("content-type", "").startswith("application/json"), f"{method} {path}: {h}"
    err = json.loads(data)["error"]
    assert mention.lower() in err.lower(), f"{method} {path}: error {err!r} does not mention {mention!r}"
    return h, err


def check_classify(args, s, samples):
    for top in (1, 3):
        cli = subprocess.run([args.pola, "classify", "-m", args.model, "--json", "--top", str(top), "--batch", "1", *samples],
                             check=True, capture_output=True, text=True).stdout.splitlines()
        for path, line in zip(samples, cli):
            with open(path, "rb") as f:
                status, h, body = s.request("POST", f"/v2/models/fashion/classify?top={top}&file={path}", f.read())
            assert status == 200, (status, body)
            assert h["content-type"].startswith("application/json"), h
            assert body.decode() == line, f"{path}: server {body.decode()} != CLI {line}"
    with open(samples[0], "rb") as f:
        status, _, answer = s.json("POST", "/v2/models/fashion/classify", f.read())
    assert status == 200 and "file" not in answer and len(answer["top"]) == 5, answer  # CLI's default top
    print(f"classify: {len(samples)} images x top 1, 3 equal to `pola classify --json --batch 1`")


def model_input(meta):
    """(channels, height, width) of the model's own input: metadata gives H and W as -1 (any size the
    model runs is taken), the model's size is its preprocessing's."""
    shape = meta["inputs"][0]["shape"]
    assert shape[0] == -1 and shape[2:] == [-1, -1], shape
    size = meta["pola"]["preprocess"]["input_size"]
    return shape[1], size, size


def check_infer(args, s, samples, work):
    _, _, meta = s.json("GET", "/v2/models/fashion")
    c, h, w = model_input(meta)
    rng = np.random.default_rng(5)
    single = rng.standard_normal((1, c, h, w)).astype(np.float32)
    want = pola_run_logits(args.pola, args.model, single, work)
    for binary in (False, True):
        for binary_output in (False, True):
            body, headers = infer_body(single, binary=binary, request_id="req-7", binary_output=binary_output)
            status, hd, data = s.request("POST", "/v2/models/fashion/infer", body, headers)
            got = infer_logits(status, hd, data)
            n = int(hd.get("inference-header-content-length", len(data)))
            answer = json.loads(data[:n])
            assert answer["id"] == "req-7" and answer["model_name"] == "fashion", answer
            assert got.shape == want.shape and np.array_equal(got.view(np.uint32), want.view(np.uint32)), (
                f"infer (binary in {binary}, out {binary_output}) differs from pola run: {got} vs {want}")
    several = rng.standard_normal((5, c, h, w)).astype(np.float32)
    want5 = pola_run_logits(args.pola, args.model, several, work)
    got5 = infer_logits(*s.request("POST", "/v2/models/fashion/infer", *infer_body(several)))
    assert np.abs(got5 - want5).max() <= 1e-5, np.abs(got5 - want5).max()
    # Each row of a batched request equals that image alone, run by `pola run`.
    for i in range(5):
        alone = pola_run_logits(args.pola, args.model, several[i:i + 1], work)
        assert np.abs(got5[i] - alone[0]).max() <= 1e-5, (i, np.abs(got5[i] - alone[0]).max())
    # Nested data ([N][C][H][W] lists) is taken as well as flat data.
    nested = json.dumps({"inputs": [{"name": "input", "datatype": "FP32", "shape": [1, c, h, w],
                                     "data": single.astype(np.float64).tolist()}]})
    got_nested = infer_logits(*s.request("POST", "/v2/models/fashion/infer", nested))
    assert np.array_equal(got_nested, want), "nested data gives other logits"
    print("infer: JSON and binary, batch 1 bit-equal to `pola run`; 5 images within 1e-5")
    return (c, h, w)


def check_refusals(s, shape, samples):
    c, h, w = shape
    path = "/v2/models/fashion/infer"

    def body(**tensor):
        t = {"name": "input", "datatype": "FP32", "shape": [1, c, h, w], "data": [0.5] * (c * h * w)}
        t.update(tensor)
        return json.dumps({"inputs": [t]})

    expect_error(s, 400, "POST", "/v2/models/fashion/classify", b"not an image at all", mention="not a usable image")
    expect_error(s, 400, "POST", "/v2/models/fashion/classify", b"", mention="empty")
    with open(samples[0], "rb") as f:
        png = f.read()
    expect_error(s, 400, "POST", "/v2/models/fashion/classify", png[:len(png) // 2], mention="image")
    expect_error(s, 400, "POST", "/v2/models/fashion/classify?top=zero", png, mention="top")
    expect_error(s, 400, "POST", path, body(shape=[1, c, h + 1, w]), mention="shape")
    expect_error(s, 400, "POST", path, body(shape=[1, c, h, w], data=[0.5] * 7), mention="7 values")
    expect_error(s, 400, "POST", path, body(datatype="INT8"), mention="datatype")
    expect_error(s, 400, "POST", path, body(name="pixels"), mention="input")
    expect_error(s, 400, "POST", path, body(data=["a"] * (c * h * w)), mention="number")
    expect_error(s, 400, "POST", path, body(data=[1e39] * (c * h * w)), mention="finite")
    expect_error(s, 400, "POST", path, '{"inputs": [', mention="not valid JSON")
    expect_error(s, 400, "POST", path, "[1, 2]", mention="object")
    expect_error(s, 400, "POST", path, '{"inputs": []}', mention="one tensor")
    x = np.zeros((1, c, h, w), np.float32)
    x[0, 0, 3, 4] = np.nan
    expect_error(s, 400, "POST", path, *infer_body(x, binary=True), mention="image 0, channel 0, row 3, column 4")
    x[0, 0, 3, 4] = 0
    x[0, -1, -1, -1] = -np.inf  # the last value is checked too
    expect_error(s, 400, "POST", path, *infer_body(x, binary=True), mention=f"image 0, channel {c - 1}, row {h - 1}, column {w - 1}")
    b, hd = infer_body(np.zeros((1, c, h, w), np.float32), binary=True)
    expect_error(s, 400, "POST", path, b[:-4], hd, mention="bytes")
    expect_error(s, 400, "POST", path, b, dict(hd, **{"Inference-Header-Content-Length": "99999999"}), mention="Inference-Header")
    expect_error(s, 404, "POST", "/v2/models/shoes/infer", body(), mention="unknown model 'shoes'")
    expect_error(s, 404, "GET", "/v2/models/shoes", mention="unknown model")
    expect_error(s, 404, "GET", "/v2/models/shoes/ready", mention="unknown model")
    expect_error(s, 404, "GET", "/v1/models", mention="no endpoint")
    expect_error(s, 405, "GET", path, mention="answers POST")  # infer is POST only
    print("refusals: 400, 404 and 405 with JSON errors naming the problem")


def check_precision(args, work):
    """--precision auto serves at what `pola --version` says auto picks here, reports it in the
    model metadata, and answers as `pola run` does at that precision (bit-equal at batch 1)."""
    version = subprocess.run([args.pola, "--version"], capture_output=True, text=True, check=True).stdout
    picked = re.search(r"precision\s+auto = (\w+)", version)
    assert picked, version
    # What auto must pick where /proc/cpuinfo settles it (AMX-BF16: bf16; no bf16 instructions:
    # fp32); with AVX512-BF16 alone it follows a rate measured at start-up, which
    # precision.refusal checks against the pick.
    with open("/proc/cpuinfo") as f:
        flags = next((set(l.split(":", 1)[1].split()) for l in f if l.startswith("flags")), set())
    if {"amx_tile", "amx_bf16", "avx512f"} <= flags:
        assert picked.group(1) == "bf16", f"auto picks {picked.group(1)} on a CPU with AMX-BF16"
    elif "avx512_bf16" not in flags:
        assert picked.group(1) == "fp32", f"auto picks {picked.group(1)} on a CPU without bf16 instructions"
    with Server(args.pola, ["--model", f"fashion={args.model}", "--precision", "auto"]) as s:
        _, _, meta = s.json("GET", "/v2/models/fashion")
        assert meta["pola"]["precision"] == picked.group(1), (meta["pola"].get("precision"), version)
        c, h, w = model_input(meta)
        x = np.random.default_rng(11).standard_normal((1, c, h, w)).astype(np.float32)
        want = pola_run_logits(args.pola, args.model, x, work, precision=picked.group(1))
        got = infer_logits(*s.request("POST", "/v2/models/fashion/infer", *infer_body(x)))
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (got, want)
        assert s.stop() == 0
    print(f"--precision auto serves at {picked.group(1)}, bit-equal to `pola run --precision {picked.group(1)}`")


def check_metadata(s):
    assert s.json("GET", "/v2/health/live")[2] == {"live": True}
    assert s.json("GET", "/v2/health/ready")[2] == {"ready": True}
    status, _, server_meta = s.json("GET", "/v2")
    assert status == 200 and server_meta["name"] == "pola", server_meta
    for name, arch in (("fashion", "pvt"), ("swin", "swin")):
        status, _, meta = s.json("GET", f"/v2/models/{name}")
        assert status == 200 and meta["name"] == name, meta
        assert meta["inputs"][0]["name"] == "input" and meta["inputs"][0]["datatype"] == "FP32", meta
        assert meta["outputs"] == [{"name": "logits", "datatype": "FP32", "shape": [-1, 10]}], meta
        assert arch in meta["pola"]["family"] and len(meta["pola"]["classes"]) == 10, meta["pola"]
        assert meta["pola"]["precision"] == "fp32", meta["pola"]  # the default
        assert s.json("GET", f"/v2/models/{name}/ready")[2] == {"name": name, "ready": True}
    print("metadata and readiness as documented")


# The phases of an answered inference request in /metrics (pola_request_phase_seconds).
PHASES = ["receive", "decode", "queue", "inference", "handoff", "encode", "send"]


def check_metrics(s):
    status, h, text = s.request("GET", "/metrics")
    text = text.decode()
    assert status == 200 and h["content-type"].startswith("text/plain"), h
    for family in ("pola_http_requests_total", "pola_http_request_duration_seconds_bucket", "pola_batch_size_bucket",
                   "pola_inference_duration_seconds_sum", "pola_queue_depth", "pola_queue_rejections_total"):
        assert family in text, f"/metrics has no {family}:\n{text}"
    assert 'pola_http_requests_total{endpoint="infer",code="400"}' in text, text
    assert 'pola_http_requests_total{endpoint="classify",code="200"}' in text, text
    assert 'pola_queue_depth{model="swin"} 0' in text, text
    # Phases of the answered inference requests: one count per model for all seven phases, equal to
    # that model's answered /infer and /classify requests; the engine's time in them is positive.
    answered = sum(int(v) for e in ("infer", "classify")
                   for v in re.findall(r'pola_http_requests_total\{endpoint="%s",code="200"\} (\d+)' % e, text))
    counts = re.findall(r'pola_request_phase_seconds_count\{model="(\w+)",phase="(\w+)"\} (\d+)', text)
    assert sorted({p for _, p, _ in counts}) == sorted(PHASES), counts
    per_model = {m: int(n) for m, p, n in counts if p == "receive"}
    assert all(int(n) == per_model[m] for m, _, n in counts), counts
    assert sum(per_model.values()) == answered > 0, (per_model, answered)
    inference = float(re.search(r'pola_request_phase_seconds_sum\{model="fashion",phase="inference"\} (\S+)', text)[1])
    assert inference > 0, text
    assert float(re.search(r"^process_cpu_seconds_total (\S+)$", text, re.M)[1]) > 0, text
    print("/metrics: every family, requests by endpoint and code, request phases for every answered inference")


def check_bench_serve(args, s):
    """`pola bench-serve`: every timed request answered once, the batch sizes and the server's account of them."""
    out = subprocess.run([args.pola, "bench-serve", "--url", f"http://127.0.0.1:{s.port}", "--model", "fashion",
                          "--concurrency", "3", "--requests", "24", "--warmup", "4", "--json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["ok"] == 24 and r["failed"] == 0 and r["concurrency"] == 3, r
    assert sum(r["batch_sizes"].values()) == 24 and all(1 <= int(b) <= 3 for b in r["batch_sizes"]), r
    assert 0 < r["p50_ms"] <= r["p99_ms"], r
    assert sorted(r["server_phases_ms"]) == sorted(PHASES), r
    assert r["server_phases_ms"]["inference"] > 0 and r["server_cpu_ms"] > 0 and r["client_cpu_ms"] > 0, r
    print("bench-serve: 24 requests at concurrency 3, server phases and CPU reported")


def check_limits(args, samples, work):
    with open(samples[0], "rb") as f:
        png = f.read()
    # --max-body-mb 0.001: 1048 bytes.
    with Server(args.pola, ["--model", f"fashion={args.model}", "--max-body-mb", "0.001", "--timeout", "60"]) as s:
        expect_error(s, 413, "POST", "/v2/models/fashion/classify", b"x" * 1049, mention="max-body-mb")
        # Refused from the header: the answer comes while the body is still unsent. A server that
        # read (or skipped) the body first would answer only after its 60 s --timeout.
        with socket.create_connection(("127.0.0.1", s.port), timeout=120) as sock:
            t0 = time.time()
            sock.sendall(b"POST /v2/models/fashion/classify HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n")
            answer = sock.recv(4096)
            waited = time.time() - t0
            rest = sock.recv(4096)
        assert answer.startswith(b"HTTP/1.1 413"), answer
        assert waited < 30, f"the 413 came after {waited:.1f} s: the server waited for the body"
        assert b"max-body-mb" in answer or b"max-body-mb" in rest, answer + rest
        s.check_alive("413")
        small = infer_body(np.zeros((1, 1, 4, 4), np.float32))[0]  # under the limit: parsed, then refused for its shape
        expect_error(s, 400, "POST", "/v2/models/fashion/infer", small, mention="shape")
    key_file = os.path.join(work, "key.txt")
    with open(key_file, "w") as f:
        f.write("s3cret-key\n")
    with Server(args.pola, ["--model", f"fashion={args.model}", "--api-key-file", key_file]) as s:
        h, _ = expect_error(s, 401, "GET", "/v2/models/fashion", mention="API key")
        assert h.get("www-authenticate") == "Bearer", h
        assert s.request("GET", "/v2/health/live")[0] == 200  # probes are open (--probes-need-key closes them)
        expect_error(s, 401, "POST", "/v2/models/fashion/classify", png, {"Authorization": "Bearer s3cret-kez"},
                     mention="wrong")
        expect_error(s, 401, "GET", "/metrics", headers={"Authorization": "Basic s3cret-key"}, mention="wrong")
        status, _, _ = s.request("POST", "/v2/models/fashion/classify", png, {"Authorization": "Bearer s3cret-key"})
        assert status == 200, status
    print("limits: 413 over --max-body-mb, 401 without the key, 200 with it")


def check_start_errors(args, work):
    """Bad command lines end at once with exit 1 and a message naming the problem."""
    def start(*argv, env=None):
        r = subprocess.run([args.pola, "serve", *argv], capture_output=True, text=True, timeout=120, env=env)
        return r.returncode, r.stderr
    missing = os.path.join(work, "no_such_model.pola")
    code, err = start("--model", f"m={missing}", "--port", str(free_port()))
    assert code == 1 and "no_such_model.pola" in err, (code, err)
    code, err = start("--model", args.model, "--port", str(free_port()))
    assert code == 1 and "NAME=PATH" in err, (code, err)
    code, err = start("--model", f"a b={args.model}", "--port", str(free_port()))
    assert code == 1 and "model name" in err, (code, err)
    code, err = start("--model", f"m={args.model}", "--model", f"m={args.model}", "--port", str(free_port()))
    assert code == 1 and "twice" in err, (code, err)
    code, err = start("--model", f"m={args.model}", "--api-key-file", missing, "--port", str(free_port()))
    assert code == 1 and "no_such_model.pola" in err, (code, err)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        code, err = start("--model", f"m={args.model}", "--port", str(taken.getsockname()[1]))
    assert code == 1 and "is in use" in err, (code, err)
    code, err = start("--model", f"m={args.model}", "--precision", "fp8", "--port", str(free_port()))
    assert code != 0 and "--precision" in err, (code, err)
    # bf16 on a CPU without native bf16 (emulated by capping the ISA) is refused by name.
    code, err = start("--model", f"m={args.model}", "--precision", "bf16", "--port", str(free_port()),
                      env=dict(os.environ, POLA_ISA="avx512"))
    assert code == 1 and "AMX-BF16" in err, (code, err)
    print("start errors: exit 1 naming the model file, the --model syntax, the key file, the busy port, "
          "the precision")


def main():
    args = test_arguments()
    samples = sorted(glob.glob(os.path.join(args.models, "samples", "*.png")))
    assert len(samples) >= 4, samples
    with tempfile.TemporaryDirectory() as work:
        with Server(args.pola, ["--model", f"fashion={args.model}", "--model",
                                f"swin={os.path.join(args.models, 'fashion_pola_swin.pola')}"]) as s:
            check_metadata(s)
            check_classify(args, s, samples)
            shape = check_infer(args, s, samples, work)
            check_refusals(s, shape, samples)
            check_metrics(s)
            check_bench_serve(args, s)
            s.check_alive("all requests")
            assert s.stop() == 0
            log = s.log()
            lines = [l for l in log.splitlines() if l.startswith("127.0.0.1 \"")]
            assert any('"POST /v2/models/fashion/classify" 200' in l and "batch=1" in l for l in lines), log[-2000:]
            assert any('"GET /v2/models/shoes" 404' in l for l in lines), log[-2000:]
        check_limits(args, samples, work)
        check_start_errors(args, work)
        check_precision(args, work)
    print("serve endpoints: OK")


if __name__ == "__main__":
    main()
