#!/usr/bin/python3
"""`pola convert` sets a model file's class names and preprocessing, and keeps them on re-conversion.

  - --labels round trip: the written file (read back with the independent safetensors reader of
    tests/reference) holds exactly the names of the labels file, its tensors bit-equal to the
    input's; `pola info --json` lists the names; `pola classify` prints them (the class it names
    for each index is the labels file's line for that index);
  - re-converting that model file with only --mean keeps the names and every other preprocess
    entry, and changes the mean to the numbers given; --std / --resize / --interpolation likewise;
  - bad options (a labels file with too few or too many names, a blank or repeated name, no
    names, a missing file, wrong mean/std/sizes, an interpolation the engine lacks) exit 1 with a
    message naming the file or option and the problem, and write no file.

  /usr/bin/python3 check_convert_metadata.py --pola build/apps/pola [--keep DIR]
"""
import json
import os
import sys

import numpy as np

from cli_fixtures import check, exit_status, fixture_work, pola

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import safetensors_io  # noqa: E402  (independent reader: struct + json + numpy)

def read_model(path):
    """(tensors, classes list, preprocess dict) of a model file, read without the engine."""
    tensors, meta = safetensors_io.load_file(path)
    return tensors, json.loads(meta["classes"]), json.loads(meta["preprocess"])


def write_lines(path, lines, trailer=""):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n" + trailer)
    return path


