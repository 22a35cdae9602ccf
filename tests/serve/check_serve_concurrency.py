#!/usr/bin/python3
"""Dynamic batching, the bounded queue and a graceful stop of `pola serve`.

  - 32 concurrent clients, each with its own image (distinct random tensors through /infer, half as
    JSON and half as binary): every client gets exactly its own logits, equal within 1e-5 to
    `pola run` of that image alone, under both batch policies (with `fixed`, batches of more than
    one image must have formed);
  - with --max-queue 2 and a long fixed --max-wait-ms, a burst of requests gets some 503 answers with
    Retry-After and a JSON error, the rest 200, and the server answers normally afterwards;
  - SIGTERM while requests wait in the queue: every one of them is answered 200, the process exits 0,
    and the port no longer accepts connections.

  /usr/bin/python3 check_serve_concurrency.py --pola build/apps/pola --models models
"""
import json
import os
import re
import signal
import socket
import sys
import tempfile
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_fixture import Server, test_arguments, infer_body, infer_logits, pola_run_logits  # noqa: E402

CLIENTS = 32


def parallel(n, fn):
    """Runs fn(i) for i in range(n) on n threads started together; returns the results (exceptions re-raised)."""
    results, errors = [None] * n, []
    barrier = threading.Barrier(n)

    def run(i):
        try:
            barrier.wait()
            results[i] = fn(i)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def queue_depth(s):
    text = s.request("GET", "/metrics")[2].decode()
    return int(re.search(r'^pola_queue_depth\{model="fashion"\} (\d+)$', text, re.M).group(1))


def check_own_answers(args, work):
    rng = np.random.default_rng(2024)
    images = rng.standard_normal((CLIENTS, 1, 32, 32)).astype(np.float32)
    want = np.concatenate([pola_run_logits(args.pola, args.model, images[i:i + 1], work) for i in range(CLIENTS)])
    for policy in ("adaptive", "fixed"):
        own_answers_round(args, images, want, policy)


def own_answers_round(args, images, want, policy):
    with Server(args.pola, ["--model", f"fashion={args.model}", "--max-batch", "16", "--max-wait-ms", "50",
                            "--batch-policy", policy]) as s:
        def client(i):
            body, headers = infer_body(images[i:i + 1], binary=i % 2 == 1, request_id=f"client-{i}")
            status, h, data = s.request("POST", "/v2/models/fashion/infer", body, headers)
            n = int(h.get("inference-header-content-length", len(data)))
            assert json.loads(data[:n])["id"] == f"client-{i}"
            return infer_logits(status, h, data)[0], int(h["x-pola-batch"])
        for round_ in range(2):
            answers = parallel(CLIENTS, client)
            batches = [b for _, b in answers]
            for i, (logits, _) in enumerate(answers):
                diff = np.abs(logits - want[i]).max()
                assert diff <= 1e-5, f"round {round_}, client {i}: its logits differ from its image alone by {diff}"
                # Distinct images: the answer is nobody else's.
                others = np.abs(want - logits).max(axis=1)
                assert int(np.argmin(others)) == i, f"client {i} got the answer of image {int(np.argmin(others))}"
            # A fixed wait of 50 ms always gathers the simultaneous requests; adaptive batching
            # gathers those that arrive while the engine is busy, which on a busy machine may be none.
            assert policy == "adaptive" or max(batches) > 1, f"no batch of more than one image formed: {batches}"
            print(f"32 clients, {policy} batching, round {round_}: each got its own logits (<= 1e-5); "
                  f"batch sizes {sorted(set(batches))}")
        assert s.stop() == 0


def check_queue_full(args):
    with Server(args.pola, ["--model", f"fashion={args.model}", "--max-batch", "64", "--max-wait-ms", "1500",
                            "--max-queue", "2", "--batch-policy", "fixed"]) as s:
        body, headers = infer_body(np.zeros((1, 1, 32, 32), np.float32))

        def client(i):
            return s.request("POST", "/v2/models/fashion/infer", body, headers)
        answers = parallel(8, client)
        codes = sorted(a[0] for a in answers)
        assert codes.count(200) == 2 and codes.count(503) == 6, f"statuses with --max-queue 2: {codes}"
        for status, h, data in answers:
            if status == 503:
                assert h.get("retry-after") == "1", h
                assert "queue is full" in json.loads(data)["error"], data
        text = s.request("GET", "/metrics")[2].decode()
        assert 'pola_queue_rejections_total{model="fashion"} 6' in text, text
        assert s.request("POST", "/v2/models/fashion/infer", body, headers)[0] == 200
        # A request larger than the whole queue could never be taken: 400 naming the limit, not 503.
        for rows in (3, 50):
            status, _, data = s.request("POST", "/v2/models/fashion/infer", *infer_body(np.zeros((rows, 1, 32, 32))))
            assert status == 400 and b"--max-queue" in data, (status, data)
        print(f"--max-queue 2: statuses {codes}, 503s carry Retry-After; the server answers afterwards")


def check_sigterm_drains(args):
    with Server(args.pola, ["--model", f"fashion={args.model}", "--max-batch", "64", "--max-wait-ms", "3000",
                            "--batch-policy", "fixed"]) as s:
        body, headers = infer_body(np.ones((1, 1, 32, 32), np.float32))
        n = 8
        results = [None] * n

        def client(i):
            try:
                results[i] = s.request("POST", "/v2/models/fashion/infer", body, headers, timeout=120)
            except OSError as e:  # e.g. the connection dropped: no answer
                results[i] = (f"no answer: {e!r}",)
        threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        deadline = time.time() + 30
        while queue_depth(s) < n:
            assert time.time() < deadline, "the requests never reached the queue"
            time.sleep(0.02)
        t0 = time.time()
        code = s.stop(signal.SIGTERM)
        for t in threads:
            t.join()
        statuses = [r[0] for r in results]
        assert code == 0, f"exit code {code} after SIGTERM"
        assert statuses == [200] * n, f"in-flight requests after SIGTERM: {statuses}"
        with socket.socket() as sock:
            assert sock.connect_ex(("127.0.0.1", s.port)) != 0, "the port still accepts connections after exit"
        assert "SIGTERM" in s.log(), s.log()[-1000:]
        print(f"SIGTERM with {n} requests queued: all answered 200, exit 0 after {time.time() - t0:.1f} s")


def main():
    args = test_arguments()
    with tempfile.TemporaryDirectory() as work:
        check_own_answers(args, work)
    check_queue_full(args)
    check_sigterm_drains(args)
    print("serve concurrency: OK")


if __name__ == "__main__":
    main()
