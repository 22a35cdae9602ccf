#!/usr/bin/python3
"""Hostile HTTP requests against `pola serve`: the robustness table of tests/security extended to HTTP.

Each row sends raw bytes on a socket (truncated bodies, wrong Content-Length, huge headers and URLs,
a slow body, stalled clients, oversized chunked bodies, garbage, deeply nested JSON, a decompression
bomb...) and checks the answer is one of the statuses the row allows (or, where no answer can be
given, that the server closes the connection), that a refusal carries a JSON error, and that the
server still answers /v2/health/live afterwards. At the end SIGTERM must give exit 0: nothing crashed
or hung.

  /usr/bin/python3 check_serve_hostile.py --pola build/apps/pola --models models
"""
import json
import os
import socket
import struct
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_fixture import Server, test_arguments  # noqa: E402

TIMEOUT_S = 2          # the server's --timeout in this test
LIMIT = 64 * 1024      # --max-body-mb 0.0625
CLASSIFY = "/v2/models/fashion/classify"
INFER = "/v2/models/fashion/infer"
CLOSED = "closed"      # the server closed the connection without an answer


def exchange(port, chunks, pause=0.0, shut_write=False, read_timeout=60, expect_close=False):
    """Sends `chunks` (pausing between them), then reads until the server closes or answers.

    Returns (status or CLOSED, body bytes, seconds until the answer or close)."""
    t0 = time.time()
    with socket.create_connection(("127.0.0.1", port), timeout=read_timeout) as s:
        try:
            for i, c in enumerate(chunks):
                if i and pause:
                    time.sleep(pause)
                s.sendall(c)
            if shut_write:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            pass  # the server stopped reading (as it should, past a limit): read what it said
        data = b""
        try:
            while True:
                part = s.recv(65536)
                if not part:
                    break
                data += part
                if answer_complete(data):
                    break
        except (ConnectionResetError, socket.timeout):
            pass
        if expect_close and data:
            # Nothing may follow the answer: no second answer to the rest of the body read as requests.
            rest = b""
            try:
                while True:
                    part = s.recv(65536)
                    if not part:
                        break
                    rest += part
            except (ConnectionResetError, socket.timeout):
                rest += b"<no end of stream>"
            if rest:
                return "answered, then sent " + repr(rest[:80]), data, time.time() - t0
    elapsed = time.time() - t0
    if not data.startswith(b"HTTP/1."):
        return CLOSED, data, elapsed
    status = int(data.split(b" ", 2)[1])
    return status, data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else b"", elapsed


def answer_complete(data):
    if b"\r\n\r\n" not in data:
        return False
    head, body = data.split(b"\r\n\r\n", 1)
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":")[1])
    return False


def post(path, body, extra=b"", length=None):
    n = len(body) if length is None else length
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {n}\r\n".encode() + extra + b"\r\n" + body)


def png_bomb(width=60000, height=60000):
    """A valid PNG header claiming a huge image, with a tiny (wrong) IDAT."""
    def chunk(kind, payload):
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 100)) + chunk(b"IEND", b"")


def chunked(parts):
    out = b""
    for p in parts:
        out += f"{len(p):x}\r\n".encode() + p + b"\r\n"
    return out + b"0\r\n\r\n"


