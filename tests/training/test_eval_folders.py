#!/usr/bin/python3
"""`pola eval` maps ImageFolder folders to the model's classes by name, not by sorted order.

  test_eval_folders.py --pola build/apps/pola [--limit 300]

The correct answer is the IDX run on the same first --limit Fashion-MNIST test images (its labels
come from the label file, no folders involved). Written as PNGs into ImageFolder trees:
  1. folders named after the classes, spelt loosely ('ankle-boot', 'T_SHIRT TOP', 'Pullover'),
     created in shuffled order, sorting differently from the class order: every image gets the
     IDX run's label and prediction, so the accuracy is the IDX run's;
  2. folders with other names: stderr says the mapping is by sorted order; --class-order and
     --class-order-file (folder names in class order) give the IDX run's labels again;
  3. subsets: a tree with folders for some classes only (named after them, or mapped with
     --class-order FOLDER=CLASS) gives the IDX run's labels and predictions for exactly the images
     of those classes (the model still choosing among all classes), and a note on stderr;
  4. a labels file naming classes as loosely as folders ('ankle-boot', 'T SHIRT TOP') gives the
     IDX run's labels;
  5. refused with exit 1 and a message naming the problem: folders that are neither all named
     after classes nor one per class, --class-order naming a folder that does not exist, too few
     folders in class order, a mix of both --class-order forms, a class that does not exist.
"""
import argparse
import csv
import json
import os
import random
import subprocess
import sys
import tempfile

from PIL import Image

import fashion_reference as fr


def pola_eval(pola, model, data, tmp, *extra):
    """(report, {image index: (label, top1)}, stderr) of one run; the image index is the file name."""
    pred_path = os.path.join(tmp, "predictions.csv")
    r = subprocess.run([pola, "eval", "--model", model, "--data", data, "--json", "--predictions", pred_path,
                        "--threads", "2", *extra], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"pola eval --data {data} {' '.join(extra)}: exit {r.returncode}\n{r.stderr}")
    with open(pred_path) as f:
        rows = list(csv.DictReader(f))
    return json.loads(r.stdout), {image_index(row["item"]): (int(row["label"]), int(row["top1"])) for row in rows}, r.stderr


def image_index(item):
    """'t10k[17]' (IDX) or 'folder/00017.png' (ImageFolder) -> 17."""
    if item.endswith("]"):
        return int(item[item.index("[") + 1:-1])
    return int(os.path.splitext(os.path.basename(item))[0])


def write_tree(root, images, labels, folder_of_class):
    """One folder per class, created in shuffled order; image i is <folder>/<i>.png."""
    classes = list(range(len(folder_of_class)))
    random.Random(5).shuffle(classes)
    for k in classes:
        os.makedirs(os.path.join(root, folder_of_class[k]))
    for i, (pixels, label) in enumerate(zip(images, labels)):
        Image.fromarray(pixels, mode="L").save(os.path.join(root, folder_of_class[label], f"{i:05d}.png"))


def loose_spelling(name, k):
    """The class name as people name folders: lower case, '-' or '_' for blanks, or upper case."""
    return [fr.slug(name), name.replace(" ", "_").replace("/", " ").upper(), name.replace("/", "-")][k % 3]


