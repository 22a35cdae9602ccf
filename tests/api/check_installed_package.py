#!/usr/bin/python3
"""The installed package works for an application outside this tree.

  1. `cmake --install BUILD --prefix TMP`; the headers, both libraries, the CMake package,
     polaformer.pc and the `pola` tool are there, and the shared library exports only pola_*;
  2. examples/classify_c is configured and built against TMP with find_package(polaformer)
     (shared, then static), and once more with a bare pkg-config compile line; a C++ program
     using polaformer.hpp is compiled with pkg-config flags (-std=c++14 -pedantic);
  3. each build classifies a photo with a model, and its top-5 equals what the installed
     `pola classify --json` prints (same classes, probabilities to 1e-5).

  /usr/bin/python3 check_installed_package.py --build BUILD --source SRC --fixture DIR --cc CC --cxx CXX
"""
import argparse
import glob
import json
import os
import shlex
import subprocess
import sys
import tempfile

TOP = 5


def sh(argv, env=None, cwd=None):
    r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(map(shlex.quote, argv))}: exit {r.returncode}\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    return r.stdout


def parse_example_output(text):
    rows = [line.split("\t") for line in text.strip().splitlines()]
    return [(int(i), float(p), name) for i, p, name in rows]


def compare(label, got, want):
    assert [g[0] for g in got] == [w[0] for w in want], f"{label}: classes {got} vs pola {want}"
    for g, w in zip(got, want):
        assert abs(g[1] - w[1]) < 1e-5 and g[2] == w[2], f"{label}: {g} vs pola {w}"
    print(f"ok   {label}: top-{TOP} equals `pola classify`")


def main():
    ap = argparse.ArgumentParser()
    for a in ("--build", "--source", "--fixture", "--cc", "--cxx"):
        ap.add_argument(a, required=True)
    ap.add_argument("--keep", help="work in this directory and keep it")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pola_install_") as tmp:
        work = args.keep or tmp
        prefix = os.path.join(work, "prefix")
        sh(["cmake", "--install", args.build, "--prefix", prefix])

        # 1. The installed files.
        def one(pattern):
            found = glob.glob(os.path.join(prefix, pattern))
            assert found, f"not installed: {pattern}"
            return found[0]
        one("include/polaformer/polaformer.h")
        one("include/polaformer/polaformer.hpp")
        shared = one("lib*/libpolaformer.so")
        one("lib*/libpolaformer.a")
        libdir = os.path.dirname(shared)
        for f in ("polaformerConfig.cmake", "polaformerConfigVersion.cmake", "polaformerTargets.cmake"):
            one(f"lib*/cmake/polaformer/{f}")
        pc_dir = os.path.dirname(one("lib*/pkgconfig/polaformer.pc"))
        pola = one("bin/pola")
        exported = [line.split()[-1] for line in sh(["nm", "-D", "--defined-only", shared]).splitlines()]
        stray = [s for s in exported if not s.startswith("pola_")]
        assert not stray, f"libpolaformer.so exports more than the C API: {stray[:10]}"
        assert "pola_run" in exported and "pola_abi_version" in exported, exported
        print(f"ok   installed to {prefix}; libpolaformer.so exports {len(exported)} symbols, all pola_*")

        model, photo = os.path.join(args.fixture, "model.pola"), os.path.join(args.fixture, "photo.png")
        out = json.loads(sh([pola, "classify", "-m", model, photo, "--json", "--top", str(TOP)]))
        want = [(t["index"], t["prob"], t["class"]) for t in out["top"]]

        # 2-3. The example through find_package, shared and static.
        example = os.path.join(args.source, "examples", "classify_c")
        for variant, static in (("shared", "OFF"), ("static", "ON")):
            build = os.path.join(work, f"example-{variant}")
            sh(["cmake", "-S", example, "-B", build, f"-DCMAKE_PREFIX_PATH={prefix}", f"-DPOLA_LINK_STATIC={static}",
                f"-DCMAKE_C_COMPILER={args.cc}", f"-DCMAKE_CXX_COMPILER={args.cxx}"])
            sh(["cmake", "--build", build])
            exe = os.path.join(build, "classify_c")
            compare(f"find_package, {variant}", parse_example_output(sh([exe, model, photo, str(TOP)])), want)
            r = subprocess.run([exe, os.path.join(args.fixture, "no_such.pola"), photo], capture_output=True, text=True)
            assert r.returncode == 1 and "no_such.pola" in r.stderr, (r.returncode, r.stderr)

        # The pkg-config line from README.md.
        env = dict(os.environ, PKG_CONFIG_PATH=pc_dir)
        flags = shlex.split(sh(["pkg-config", "--cflags", "--libs", "polaformer"], env=env))
        exe = os.path.join(work, "classify_c_pkgconfig")
        sh([args.cc, "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", os.path.join(example, "main.c"), "-o", exe,
            *flags, "-lm", f"-Wl,-rpath,{libdir}"])
        compare("pkg-config, shared", parse_example_output(sh([exe, model, photo, str(TOP)])), want)

        # The C++ header compiles cleanly on its own, against the same flags.
        cpp = os.path.join(work, "uses_hpp.cpp")
        with open(cpp, "w") as f:
            f.write('#include <polaformer/polaformer.hpp>\n#include <cstdio>\n'
                    'int main(int, char **argv) {\n'
                    '  polaformer::Model m(argv[1]);\n'
                    '  auto best = polaformer::top_k(m.run_images({argv[2]}), 1);\n'
                    '  std::printf("%d\\t%.6f\\t%s\\n", best[0].first, best[0].second, m.class_name(best[0].first).c_str());\n'
                    '}\n')
        exe = os.path.join(work, "uses_hpp")
        sh([args.cxx, "-std=c++14", "-Wall", "-Wextra", "-pedantic", "-Werror", cpp, "-o", exe, *flags,
            f"-Wl,-rpath,{libdir}"])
        compare("C++ header, top-1", parse_example_output(sh([exe, model, photo])), want[:1])


if __name__ == "__main__":
    main()