def cases():
    nested = b"[" * 30000 + b"]" * 30000  # under the body limit
    deep_data = json.dumps({"inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 1, 32, 32],
                                        "data": 0}]}).encode().replace(b"0}]}", b"[[[[[[[[1]]]]]]]]}]}")
    chunk_head = f"POST {CLASSIFY} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
    return [
        # (name, chunks, options, allowed statuses)
        ("truncated body, then the client closes", [post(CLASSIFY, b"\x89PNG" * 4, length=1000)],
         dict(shut_write=True), {400, CLOSED}),
        ("Content-Length larger than the body, client stalls", [post(CLASSIFY, b"abc", length=5000)], {},
         {400, 408, CLOSED}),
        ("Content-Length smaller than the body", [post(INFER, b'{"inputs": [1, 2, 3]}', length=8)], {}, {400}),
        ("Content-Length not a number", [post(CLASSIFY, b"x", extra=b"", length="ten")], {}, {400}),
        ("Content-Length negative", [post(CLASSIFY, b"x", length=-5)], {}, {400}),
        ("Content-Length of 10^25", [post(CLASSIFY, b"x", length=10**25)], {}, {400, 413}),
        ("Content-Length over the limit, body never sent", [post(CLASSIFY, b"", length=LIMIT * 1000)],
         dict(expect_close=True), {413}),
        ("Content-Length over the limit, 8 MB body sent", [post(CLASSIFY, b"z" * (8 << 20))],
         dict(expect_close=True, read_timeout=5), {413}),
        ("two Content-Length headers", [post(CLASSIFY, b"abcd", extra=b"Content-Length: 2\r\n")], {}, {400}),
        ("a 100 KB header", [post(CLASSIFY, b"x", extra=b"X-Big: " + b"a" * 100000 + b"\r\n")], {},
         {400, 413, 431, CLOSED}),
        ("10000 headers", [post(CLASSIFY, b"x", extra=b"".join(b"X-%d: 1\r\n" % i for i in range(10000)))], {},
         {400, 413, 431, CLOSED}),
        ("a 100 KB URL", [f"GET /v2/models/{'a' * 100000} HTTP/1.1\r\nHost: x\r\n\r\n".encode()], {},
         {400, 404, 414, CLOSED}),
        ("slow body, one byte every 0.5 s", [post(CLASSIFY, b"", length=100)] + [b"x"] * 12, dict(pause=0.5),
         {400, 408, CLOSED}),
        ("slow headers, one line every 0.5 s",
         [f"POST {CLASSIFY} HTTP/1.1\r\n".encode()] + [b"X-Slow: 1\r\n"] * 12 + [b"\r\n"], dict(pause=0.5),
         {400, 408, CLOSED}),
        ("headers never finished", [f"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n".encode()], {}, {400, 408, CLOSED}),
        ("chunked body over the limit", [chunk_head, chunked([b"y" * 32768] * 64)], dict(expect_close=True),
         {413, CLOSED}),
        ("chunked body with a bad chunk size", [chunk_head, b"zz\r\nabc\r\n0\r\n\r\n"], {}, {400, CLOSED}),
        ("random bytes", [os.urandom(4096)], {}, {400, CLOSED}),
        ("NUL bytes in the request line", [b"GET /v2/health\0/live HTTP/1.1\r\nHost: x\r\n\r\n"], {},
         {400, 404, CLOSED}),
        ("unknown method", [b"BREW /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"], {}, {400, 404, 405, CLOSED}),
        ("HTTP/0.9-style request line", [b"GET /v2/health/live\r\n\r\n"], {}, {400, CLOSED}),
        ("HTTP/1.0 without Host", [b"GET /v2/health/live HTTP/1.0\r\n\r\n"], {}, {200}),
        ("two pipelined requests", [b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n" * 2], {}, {200}),
        ("connect and close at once", [], dict(shut_write=True), {CLOSED}),
        ("JSON nested 30000 deep", [post(INFER, nested)], dict(mention="deeper than"), {400}),
        ("data nested deeper than NCHW", [post(INFER, deep_data)], {}, {400}),
        ("JSON number 1e400", [post(INFER, b'{"inputs":[{"name":"input","datatype":"FP32","shape":[1,1,32,32],'
                                           b'"data":[1e400]}]}')], {}, {400}),
        ("a 60000 x 60000 PNG header", [post(CLASSIFY, png_bomb())], {}, {400}),
        ("a body that is only a PNG signature", [post(CLASSIFY, b"\x89PNG\r\n\x1a\n")], {}, {400}),
        ("binary header length past the body",
         [post(INFER, b'{"inputs":[]}', extra=b"Inference-Header-Content-Length: 4000\r\n")], {}, {400}),
        ("binary header length not a number",
         [post(INFER, b'{"inputs":[]}', extra=b"Inference-Header-Content-Length: -1\r\n")], {}, {400}),
        ("gzip Content-Encoding of garbage", [post(CLASSIFY, b"not gzip", extra=b"Content-Encoding: gzip\r\n")], {},
         {400, 415, CLOSED}),
    ]


def key_cases():
    """Rows for a server started with --api-key-file (key "k1")."""
    return [
        ("wrong API key, body sent", [post(CLASSIFY, b"z" * 50000, extra=b"Authorization: Bearer nope\r\n")],
         dict(expect_close=True), {401}),
        ("no API key, body sent", [post(INFER, b"{}" * 20000)], dict(expect_close=True), {401}),
        ("API key of 100 KB", [post(CLASSIFY, b"z", extra=b"Authorization: Bearer " + b"k" * 100000 + b"\r\n")], {},
         {400, 401, 431, CLOSED}),
        ("right API key, not an image", [post(CLASSIFY, b"z" * 100, extra=b"Authorization: Bearer k1\r\n")], {},
         {400}),
    ]


def run_table(server, rows, failures):
    for name, chunks, options, allowed in rows:
        print(f"{name:50s} ...", end="", flush=True)
        options = dict(options)
        mention = options.pop("mention", None)  # a word the JSON error must contain
        status, body, seconds = exchange(server.port, chunks, **options)
        print("\r", end="")
        verdict = "ok"
        if status not in allowed:
            verdict = f"FAIL: expected one of {sorted(map(str, allowed))}"
        elif status != CLOSED and status >= 400:
            try:
                error = json.loads(body)["error"]
                assert isinstance(error, str)
                if mention and mention not in error:
                    verdict = f"FAIL: the error {error!r} does not say {mention!r}"
            except Exception:  # noqa: BLE001
                verdict = f"FAIL: the {status} answer has no JSON error: {body[:200]!r}"
        print(f"{name:50s} -> {status} in {seconds:5.1f} s  {verdict}")
        if verdict != "ok":
            failures.append(name)
        try:
            server.check_alive(name)
        except AssertionError as e:
            print(e)
            failures.append(name + " (the server does not answer afterwards)")
            return
    code = server.stop()
    if code != 0:
        failures.append(f"exit code {code} after SIGTERM")


def main():
    args = test_arguments()
    model = args.model
    failures = []
    with Server(args.pola, ["--model", f"fashion={model}", "--timeout", str(TIMEOUT_S), "--max-body-mb",
                            str(LIMIT / 1024 / 1024), "--http-threads", "8"]) as s:
        run_table(s, cases(), failures)
    with tempfile.TemporaryDirectory() as work:
        key = os.path.join(work, "key")
        with open(key, "w") as f:
            f.write("k1\n")
        with Server(args.pola, ["--model", f"fashion={model}", "--timeout", str(TIMEOUT_S), "--api-key-file", key]) as s:
            s.auth = {"Authorization": "Bearer k1"}
            run_table(s, key_cases(), failures)
    if failures:
        print("FAILED:", failures)
        sys.exit(1)
    print("serve hostile requests: OK")


if __name__ == "__main__":
    main()
