#!/usr/bin/python3
"""Every `pola` subcommand: --help works (exit 0), and wrong input fails cleanly.

Exit codes are the tool's contract (apps/command.h): 0 ok, 1 bad input or usage, 2 internal.
For every registered subcommand (read from `pola --help`) `--help` must exit 0 and print a
usage line. For the commands that read files, each kind of wrong file (missing, random bytes,
a PNG given as the model, a text file given as an image, an array of the wrong shape) must
exit 1 with a message on stderr that names the offending file, and never as an internal error.

  /usr/bin/python3 check_cli.py --pola build/apps/pola [--keep DIR]
"""
import os
import re
import sys

from cli_fixtures import check, exit_status, failures, fixture_work, pola, process_detail


def subcommands(args):
    r = pola(args, "--help")
    assert r.returncode == 0, r
    section = r.stdout.split("Subcommands:", 1)[1]
    return re.findall(r"^  (\S+)", section, flags=re.M)


def expect(args, argv, code, names=None, why=""):
    r = pola(args, *argv)
    problems = []
    if r.returncode != code:
        problems.append(f"exit {r.returncode}, expected {code}")
    if names and names not in r.stderr:
        problems.append(f"stderr does not name {names}")
    if code == 1 and "internal error" in r.stderr:
        problems.append("reported as an internal error")
    label = f"pola {' '.join(argv)}" + (f" ({why})" if why else "")
    check(not problems, label, f"{'; '.join(problems)}\n    {process_detail(r)}")
    return r


def bad_model_cases(f):
    """(why, model path) for each kind of wrong model file."""
    return [("missing model", f["missing"]), ("random bytes as model", f["random"]),
            ("PNG as model", f["photo"])]


def bad_image_cases(f):
    return [("missing image", f["missing"]), ("text file as image", f["text"]),
            ("model file as image", f["model"]), ("random bytes as image", f["random"])]


def main():
    with fixture_work("pola_cli_") as (args, work, f):
        out = os.path.join(work, "out")
        os.makedirs(out, exist_ok=True)

        commands = subcommands(args)
        print("subcommands:", " ".join(commands))
        # The commands checked below must all be listed: a lost command (or a help text the
        # parser no longer reads) fails here instead of silently skipping their checks.
        expected = {"info", "run", "classify", "attention-map", "bench", "eval", "convert", "preprocess",
                    "features", "serve"}
        if not expected <= set(commands):
            failures.append(f"pola --help lists no {sorted(expected - set(commands))}")
        for c in commands:
            r = expect(args, [c, "--help"], 0, why="help")
            if "Usage" not in r.stdout:
                failures.append(f"pola {c} --help prints no usage line")
        expect(args, [], 1, why="no subcommand")
        expect(args, ["no-such-command"], 1, why="unknown subcommand")
        expect(args, ["classify", "-m", f["model"], f["photo"], "--no-such-option"], 1, why="unknown option")

        # Commands that read a model file: each kind of wrong model.
        model_users = {
            "info": lambda m: ["info", m],
            "run": lambda m: ["run", "-m", m, "-i", f["input"], "-o", os.path.join(out, "l.npy")],
            "classify": lambda m: ["classify", "-m", m, f["photo"]],
            "attention-map": lambda m: ["attention-map", "-m", m, f["photo"], "--block", "block1.0", "--query", "1,1",
                                        "-o", os.path.join(out, "a.png")],
            "bench": lambda m: ["bench", "-m", m],
            "eval": lambda m: ["eval", "-m", m, "--data", work],
        }
        for c, argv in model_users.items():
            for why, bad in bad_model_cases(f):
                expect(args, argv(bad), 1, names=bad, why=why)

        # Commands that read images: each kind of wrong image.
        image_users = {
            "classify": lambda i: ["classify", "-m", f["model"], f["photo"], i],
            "attention-map": lambda i: ["attention-map", "-m", f["model"], i, "--block", "block1.0", "--query", "1,1",
                                        "-o", os.path.join(out, "a.png")],
            "preprocess": lambda i: ["preprocess", i, "-o", os.path.join(out, "x.npy")],
        }
        for c, argv in image_users.items():
            for why, bad in bad_image_cases(f):
                expect(args, argv(bad), 1, names=bad, why=why)

        # pola run: arrays that do not fit the model.
        run = lambda i: ["run", "-m", f["model"], "-i", i, "-o", os.path.join(out, "l.npy")]  # noqa: E731
        expect(args, run(f["wrong_shape"]), 1, names=f["wrong_shape"], why="input of the wrong shape")
        expect(args, run(f["photo"]), 1, names=f["photo"], why="PNG as input array")
        expect(args, run(f["missing"]), 1, names=f["missing"], why="missing input array")
        expect(args, ["convert", f["random"], "-o", os.path.join(out, "m.pola")], 1, names=f["random"],
               why="random bytes as checkpoint")
        # Output that cannot be written.
        unwritable = os.path.join(work, "no_such_dir", "map.png")
        expect(args, ["attention-map", "-m", f["model"], f["photo"], "--block", "block1.0", "--query", "1,1",
                      "-o", unwritable], 1, names=unwritable, why="unwritable output")

        # And the happy paths exit 0; commands that only write files say what they wrote on stderr,
        # one line, and leave stdout to data.
        logits = os.path.join(out, "l.npy")
        r = expect(args, run(f["input"]), 0, why="valid input")
        check(r.stdout == "" and len(r.stderr.splitlines()) == 1 and logits in r.stderr and "(2, 21)" in r.stderr,
              "pola run says on stderr what it wrote: the file and the logits' shape (2, 21)", process_detail(r))
        x = os.path.join(out, "x.npy")
        r = expect(args, ["preprocess", "-m", f["model"], f["photo"], "-o", x], 0, why="valid image")
        check(r.stdout == "" and len(r.stderr.splitlines()) == 1 and x in r.stderr and "(1, 3, 72, 72)" in r.stderr,
              "pola preprocess says on stderr what it wrote: the file and the shape (1, 3, 72, 72)", process_detail(r))
        features = os.path.join(out, "features")
        r = expect(args, ["features", "-m", f["model"], "-i", f["input"], "--stages", "4", "-o", features], 0,
                   why="valid input")
        check(r.stdout == "" and len(r.stderr.splitlines()) == 1 and features in r.stderr
              and "stage4.npy (2, 64, 9, 9)" in r.stderr and "pooled.npy (2, 64)" in r.stderr,
              "pola features says on stderr what it wrote: each file and its shape", process_detail(r))
        expect(args, ["classify", "-m", f["model"], f["photo"], f["photo2"]], 0, why="valid images")

        if exit_status():
            sys.exit(1)
        print("all CLI checks passed")


if __name__ == "__main__":
    main()