def same_tensors(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def class_names_for(n):
    """n distinct names with spaces, punctuation and non-ASCII letters, as real label files have."""
    animals = ["tabby cat", "sea lion", "great white shark", "crème brûlée", "T-shirt/top", "ankle boot",
               "jack-o'-lantern", "Ägyptische Katze", "snow leopard", "red fox", "barn owl", "koala"]
    return [f"{animals[i % len(animals)]} {i}" for i in range(n)]


def test_labels_round_trip(args, f, work):
    src_tensors, src_classes, src_pre = read_model(f["model"])
    n = len(src_classes)
    names = class_names_for(n)
    # Blank lines at the end (editors leave them) must be ignored.
    labels = write_lines(os.path.join(work, "labels.txt"), names, trailer="\n\n")
    out = os.path.join(work, "labelled.pola")
    r = pola(args, "convert", f["model"], "--labels", labels, "-o", out)
    check(r.returncode == 0, f"convert --labels exits 0 (exit {r.returncode}: {r.stderr.strip()[:300]})")
    if r.returncode != 0:
        return None, names
    tensors, classes, pre = read_model(out)
    check(classes == names, "the written classes are the labels file's lines, in order")
    check(same_tensors(tensors, src_tensors), "re-converting a model file keeps every tensor bit-equal")
    check(pre == src_pre, "--labels alone leaves the preprocessing as it was")

    r = pola(args, "info", out, "--json")
    info = json.loads(r.stdout) if r.returncode == 0 else {}
    check(info.get("classes") == names, "pola info --json lists the class names")

    # classify --top n lists every class: each index must carry the name on its line of the file.
    r = pola(args, "classify", "-m", out, f["photo"], "--json", "--top", str(n))
    ok = r.returncode == 0
    if ok:
        top = json.loads(r.stdout.splitlines()[0])["top"]
        ok = len(top) == n and all(t["class"] == names[t["index"]] for t in top)
    check(ok, "pola classify --json names each class index with the labels file's name")
    r = pola(args, "classify", "-m", out, f["photo"], "--top", "1")
    best = top[0]["class"] if r.returncode == 0 and ok else None
    check(best is not None and best in r.stdout, "pola classify's table prints the best class's label")
    return out, names


def test_reconvert_keeps(args, labelled, names, work):
    _, _, before = read_model(labelled)
    mean = [0.25, 0.5, 0.75]
    out = os.path.join(work, "mean.pola")
    r = pola(args, "convert", labelled, "--mean", ",".join(map(str, mean)), "-o", out)
    check(r.returncode == 0, f"re-convert with --mean exits 0 (exit {r.returncode}: {r.stderr.strip()[:300]})")
    if r.returncode != 0:
        return
    _, classes, pre = read_model(out)
    check(classes == names, "re-converting with only --mean keeps the class names")
    # A custom model's name cannot be derived from its config: it is kept too.
    shipped = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models", "fashion_pola_pvt.pola")
    renamed = os.path.join(work, "shipped_mean.pola")
    r = pola(args, "convert", shipped, "--mean", "0.3", "-o", renamed)
    arch_after = safetensors_io.load_file(renamed)[1].get("arch") if r.returncode == 0 else None
    check(arch_after == "fashion_pola_pvt", f"re-converting the shipped model keeps its arch name (got {arch_after!r})")
    check(np.allclose(pre.get("mean"), mean, rtol=0, atol=1e-12), f"--mean is written ({pre.get('mean')})")
    check({k: v for k, v in pre.items() if k != "mean"} == {k: v for k, v in before.items() if k != "mean"},
          "re-converting with only --mean keeps every other preprocess entry")

    # The other preprocessing options, on top of the kept mean.
    std, resize = [0.5, 0.25, 0.125], before["resize"] + 10
    out2 = os.path.join(work, "std.pola")
    r = pola(args, "convert", out, "--std", ",".join(map(str, std)), "--resize", str(resize),
             "--crop", str(before["crop"]), "--interpolation", before["interpolation"], "-o", out2)
    check(r.returncode == 0, f"re-convert with --std --resize --crop --interpolation exits 0 ({r.stderr.strip()[:300]})")
    if r.returncode == 0:
        _, classes2, pre2 = read_model(out2)
        check(classes2 == names and pre2["mean"] == pre["mean"], "a second re-conversion still keeps names and mean")
        check(np.allclose(pre2["std"], std, rtol=0, atol=1e-12) and pre2["resize"] == resize
              and pre2["crop"] == before["crop"], f"--std/--resize/--crop are written ({pre2})")


def test_refusals(args, f, work):
    n = len(read_model(f["model"])[1])
    names = class_names_for(n)
    d = os.path.join(work, "bad")
    os.makedirs(d, exist_ok=True)
    short = write_lines(os.path.join(d, "short.txt"), names[:-1])
    long = write_lines(os.path.join(d, "long.txt"), names + ["one too many"])
    hole = write_lines(os.path.join(d, "hole.txt"), names[:3] + [""] + names[3:-1])
    twice = write_lines(os.path.join(d, "twice.txt"), names[:-1] + [names[0]])
    empty = write_lines(os.path.join(d, "empty.txt"), [], trailer="\n")
    latin1 = os.path.join(d, "latin1.txt")
    with open(latin1, "wb") as out:
        out.write(("\n".join(names[:-1] + ["cr\xe8me"]) + "\n").encode("latin-1"))
    missing = os.path.join(d, "no_such_labels.txt")

    # (why, options, words the message must contain: the file or option, and the problem)
    cases = [
        ("too few names", ["--labels", short], [short, str(n - 1), str(n)]),
        ("too many names", ["--labels", long], [long, str(n + 1), str(n)]),
        ("blank line between names", ["--labels", hole], [hole, "line 4", "empty"]),
        ("a name twice", ["--labels", twice], [twice, names[0], "twice"]),
        ("no names", ["--labels", empty], [empty, "no class names"]),
        ("not UTF-8", ["--labels", latin1], [latin1, "UTF-8"]),
        ("missing labels file", ["--labels", missing], [missing, "cannot open"]),
        ("two means for three channels", ["--mean", "0.5,0.5"], ["--mean", "channel"]),
        ("four means", ["--mean", "0.5,0.5,0.5,0.5"], ["--mean", "channel"]),
        ("a mean that is not a number", ["--mean", "0.5,x,0.5"], ["--mean", "'x' is not a number"]),
        ("an empty field", ["--mean", "0.5,,0.5"], ["--mean", "not a number"]),
        ("NaN mean", ["--mean", "nan,0.5,0.5"], ["--mean", "finite"]),
        ("zero std", ["--std", "0.2,0,0.2"], ["--std", "greater than 0"]),
        ("negative std", ["--std", "-1,1,1"], ["--std", "greater than 0"]),
        ("infinite std", ["--std", "inf,1,1"], ["--std", "finite"]),
        ("zero resize", ["--resize", "0"], ["--resize", "positive"]),
        ("negative crop", ["--crop", "-3"], ["--crop", "positive"]),
        ("resize smaller than the kept crop", ["--resize", "40"], ["--resize 40", "crop"]),
        ("crop larger than resize", ["--resize", "60", "--crop", "72"], ["--crop 72", "larger"]),
        ("crop other than the model's input", ["--crop", "32"], ["--crop 32", "input"]),
        ("bilinear (not in the engine)", ["--interpolation", "bilinear"], ["--interpolation bilinear", "bicubic"]),
        ("nearest (not in the engine)", ["--interpolation", "nearest"], ["--interpolation nearest", "bicubic"]),
    ]
    for why, opts, words in cases:
        out = os.path.join(d, "out.pola")
        r = pola(args, "convert", f["model"], "-o", out, *opts)
        problems = []
        if r.returncode != 1:
            problems.append(f"exit {r.returncode}, expected 1")
        problems += [f"message lacks {w!r}" for w in words if w not in r.stderr]
        if "internal error" in r.stderr:
            problems.append("reported as an internal error")
        if os.path.exists(out):
            problems.append("wrote the output anyway")
            os.remove(out)
        check(not problems, f"refused: {why}" + (f": {'; '.join(problems)}\n    stderr: {r.stderr.strip()[:300]}"
                                                  if problems else ""))


def main():
    with fixture_work("pola_convert_meta_") as (args, work, f):
        labelled, names = test_labels_round_trip(args, f, work)
        if labelled:
            test_reconvert_keeps(args, labelled, names, work)
        test_refusals(args, f, work)
    if exit_status():
        sys.exit(1)
    print("all convert metadata checks passed")


if __name__ == "__main__":
    main()
