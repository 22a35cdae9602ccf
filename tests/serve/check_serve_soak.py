#!/usr/bin/python3
"""A bounded soak of `pola serve`: mixed traffic for --seconds, RSS must not grow after warm-up.

8 client threads loop over a mix of requests (classify of the sample images, /infer with JSON and
binary tensors of 1-3 images, bad images, unknown models, malformed JSON, /metrics scrapes, new and
kept-alive connections) with a small --max-queue so some answers are 503. Every answer must be one of
the statuses its request allows; the server's RSS is sampled every second. After the warm-up (the
first quarter) the RSS at the end may exceed the RSS at warm-up by at most max(8 MB, 10%); both are
printed. Exit 0 after SIGTERM.

  /usr/bin/python3 check_serve_soak.py --pola build/apps/pola --models models --seconds 120
"""
import glob
import os
import statistics
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_fixture import Server, test_arguments, infer_body  # noqa: E402

CLIENTS = 8


def main():
    args = test_arguments(lambda ap: ap.add_argument("--seconds", type=float, default=120))
    model = args.model
    images = [open(p, "rb").read() for p in sorted(glob.glob(os.path.join(args.models, "samples", "*.png")))]
    rng = np.random.default_rng(9)
    tensors = [infer_body(rng.standard_normal((n, 1, 32, 32)), binary=b) for n in (1, 2, 3) for b in (False, True)]
    requests = (
        [("POST", "/v2/models/fashion/classify?top=3", img, {}, {200, 503}) for img in images] +
        [("POST", "/v2/models/fashion/infer", body, h, {200, 503}) for body, h in tensors] +
        [("POST", "/v2/models/fashion/classify", b"\x89PNG broken", {}, {400}),
         ("POST", "/v2/models/nope/infer", b"{}", {}, {404}),
         ("POST", "/v2/models/fashion/infer", b'{"inputs": [{"name": "input"', {}, {400}),
         ("GET", "/metrics", None, {}, {200}),
         ("GET", "/v2/models/fashion", None, {}, {200})])
    stop = threading.Event()
    counts, problems = {}, []
    lock = threading.Lock()

    with Server(args.pola, ["--model", f"fashion={model}", "--max-queue", "6", "--max-wait-ms", "2"]) as s:
        def client(c):
            conn = None
            i = c
            while not stop.is_set():
                method, path, body, headers, allowed = requests[i % len(requests)]
                i += 7
                try:
                    if conn is None or i % 5 == 0:  # some requests on fresh connections, most kept alive
                        if conn is not None:
                            conn.close()
                        conn = s.connection(60)
                    conn.request(method, path, body=body, headers=headers)
                    r = conn.getresponse()
                    r.read()
                    status = r.status
                    if r.getheader("Connection", "").lower() == "close":
                        conn.close()
                        conn = None
                except OSError as e:
                    status = f"error {e!r}"
                    conn = None
                with lock:
                    counts[status] = counts.get(status, 0) + 1
                    if status not in allowed:
                        problems.append(f"{method} {path}: {status} (allowed {sorted(allowed)})")
        threads = [threading.Thread(target=client, args=(c,)) for c in range(CLIENTS)]
        for t in threads:
            t.start()
        samples = []
        t0 = time.time()
        while time.time() - t0 < args.seconds:
            time.sleep(1)
            samples.append((time.time() - t0, s.rss_kb()))
        stop.set()
        for t in threads:
            t.join()
        warm_at = args.seconds / 4
        warm = statistics.median([kb for t, kb in samples if abs(t - warm_at) <= 2])
        end = statistics.median([kb for _, kb in samples[-3:]])
        peak = max(kb for _, kb in samples)
        allowed_growth = max(8 * 1024, 0.10 * warm)
        print(f"soak {args.seconds:.0f} s, {CLIENTS} clients: answers {counts}")
        print(f"RSS: start {samples[0][1] / 1024:.1f} MB, after warm-up ({warm_at:.0f} s) {warm / 1024:.1f} MB, "
              f"end {end / 1024:.1f} MB, peak {peak / 1024:.1f} MB")
        code = s.stop()
    assert not problems, f"{len(problems)} unexpected answers, e.g. {problems[:5]}"
    assert counts.get(200, 0) > 0, counts
    assert code == 0, code
    assert end - warm <= allowed_growth, (
        f"RSS grew by {(end - warm) / 1024:.1f} MB after warm-up (allowed {allowed_growth / 1024:.1f} MB)")
    print("serve soak: OK")


if __name__ == "__main__":
    main()
