"""Starting and stopping `pola serve` for the tests in tests/serve (standard library only).

    with Server(pola, ["--model", "fashion=models/fashion_pola_pvt.pola"]) as s:
        status, headers, body = s.request("GET", "/v2/health/live")

The server listens on a free loopback port; leaving the `with` block always stops it (SIGTERM, then
SIGKILL if it does not exit in time) and checks nothing crashed. Its stderr (the access log) is kept
in `s.log()`.
"""
import argparse
import http.client
import json
import os
import signal
import socket
import subprocess
import tempfile
import time


def test_arguments(configure=None):
    """The command line every serve test takes: --pola BINARY --models DIR (args.model: the default model)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--pola", required=True)
    ap.add_argument("--models", required=True, help="the models/ folder (model files and samples/)")
    if configure:
        configure(ap)
    args = ap.parse_args()
    args.model = os.path.join(args.models, "fashion_pola_pvt.pola")
    return args


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerDied(AssertionError):
    pass


class Server:
    def __init__(self, pola, args, start_timeout=60):
        self.pola, self.args, self.start_timeout = pola, list(args), start_timeout
        self.proc = None
        self.returncode = None
        self.auth = {}  # headers check_alive() sends (the key, for a server started with --api-key-file)

    def __enter__(self):
        for _attempt in range(5):  # another process may take the port between free_port() and bind
            self.port = free_port()
            self.log_file = tempfile.TemporaryFile(mode="w+")
            self.proc = subprocess.Popen([self.pola, "serve", "--port", str(self.port), *self.args],
                                         stdout=subprocess.DEVNULL, stderr=self.log_file)
            deadline = time.time() + self.start_timeout
            while time.time() < deadline:
                if "listening on" in self.log():
                    return self
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("pola serve did not start:\n" + self.log())
            if "cannot listen" not in self.log() and "is in use" not in self.log():
                raise AssertionError(f"pola serve exited with {self.proc.returncode}:\n" + self.log())
        raise AssertionError("pola serve found no free port")

    def __exit__(self, *exc):
        self.stop()
        return False

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Sends `sig` and waits; returns the exit code (SIGKILL after `timeout` s is a failure)."""
        if self.proc is None or self.returncode is not None:
            return self.returncode
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"pola serve did not exit within {timeout} s of signal {sig}:\n" + self.log()[-4000:])
        self.returncode = self.proc.returncode
        if self.returncode < 0:
            raise ServerDied(f"pola serve died of signal {-self.returncode}:\n" + self.log()[-4000:])
        return self.returncode

    def log(self):
        self.log_file.flush()
        self.log_file.seek(0)
        return self.log_file.read()

    def alive(self):
        return self.proc.poll() is None

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def connection(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=60):
        """(status, headers dict with lower-case names, body bytes) of one request on a new connection."""
        c = self.connection(timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def json(self, method, path, body=None, headers=None, timeout=60):
        status, h, data = self.request(method, path, body, headers, timeout)
        return status, h, json.loads(data)

    def check_alive(self, what):
        if not self.alive():
            raise ServerDied(f"pola serve is gone after {what} (exit {self.proc.returncode}):\n" + self.log()[-4000:])
        status, _, body = self.request("GET", "/v2/health/live", headers=self.auth, timeout=30)
        assert status == 200, f"after {what}: /v2/health/live answered {status} {body!r}"


def infer_body(array, binary=False, request_id=None, binary_output=False):
    """(body bytes, headers) of a KServe v2 infer request for one float32 NCHW numpy array."""
    import numpy as np
    x = np.ascontiguousarray(array, dtype=np.float32)
    tensor = {"name": "input", "datatype": "FP32", "shape": list(x.shape)}
    if binary:
        tensor["parameters"] = {"binary_data_size": x.nbytes}
    else:
        tensor["data"] = [float(v) for v in x.reshape(-1)]  # repr of a float32 as a double: exact
    req = {"inputs": [tensor]}
    if request_id is not None:
        req["id"] = request_id
    if binary_output:
        req["outputs"] = [{"name": "logits", "parameters": {"binary_data": True}}]
    header = json.dumps(req).encode()
    if not binary:
        return header, {"Content-Type": "application/json"}
    return header + x.tobytes(), {"Inference-Header-Content-Length": str(len(header)),
                                  "Content-Type": "application/octet-stream"}


def infer_logits(status, headers, body):
    """The logits (numpy float32, [N, classes]) of a 200 infer answer, JSON or binary."""
    import numpy as np
    assert status == 200, f"infer answered {status}: {body[:500]!r}"
    n = int(headers.get("inference-header-content-length", len(body)))
    answer = json.loads(body[:n])
    out = answer["outputs"][0]
    assert out["name"] == "logits" and out["datatype"] == "FP32", out
    if "data" in out:
        return np.array(out["data"], dtype=np.float64).astype(np.float32).reshape(out["shape"])
    size = out["parameters"]["binary_data_size"]
    assert len(body) - n == size, (len(body), n, size)
    return np.frombuffer(body[n:], dtype="<f4").reshape(out["shape"])


def pola_run_logits(pola, model, array, work, precision="fp32"):
    """`pola run` logits of a float32 NCHW array (the reference the server must match)."""
    import numpy as np
    src, dst = os.path.join(work, "run_in.npy"), os.path.join(work, "run_out.npy")
    np.save(src, np.ascontiguousarray(array, dtype=np.float32))
    subprocess.run([pola, "run", "-m", model, "-i", src, "-o", dst, "--precision", precision], check=True,
                   stdout=subprocess.DEVNULL, timeout=600)
    return np.load(dst)
