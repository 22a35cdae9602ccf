#!/usr/bin/python3
"""`pola classify` agrees with `pola preprocess` + `pola run` + a softmax done here.

  - --json: per image the top-K (index, class, prob) equal the softmax of the logits `pola run`
    computes for the same preprocessed images (indices exactly, probabilities to 1e-5);
  - batching does not change the answer (--batch 1 vs 2 vs 8 on 3 images);
  - --top beyond the class count lists every class once, probabilities summing to 1;
  - the table for people: one header, K rows per image, columns aligned.

  /usr/bin/python3 check_classify.py --pola build/apps/pola [--keep DIR]
"""
import json
import os

import numpy as np

from cli_fixtures import fixture_work, pola_ok

TOP = 4


def classify_json(args, model, images, *extra):
    lines = pola_ok(args, "classify", "-m", model, *images, "--json", *extra).stdout.splitlines()
    return [json.loads(line) for line in lines]


def main():
    with fixture_work("pola_classify_") as (args, work, f):
        model = f["model"]
        images = [f["photo"], f["photo2"], f["photo"]]

        # The expectation: preprocess each image, run the batch, softmax here.
        meta_spec = json.loads(pola_ok(args, "info", model, "--json").stdout)["preprocess"]
        xs = []
        for i, img in enumerate(images):
            path = os.path.join(work, f"x{i}.npy")
            pola_ok(args, "preprocess", img, "--spec", json.dumps(meta_spec), "-o", path)
            xs.append(np.load(path))
        np.save(os.path.join(work, "batch.npy"), np.concatenate(xs))
        pola_ok(args, "run", "-m", model, "-i", os.path.join(work, "batch.npy"), "-o", os.path.join(work, "logits.npy"))
        logits = np.load(os.path.join(work, "logits.npy")).astype(np.float64)
        probs = np.exp(logits - logits.max(1, keepdims=True))
        probs /= probs.sum(1, keepdims=True)

        runs = {b: classify_json(args, model, images, "--top", str(TOP), "--batch", str(b)) for b in (1, 2, 8)}
        for b, got in runs.items():
            assert [g["file"] for g in got] == images, f"--batch {b}: files {[g['file'] for g in got]}"
            for i, g in enumerate(got):
                want = np.argsort(-probs[i], kind="stable")[:TOP]
                assert [t["index"] for t in g["top"]] == list(want), f"--batch {b} image {i}: {g['top']} vs {want}"
                for t in g["top"]:
                    assert abs(t["prob"] - probs[i, t["index"]]) < 1e-5, f"--batch {b} image {i}: {t} vs {probs[i]}"
                    assert t["class"] == f"class_{t['index']}", t
        print(f"ok   --json top-{TOP} equals softmax(pola run) for batch sizes 1, 2, 8")

        everything = classify_json(args, model, [f["photo"]], "--top", "1000")[0]["top"]
        assert sorted(t["index"] for t in everything) == list(range(logits.shape[1])), everything
        assert abs(sum(t["prob"] for t in everything) - 1) < 1e-6
        probs_listed = [t["prob"] for t in everything]
        assert probs_listed == sorted(probs_listed, reverse=True), "not sorted best first"
        print("ok   --top beyond the class count lists every class once, best first, summing to 1")

        table = pola_ok(args, "classify", "-m", model, *images, "--top", "3").stdout.splitlines()
        assert table[0].split() == ["IMAGE", "RANK", "PROB", "CLASS"], table[0]
        assert len(table) == 1 + 3 * len(images), table
        prob_column = table[0].index("PROB") + len("PROB")
        for row in table[1:]:
            assert row[prob_column - 1] == "%", f"probability column not aligned: {row!r}"
        print("ok   table: header, 3 rows per image, aligned columns")


if __name__ == "__main__":
    main()
