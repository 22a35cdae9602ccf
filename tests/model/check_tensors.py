"""The engine's tensor list (model/tensor_list.h, each family's FamilyRules::tensors) against
the PyTorch reference's state dict (tests/reference): the same names, in the same order, with
the same shapes, for every preset and reduced variant of every family. The reference model is
instantiated here, so what is compared is what its state_dict() holds, not a table.

Order: PolaPP's list is the authors' state-dict order (SPEC-polaformerpp 3.2) and is compared
entry by entry; the PVT and Swin lists keep their own order (model order, not PyTorch's
registration order), so for them the name -> shape sets are compared.

Run: /usr/bin/python3 check_tensors.py --print-tensors build/tests/model/print_tensors
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from polaformer_ref import PP_PRESETS, PP_REDUCED, PRESETS, REDUCED, build_model, get_config  # noqa: E402
from engine_config import engine_config  # noqa: E402

# The engine has the presets of every family (model/presets.cpp); reduced variants go as JSON.
CASES = [(n, True) for n in list(PRESETS) + list(PP_PRESETS)] + [(n, False) for n in list(REDUCED) + list(PP_REDUCED)]


def engine_tensors(tool, what):
    r = subprocess.run([tool, what], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"print_tensors {what}: exit {r.returncode}: {r.stderr}")
    return json.loads(r.stdout)


def first_difference(got, want):
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"entry {i}: engine {g[0]} {tuple(g[1])}, reference {w[0]} {tuple(w[1])}"
    if len(got) != len(want):
        extra = got[len(want):] if len(got) > len(want) else want[len(got):]
        who = "engine" if len(got) > len(want) else "reference"
        return f"the {who} has {abs(len(got) - len(want))} more, first {extra[0][0]} {tuple(extra[0][1])}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--print-tensors", required=True, help="the print_tensors test tool")
    ap.add_argument("--only", help="run only the case of this name")
    args = ap.parse_args()
    failures = 0
    for name, is_preset in CASES:
        if args.only and name != args.only:
            continue
        cfg = get_config(name)
        want_cfg = engine_config(cfg)
        got = engine_tensors(args.print_tensors, name if is_preset else json.dumps(want_cfg))
        if got["config"] != want_cfg:
            print(f"FAIL {name}: the engine's config differs from the reference's:\n  engine    {got['config']}"
                  f"\n  reference {want_cfg}")
            failures += 1
            continue
        want = [[k, list(v.shape)] for k, v in build_model(cfg).state_dict().items()]
        mine = [[t[0], t[1]] for t in got["tensors"]]
        if cfg["family"] == "pp":
            diff = first_difference(mine, want)
        else:
            diff = first_difference(sorted(mine), sorted(want))
        if diff:
            print(f"FAIL {name} ({cfg['family']}): tensor lists differ at {diff}")
            failures += 1
        else:
            what = "names, order and shapes" if cfg["family"] == "pp" else "names and shapes"
            print(f"ok   {name} ({cfg['family']}): {len(mine)} tensors, {what} equal")
    if failures:
        print(f"{failures} list(s) differ")
        return 1
    print("all tensor lists agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
