#!/usr/bin/python3
"""What only some commands need is loaded by those commands alone: the HTTP plugin and libzip.

  check_loaded_on_demand.py --pola build/apps/pola

- `pola` itself links neither cpp-httplib nor libzip (readelf -d: no such NEEDED entries);
  libpola_http.so, beside it, links cpp-httplib.
- `pola convert` of a zip archive opens libzip: its entry is read, and its content refused by name.
- A copy of `pola` without the plugin still answers every other command (`--version`, `info` on a
  shipped model), and `serve` / `bench-serve` refuse with exit 1, naming libpola_http.so and the
  places they looked.
- With the plugin copied beside it, `serve` of a model file that does not exist gets as far as the
  server, which refuses the model by its path (so the plugin loaded and found the C API in `pola`).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_fixtures import check, exit_status  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "models", "fashion_pola_pvt.pola")
PLUGIN = "libpola_http.so"


def needed(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    return [line.split("[")[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def run(binary, *argv):
    return subprocess.run([binary, *argv], capture_output=True, text=True, timeout=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", required=True)
    args = ap.parse_args()
    plugin = os.path.join(os.path.dirname(os.path.abspath(args.pola)), PLUGIN)
    check(os.path.exists(plugin), f"{PLUGIN} is built beside pola", plugin)
    check(not any("httplib" in n or "libzip" in n for n in needed(args.pola)),
          "pola links neither cpp-httplib nor libzip", needed(args.pola))
    check(any("httplib" in n for n in needed(plugin)), f"{PLUGIN} links cpp-httplib", needed(plugin))
    with tempfile.TemporaryDirectory(prefix="pola_loaded_on_demand_") as tmp:
        archive = os.path.join(tmp, "junk.pth")
        with zipfile.ZipFile(archive, "w") as z:
            z.writestr("junk/data.pkl", b"not a pickle")
        r = run(args.pola, "convert", archive, "-o", os.path.join(tmp, "junk.pola"))
        check(r.returncode == 1 and "junk/data.pkl" in r.stderr and "libzip" not in r.stderr,
              "convert of a zip archive loads libzip: it reads the entry and refuses its content by name",
              f"exit {r.returncode}: {r.stderr}")
        alone = os.path.join(tmp, "bin", "pola")
        os.makedirs(os.path.dirname(alone))
        shutil.copy2(args.pola, alone)
        r = run(alone, "--version")
        check(r.returncode == 0, "pola without the plugin: --version works", r.stderr)
        r = run(alone, "info", MODEL)
        check(r.returncode == 0, "pola without the plugin: info works", r.stderr)
        for argv in (["serve", "-m", f"m={MODEL}", "--port", "1"],
                     ["bench-serve", "--url", "http://127.0.0.1:1", "-m", "m", "-n", "1"]):
            r = run(alone, *argv)
            check(r.returncode == 1 and PLUGIN in r.stderr and os.path.join(tmp, "lib", PLUGIN) in r.stderr,
                  f"pola without the plugin: {argv[0]} refuses, naming {PLUGIN} and where it looked",
                  f"exit {r.returncode}: {r.stderr}")
        shutil.copy2(plugin, os.path.join(tmp, "bin", PLUGIN))
        missing = os.path.join(tmp, "no-such-model.pola")
        r = run(alone, "serve", "-m", f"m={missing}", "--port", "1")
        check(r.returncode == 1 and missing in r.stderr and PLUGIN not in r.stderr,
              "with the plugin beside it: serve reaches the server, which refuses the missing model",
              f"exit {r.returncode}: {r.stderr}")
    return exit_status()


if __name__ == "__main__":
    sys.exit(main())
