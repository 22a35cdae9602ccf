#!/usr/bin/python3
"""The mutation pass: applies each deliberate break of tests/mutation/breaks.py to a private
worktree of HEAD, rebuilds, runs the tests that must catch it, and prints a Markdown table of the
breaks and what caught them. Exit 1 when a break was not caught.

  tests/mutation/run_breaks.py [--worktree /tmp/pola-mutation] [--only ID,ID] [--jobs 2]
  tests/mutation/run_breaks.py --check-applies   only that every break's text occurs once in the tree

A break whose catching tests are all skipped here (a CPU feature this machine lacks) is reported as
not checkable, never as caught. The worktree is left in place (with its build) for the next run.
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from breaks import BREAKS  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, "..", ".."))


def sh(cmd, cwd, check=True, capture=True):
    p = subprocess.run(cmd, cwd=cwd, shell=isinstance(cmd, str), text=True,
                       stdout=subprocess.PIPE if capture else None, stderr=subprocess.STDOUT if capture else None)
    if check and p.returncode != 0:
        raise RuntimeError(f"{cmd} failed ({p.returncode}):\n{(p.stdout or '')[-3000:]}")
    return p


def prepare(worktree, jobs):
    head = sh(["git", "rev-parse", "HEAD"], REPO).stdout.strip()
    if not os.path.isdir(worktree):
        sh(["git", "worktree", "add", "--detach", worktree, head], REPO)
    sh(["git", "checkout", "--detach", "--force", head], worktree)
    sh(["git", "reset", "--hard", head], worktree)
    sh(["cmake", "-S", ".", "-B", "build", "-DCMAKE_BUILD_TYPE=Release", "-DPOLA_BUILD_BENCH=OFF"], worktree)
    sh(["cmake", "--build", "build", f"-j{jobs}"], worktree)
    return head


def default_tests(worktree, regex):
    out = sh(["ctest", "--test-dir", "build", "-N", "-LE", "slow", "-R", regex], worktree).stdout
    return re.findall(r"Test +#\d+: (\S+)", out)


def run_break(worktree, brk, jobs):
    ident, what, path, old, new, regex = brk
    full = os.path.join(worktree, path)
    with open(full) as f:
        text = f.read()
    if text.count(old) != 1:
        return ident, what, "-", f"NOT APPLIED: the text to replace occurs {text.count(old)} times in {path}"
    tests = default_tests(worktree, regex)
    if not tests:
        return ident, what, "-", f"NOT CHECKED: no default test matches {regex}"
    try:
        with open(full, "w") as f:
            f.write(text.replace(old, new))
        sh(["cmake", "--build", "build", f"-j{jobs}"], worktree)
        p = sh(["ctest", "--test-dir", "build", "-R", regex, "-LE", "slow", "-j", str(jobs)], worktree, check=False)
    finally:
        with open(full, "w") as f:
            f.write(text)
    failed = re.findall(r"\d+ - (\S+) \((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)", p.stdout)
    skipped = re.findall(r"Test +#\d+: (\S+) \.+\*+Skipped", p.stdout)
    if failed:
        return ident, what, ", ".join(sorted({f[0] for f in failed})), "caught"
    if len(skipped) == len(tests):
        return ident, what, ", ".join(tests), "NOT CHECKABLE here: every catching test skipped (CPU feature missing)"
    return ident, what, ", ".join(tests), "NOT CAUGHT"


def check_applies(breaks):
    """A refactor that moves the code a break edits would silently retire the break: say so."""
    stale = 0
    for ident, _, path, old, _, _ in breaks:
        with open(os.path.join(REPO, path)) as f:
            count = f.read().count(old)
        if count != 1:
            print(f"break {ident}: the text to replace occurs {count} times in {path}")
            stale += 1
    print(f"{len(breaks) - stale} of {len(breaks)} breaks apply to this tree")
    return 1 if stale else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worktree", default="/tmp/pola-mutation")
    ap.add_argument("--only", default="", help="comma-separated break ids")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--check-applies", action="store_true",
                    help="check that every break's text occurs exactly once in this tree, then exit")
    args = ap.parse_args()
    chosen = [b for b in BREAKS if not args.only or b[0] in args.only.split(",")]
    if args.check_applies:
        sys.exit(check_applies(chosen))
    head = prepare(args.worktree, args.jobs)
    print(f"mutation pass on {head[:10]}: {len(chosen)} breaks\n")
    print("| break | what it does | failing test(s) | result |\n|---|---|---|---|", flush=True)
    uncaught = 0
    for brk in chosen:
        ident, what, tests, result = run_break(args.worktree, brk, args.jobs)
        print(f"| `{ident}` | {what} | {tests} | {result} |", flush=True)
        uncaught += result.startswith("NOT CAUGHT") or result.startswith("NOT APPLIED")
    sh(["cmake", "--build", "build", f"-j{args.jobs}"], args.worktree)  # back to HEAD's binaries
    sys.exit(1 if uncaught else 0)


if __name__ == "__main__":
    main()
