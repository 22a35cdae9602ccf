#!/usr/bin/python3
"""`pola info` shows a model file's class names and preprocessing.

The model file is the CLI fixture with its metadata rewritten here (independent safetensors
writer of tests/reference, no `pola convert` involved) to class names and a preprocess object
no default would produce. Then:
  - `pola info --json`: "classes" is exactly that list and "preprocess" exactly that object;
  - the text form shows the first few class names, and the preprocessing's sizes, filter, mean
    and std.

  /usr/bin/python3 check_info.py --pola build/apps/pola [--keep DIR]
"""
import json
import os
import sys

from cli_fixtures import check, exit_status, fixture_work, pola_ok

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import model_integrity  # noqa: E402  (re-seals edited files: format version 2)
import safetensors_io  # noqa: E402  (independent reader/writer: struct + json + numpy)

SHOWN = 3  # the text form must show at least this many names


def relabelled_copy(src, dst):
    """src with its own class names and preprocessing; returns (names, preprocess)."""
    tensors, meta = safetensors_io.load_file(src)
    n = len(json.loads(meta["classes"]))
    names = [f"species {chr(ord('A') + i % 26)}{i}" for i in range(n)]
    pre = json.loads(meta["preprocess"])
    pre.update(resize=pre["crop"] + 7, mean=[0.125, 0.375, 0.625], std=[0.0625, 0.1875, 0.3125])
    meta = dict(meta, classes=json.dumps(names), preprocess=json.dumps(pre))
    model_integrity.save_model_file(dst, tensors, meta)
    return names, pre


def main():
    with fixture_work("pola_info_") as (args, work, f):
        model = os.path.join(work, "relabelled.pola")
        names, pre = relabelled_copy(f["model"], model)

        info = json.loads(pola_ok(args, "info", model, "--json").stdout)
        check(info.get("classes") == names, "info --json: 'classes' is the file's list of names")
        check(info.get("preprocess") == pre, "info --json: 'preprocess' is the file's object")
        check(info.get("num_classes") == len(names), "info --json: num_classes counts them")

        text = pola_ok(args, "info", model).stdout
        lines = {line.split()[0]: line for line in text.splitlines()[1:] if line.strip()}
        classes_line, pre_line = lines.get("classes", ""), lines.get("preprocess", "")
        check(all(n in classes_line for n in names[:SHOWN]), f"info: the classes line shows the first {SHOWN} names "
                                                               f"({classes_line.strip()!r})")
        check(str(len(names)) in classes_line, "info: the classes line gives the count")
        wanted = [str(pre["resize"]), str(pre["crop"]), pre["interpolation"]] + \
            [json.dumps(v) for v in pre["mean"] + pre["std"]]
        check(all(w in pre_line for w in wanted), f"info: the preprocess line shows resize, crop, filter, mean, std "
                                                  f"({pre_line.strip()!r})")
    if exit_status():
        sys.exit(1)
    print("all info checks passed")


if __name__ == "__main__":
    main()
