#!/usr/bin/python3
"""What `pola serve` must refuse, and what it must not, when clients and networks misbehave.

  - a second server on a busy port refuses to start (exit 1, "port P is in use");
  - bodies that are not UTF-8 get a 400 with a JSON error, never a 500;
  - a POST without Content-Length gets 411 at once; a POST to an unknown path gets 404 whatever its body
    (even one over the size limit); a wrong method gets 405 with Allow;
  - with 4 x --http-threads stalled connections open (connected and silent, half a head, a head and
    half a body, trickling a byte a second, idle after a request), a health probe and an inference
    request are still answered within 2 x --timeout;
  - the Open Inference Protocol: /v2/models/NAME/versions/1/... answer as /v2/models/NAME/...; an
    unknown version is a 404 naming it; /infer takes other sizes the model runs (logits equal to
    `pola run`'s at that size); model metadata never names the server's files; health probes answer
    without the API key (unless --probes-need-key); the Bearer scheme is case-insensitive;
  - a 413 that ends its connection says only `Connection: close`; an unknown query parameter is a 400
    naming it.

  /usr/bin/python3 check_serve_guards.py --pola build/apps/pola --models models
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_fixture import Server, infer_body, infer_logits, pola_run_logits, test_arguments  # noqa: E402

INFER = "/v2/models/fashion/infer"
CLASSIFY = "/v2/models/fashion/classify"


FAILURES = []


def expect(cond, what):
    """Records a failed check and goes on, so one run names every item that fails."""
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)
    else:
        print("ok:", what.split(":")[0])


def json_error(body):
    err = json.loads(body)["error"]
    assert isinstance(err, str) and err, body
    return err


def raw(port, data, timeout=10.0):
    """Sends bytes, returns (status, head text, body bytes) of the first answer (or None on close)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        got = b""
        while b"\r\n\r\n" not in got:
            part = s.recv(65536)
            if not part:
                return None, "", b""
            got += part
        head, body = got.split(b"\r\n\r\n", 1)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v)
        while len(body) < length:
            part = s.recv(65536)
            if not part:
                break
            body += part
        return int(head.split(b" ")[1]), head.decode("latin-1"), body