def check_model(pola, model, limit):
    failures = []

    def expect(ok, what):
        if not ok:
            failures.append(f"{os.path.basename(model)}: {what}")

    classes = fr.ShippedModel(model).classes
    images, labels = fr.test_split(limit)
    with tempfile.TemporaryDirectory() as tmp:
        truth, truth_rows, _ = pola_eval(pola, model, fr.DATA_DIR, tmp, "--split", "t10k", "--limit", str(limit))
        print(f"{os.path.basename(model)}: IDX run top-1 {100 * truth['top1_accuracy']:.2f}% on {limit} images")

        # 1. Folders named after the classes, loosely spelt, sorting in another order.
        named = [loose_spelling(c, k) for k, c in enumerate(classes)]
        assert sorted(named) != named, "the test needs folder names that sort differently from the class order"
        write_tree(os.path.join(tmp, "named"), images, labels, named)
        report, rows, err = pola_eval(pola, model, os.path.join(tmp, "named"), tmp)
        expect(rows == truth_rows, "named folders: labels/predictions differ from the IDX run")
        expect(abs(report["top1_accuracy"] - truth["top1_accuracy"]) < 1e-9,
               f"named folders: top-1 {100 * report['top1_accuracy']:.2f}%, IDX run {100 * truth['top1_accuracy']:.2f}%")
        expect("sorted" not in err, f"named folders: mapping by name should need no note, got {err!r}")
        print(f"  named folders {named}: top-1 {100 * report['top1_accuracy']:.2f}%")

        # 2. Other names: sorted order (said on stderr), or the order --class-order gives.
        other = [f"group_{n}" for n in random.Random(9).sample(range(10, 99), len(classes))]
        write_tree(os.path.join(tmp, "other"), images, labels, other)
        _, _, err = pola_eval(pola, model, os.path.join(tmp, "other"), tmp)
        expect("sorted order" in err, f"unnamed folders: stderr does not say how they were mapped: {err!r}")
        report, rows, _ = pola_eval(pola, model, os.path.join(tmp, "other"), tmp, "--class-order", ",".join(other))
        expect(rows == truth_rows, "--class-order: labels/predictions differ from the IDX run")
        order_file = os.path.join(tmp, "class_order.txt")
        with open(order_file, "w") as f:
            f.write("\n".join(other) + "\n")
        _, rows, _ = pola_eval(pola, model, os.path.join(tmp, "other"), tmp, "--class-order-file", order_file)
        expect(rows == truth_rows, "--class-order-file: labels/predictions differ from the IDX run")
        print(f"  --class-order / --class-order-file: top-1 {100 * report['top1_accuracy']:.2f}%")

        # 3. Subsets of the classes: exactly the IDX run's rows for the images of those classes.
        def subset_run(what, data, kept, *extra):
            want = {i: row for i, row in truth_rows.items() if row[0] in kept}
            try:
                report, rows, err = pola_eval(pola, model, data, tmp, *extra)
            except AssertionError as e:
                expect(False, f"{what}: {e}")
                return
            expect(rows == want, f"{what}: labels/predictions differ from the IDX run's for classes {sorted(kept)}")
            hits = sum(top1 == label for label, top1 in want.values())
            expect(report["images"] == len(want) and abs(report["top1_accuracy"] - hits / len(want)) < 1e-9,
                   f"{what}: {report['images']} images, top-1 {report['top1_accuracy']}; expected {len(want)}, "
                   f"{hits / len(want)}")
            classes_seen = [c["index"] for c in report["per_class"] if c["images"] > 0]
            expect(classes_seen == sorted(kept), f"{what}: per-class images for {classes_seen}")
            expect(all(c["top1_accuracy"] is None for c in report["per_class"] if c["images"] == 0),
                   f"{what}: classes without images must have no accuracy (null)")
            print(f"  {what}: {len(want)} images, top-1 {100 * report['top1_accuracy']:.2f}%")
            return err

        os.rename(os.path.join(tmp, "named", named[4]), os.path.join(tmp, "set_aside"))
        err = subset_run("named folders without class 4", os.path.join(tmp, "named"), set(range(len(classes))) - {4})
        expect(err is not None and f"{len(classes) - 1} of the model's {len(classes)} classes" in err,
               f"named folders without class 4: stderr does not say it is a subset: {err!r}")
        pair = os.path.join(tmp, "pair")
        os.makedirs(pair)
        for k in (1, 8):
            os.symlink(os.path.join(tmp, "named", named[k]), os.path.join(pair, loose_spelling(classes[k], k + 1)))
        subset_run("two named folders", pair, {1, 8})
        subset_run("--class-order FOLDER=CLASS for two folders", os.path.join(tmp, "other"), {1, 8},
                   "--class-order", f"{other[1]}={loose_spelling(classes[1], 2)},{other[8]}=8")

        # 4. A labels file naming classes as loosely as folder names.
        labels_file = os.path.join(tmp, "loose_labels.txt")
        with open(labels_file, "w") as f:
            for i, label in enumerate(labels):
                if label != 4:
                    f.write(f"{named[label]}/{i:05d}.png\t{loose_spelling(classes[label], label + 1)}\n")
        subset_run("labels file with loosely spelt class names", os.path.join(tmp, "named"),
                   set(range(len(classes))) - {4}, "--labels", labels_file)

        # 5. Refusals.
        partly = os.path.join(tmp, "partly_named")
        os.makedirs(os.path.join(partly, "misc"))
        os.symlink(os.path.join(tmp, "named", named[1]), os.path.join(partly, named[1]))
        refusals = [
            (["--data", partly], [partly, "'misc'", "FOLDER=CLASS"]),
            (["--data", os.path.join(tmp, "other"), "--class-order", ",".join(other[:-1] + ["no_such_folder"])],
             ["no_such_folder"]),
            (["--data", os.path.join(tmp, "other"), "--class-order", ",".join(other[:-1])], ["--class-order"]),
            (["--data", os.path.join(tmp, "other"), "--class-order", f"{other[0]}=0,{other[1]}"], ["not a mix"]),
            (["--data", os.path.join(tmp, "other"), "--class-order", f"{other[0]}=no such class"],
             ["'no such class'"]),
            (["--data", os.path.join(tmp, "other"), "--class-order", f"{other[0]}={len(classes)}"],
             [f"'{len(classes)}'"]),
        ]
        for argv, needles in refusals:
            r = subprocess.run([pola, "eval", "--model", model, *argv], capture_output=True, text=True)
            expect(r.returncode == 1 and "pola: error:" in r.stderr and all(n in r.stderr for n in needles),
                   f"eval {' '.join(argv)}: exit {r.returncode}, stderr {r.stderr.strip()!r}, expected {needles}")
        print("  refusals: exit 1 with a message")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", required=True)
    ap.add_argument("--limit", type=int, default=300)
    ap.add_argument("--models", nargs="+", default=fr.MODELS[:1])
    args = ap.parse_args()
    failures = []
    for model in args.models:
        failures += check_model(args.pola, model, args.limit)
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