def check_busy_port(args):
    with Server(args.pola, ["--model", f"fashion={args.model}"]) as s:
        second = subprocess.Popen([args.pola, "serve", "--port", str(s.port), "--model", f"fashion={args.model}"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _, err = second.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            second.kill()
            second.communicate()
            raise AssertionError(f"busy port: a second server on port {s.port} started and shares it")
        expect(second.returncode == 1 and f"port {s.port} is in use" in err,
               f"busy port: the second server exits 1 naming the port (exit {second.returncode}, {err.strip()!r})")
        s.check_alive("a second server tried its port")


def check_bodies_and_paths(s, args):
    with open(os.path.join(args.models, "samples", "0000_ankle-boot.png"), "rb") as f:
        png = f.read()
    for name, body in [("invalid UTF-8 in a string", b'{"a":"\xff"}'), ("a PNG as JSON", png)]:
        status, _, data = s.request("POST", INFER, body, {"Content-Type": "application/json"})
        expect(status == 400 and "JSON" in json_error(data), f"not UTF-8: {name} is a 400 with a JSON error ({status} {data[:120]!r})")
    t0 = time.time()
    try:
        status, head, body = raw(s.port, f"POST {INFER} HTTP/1.1\r\nHost: x\r\n\r\n".encode(), timeout=15)
        expect(status == 411 and "Content-Length" in json_error(body),
               f"no Content-Length: 411 at once, not after --timeout ({status} in {time.time() - t0:.1f} s)")
    except socket.timeout:
        expect(False, "no Content-Length: no answer within 15 s (--timeout is 30)")
    status, _, body = raw(s.port, b"POST /v2/nothing/here HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
    expect(status == 404 and "no endpoint" in json_error(body), f"unknown path with a body: 404 ({status})")
    status, _, body = raw(s.port, b"POST /v2/nothing HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999999\r\n\r\n")
    expect(status == 404, f"unknown path with a body over the limit: 404, not 413 ({status})")
    status, head, body = raw(s.port, f"GET {INFER} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    expect(status == 405 and "allow: post" in head.lower(), f"GET on infer: 405 with Allow: POST ({status})")


def stall_connections(port, count):
    """Opens `count` connections that each stall a different way; returns the sockets."""
    kinds = [
        b"",                                                                 # connected, silent
        b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n",                     # half a head
        f"POST {CLASSIFY} HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\nabc".encode(),  # half a body
        b"G",                                                                # trickles (see below)
        b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n",                 # idle after a request
    ]
    socks = []
    for i in range(count):
        c = socket.create_connection(("127.0.0.1", port), timeout=30)
        c.sendall(kinds[i % len(kinds)])
        socks.append((c, i % len(kinds) == 3))
    return socks


def check_stalled(args, work):
    threads, timeout = 2, 3
    with Server(args.pola, ["--model", f"fashion={args.model}", "--http-threads", str(threads), "--timeout",
                            str(timeout)]) as s:
        socks = stall_connections(s.port, 4 * threads)
        x = np.random.default_rng(1).standard_normal((1, 1, 32, 32)).astype(np.float32)
        body, headers = infer_body(x)
        try:
            answered = 0
            for round_ in range(3):
                for c, trickle in socks:
                    if trickle:
                        try:
                            c.sendall(b"E")
                        except OSError:
                            pass
                status, _, _ = s.request("GET", "/v2/health/live", timeout=2 * timeout)
                answered += status == 200
                status, h, data = s.request("POST", INFER, body, headers, timeout=2 * timeout)
                answered += status == 200
            expect(answered == 6, f"stalled connections: {4 * threads} stalled, probe and infer answered "
                                  f"within 2 x --timeout ({answered} of 6)")
        finally:
            for c, _ in socks:
                c.close()


def check_protocol(args, work):
    # 300 MB: the model's own and small sizes fit, a 4096 x 4096 image does not.
    os.environ["POLA_MEMORY_LIMIT_BYTES"] = str(300 << 20)
    with Server(args.pola, ["--model", f"fashion={args.model}", "--max-body-mb", "128"]) as s:
        _, _, meta = s.json("GET", "/v2/models/fashion")
        status, _, versioned = s.json("GET", "/v2/models/fashion/versions/1")
        expect(status == 200 and versioned == meta, f"versions: /versions/1 is the model's metadata ({status})")
        status, _, ready = s.json("GET", "/v2/models/fashion/versions/1/ready")
        expect(status == 200 and ready["ready"], f"versions: /versions/1/ready ({status})")
        status, _, data = s.request("GET", "/v2/models/fashion/versions/2")
        expect(status == 404 and "version '2'" in json_error(data), f"versions: version 2 is a 404 naming it ({status})")
        text = json.dumps(meta)
        expect(os.path.basename(args.model) not in text and os.path.dirname(os.path.abspath(args.model)) not in text,
               "metadata: no server file path in the model metadata")
        for size in [(32, 32), (64, 96)]:
            x = np.random.default_rng(size[0]).standard_normal((2, 1) + size).astype(np.float32)
            want = pola_run_logits(args.pola, args.model, x, work)
            status, h, data = s.request("POST", INFER, *infer_body(x, binary=True))
            expect(status == 200, f"other sizes: /infer takes {size} ({status} {data[:160]!r})")
            if status == 200:
                got = infer_logits(status, h, data)
                expect(np.array_equal(got.view(np.uint32), want.view(np.uint32)),
                       f"other sizes: /infer at {size} equals `pola run` bit for bit")
        status, h, data = s.request("POST", "/v2/models/fashion/versions/1/infer", *infer_body(x, binary=True))
        expect(status == 200 and np.array_equal(infer_logits(status, h, data), want) if status == 200 else False,
               f"versions: /versions/1/infer answers as /infer ({status})")
        status, _, data = s.request("POST", INFER, *infer_body(np.zeros((1, 1, 31, 32), np.float32)))
        expect(status == 400 and "31" in json_error(data), f"other sizes: a size the model cannot run is a 400 ({status})")
        status, h, data = s.request("POST", INFER, *infer_body(np.zeros((1, 1, 4096, 4096), np.float32), binary=True))
        expect(status == 413 and "needs" in json_error(data) and "available" in json_error(data),
               f"memory: a request over POLA_MEMORY_LIMIT_BYTES is a 413 naming the need ({status} {data[:200]!r})")
        s.check_alive("a request over the memory limit")
        status, h, data = s.request("POST", CLASSIFY + "?tpo=2", b"x")
        expect(status == 400 and "'tpo'" in json_error(data), f"query: ?tpo=2 is a 400 naming it ({status} {data!r})")
        status, h, data = s.request("GET", "/v2/health/live?verbose=1")
        expect(status == 400 and "'verbose'" in json_error(data), f"query: an unknown parameter on a probe ({status})")


def check_keys(args, work):
    os.environ.pop("POLA_MEMORY_LIMIT_BYTES", None)
    key = os.path.join(work, "key")
    with open(key, "w") as f:
        f.write("k1\n")
    with Server(args.pola, ["--model", f"fashion={args.model}", "--api-key-file", key, "--max-body-mb", "0.01"]) as s:
        for path in ["/v2/health/live", "/v2/health/ready"]:
            status, _, _ = s.request("GET", path)
            expect(status == 200, f"probes: {path} answers without the key ({status})")
        status, _, _ = s.request("GET", "/v2/models/fashion")
        expect(status == 401, f"keys: metadata still needs the key ({status})")
        for auth in ["bearer k1", "BEARER k1", "Bearer  k1 "]:
            status, _, data = s.request("GET", "/v2/models/fashion", headers={"Authorization": auth})
            expect(status == 200, f"keys: scheme is case-insensitive: {auth!r} ({status} {data[:80]!r})")
        status, _, _ = s.request("GET", "/v2/models/fashion", headers={"Authorization": "Basic k1"})
        expect(status == 401, f"keys: another scheme is refused ({status})")
        status, head, _ = raw(s.port, f"POST {CLASSIFY} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k1\r\n"
                                      f"Content-Length: 99999\r\n\r\n".encode())
        lower = head.lower()
        expect(status == 413 and "connection: close" in lower and "keep-alive" not in lower,
               f"413: says Connection: close and no Keep-Alive ({head!r})")
    with Server(args.pola, ["--model", f"fashion={args.model}", "--api-key-file", key, "--probes-need-key"]) as s:
        s.auth = {"Authorization": "Bearer k1"}
        status, _, _ = s.request("GET", "/v2/health/live")
        expect(status == 401, f"probes: --probes-need-key makes them need it ({status})")


def main():
    args = test_arguments()

    def bodies_and_paths(work):
        with Server(args.pola, ["--model", f"fashion={args.model}", "--timeout", "30"]) as s:
            check_bodies_and_paths(s, args)

    with tempfile.TemporaryDirectory() as work:
        for group in [lambda w: check_busy_port(args), bodies_and_paths, lambda w: check_stalled(args, w),
                      lambda w: check_protocol(args, w), lambda w: check_keys(args, w)]:
            try:
                group(work)
            except Exception as e:  # noqa: BLE001  (a timeout or a dead server ends its group, not the run)
                expect(False, f"{type(e).__name__}: {e}")
    if FAILURES:
        print(f"serve guards: {len(FAILURES)} failed")
        sys.exit(1)
    print("serve guards: OK")


if __name__ == "__main__":
    main()
