"""The three engines' copies of one model: the .pola file, the PyTorch module built from it, its ONNX export.

All three are made from the single model file that tests/reference/make_case.py writes, so every
engine runs the same random weights. Runs under /usr/bin/python3 (Debian's torch 1.13).
PolaFormer++ models go the way a user's do: the randomized reference is saved in the authors'
checkpoint layout and `pola convert` makes the model file (BatchNorms folded); the PyTorch model
is the reference itself, kept beside it as torch_model.pt ({"arch", "state"}), since the folded
model file no longer holds the BatchNorms the reference module has.
"""
import os
import subprocess
import sys

import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFERENCE_DIR = os.path.join(REPO, "tests", "reference")
sys.path.insert(0, REFERENCE_DIR)

from export_model import RECOMPUTABLE_BUFFERS, read_model_file  # noqa: E402
from polaformer_ref import build_model  # noqa: E402
from traps import RunContext  # noqa: E402

ONNX_OPSET = 17


class PlainForward(torch.nn.Module):
    """The reference's forward takes (img, ctx); ONNX export and timing want forward(img).

    The context carries no traps and no dumps, so this is the reference computation unchanged."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, img):
        return self.model(img, RunContext())


TORCH_MODEL = "torch_model.pt"


def make_pp_case(arch, seed, case_dir, pola):
    import numpy as np
    from pola_pp_checkpoint import save_pp_checkpoint
    from polaformer_ref import get_config, run
    from randomize import random_input, randomize
    if not pola:
        raise ValueError(f"{arch}: a PolaFormer++ case needs the pola binary to convert its checkpoint")
    os.makedirs(case_dir, exist_ok=True)
    cfg = get_config(arch)
    model = build_model(cfg)
    randomize(model, seed)
    ckpt = os.path.join(case_dir, "checkpoint.pth")
    save_pp_checkpoint(ckpt, model, arch, seed)
    subprocess.run([pola, "convert", ckpt, "--output", os.path.join(case_dir, "model.pola")], check=True,
                   stdout=subprocess.DEVNULL)
    os.remove(ckpt)
    torch.save({"arch": arch, "state": model.state_dict()}, os.path.join(case_dir, TORCH_MODEL))
    images = random_input(cfg, 1, seed)
    np.save(os.path.join(case_dir, "input.npy"), images.numpy())
    np.save(os.path.join(case_dir, "logits.npy"), run(model, images)[0].numpy())


def make_case(arch, seed, case_dir, pola=None):
    """Random-weight model file + one input + float64 reference logits (batch 1), made once per arch."""
    if os.path.exists(os.path.join(case_dir, "logits.npy")):
        return
    if arch.startswith("pola_pp_") or arch.startswith("reduced_pp_"):
        return make_pp_case(arch, seed, case_dir, pola)
    subprocess.run(["/usr/bin/python3", os.path.join(REFERENCE_DIR, "make_case.py"), "--arch", arch,
                    "--seed", str(seed), "--batch", "1", "--out", case_dir], check=True)


def load_torch_model(model_path):
    """float32 PyTorch model in eval mode with exactly the tensors of the model file."""
    saved = os.path.join(os.path.dirname(os.path.abspath(model_path)), TORCH_MODEL)
    if os.path.exists(saved):
        from polaformer_ref import get_config
        kept = torch.load(saved)
        cfg = get_config(kept["arch"])
        model = build_model(cfg)
        model.load_state_dict(kept["state"])
        return PlainForward(model.float().eval()), cfg
    tensors, cfg, _ = read_model_file(model_path)
    model = build_model(cfg)
    state = {name: torch.from_numpy(array) for name, array in tensors.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    # Only the buffers the exporter drops (recomputed at build time) may be missing.
    missing = [k for k in missing if k.rsplit(".", 1)[-1] not in RECOMPUTABLE_BUFFERS]
    if missing or unexpected:
        raise ValueError(f"{model_path}: missing {missing[:5]}, unexpected {unexpected[:5]}")
    return PlainForward(model.float().eval()), cfg


def input_shape(cfg, batch):
    return (batch, cfg["in_chans"], cfg["img_size"], cfg["img_size"])


def export_onnx(model_path, onnx_path, batch):
    """Export for one fixed batch size. Static shapes: the reference's reshapes use Python ints
    taken from tensor shapes, which tracing would freeze anyway, and ORT plans fixed shapes best."""
    if os.path.exists(onnx_path) and os.path.getmtime(onnx_path) >= os.path.getmtime(model_path):
        return onnx_path
    model, cfg = load_torch_model(model_path)
    example = torch.zeros(input_shape(cfg, batch))
    tmp = onnx_path + ".tmp"
    with torch.no_grad():
        torch.onnx.export(model, example, tmp, opset_version=ONNX_OPSET, input_names=["images"],
                          output_names=["logits"], do_constant_folding=True)
    import onnx
    onnx.checker.check_model(tmp)
    os.replace(tmp, onnx_path)
    return onnx_path


class ModelCase:
    """One arch's files under work_dir/<arch>/: model.pola, input.npy (batch 1), float64 logits.npy,
    and one ONNX export per batch size (b<B>.onnx)."""

    def __init__(self, arch, work_dir, seed, pola=None):
        self.arch = arch
        self.pola = pola  # converts PolaFormer++ checkpoints
        self.dir = os.path.join(work_dir, arch)
        self.seed = seed
        self.model_path = os.path.join(self.dir, "model.pola")
        self.input_npy = os.path.join(self.dir, "input.npy")
        self.reference_logits = os.path.join(self.dir, "logits.npy")
        self.channels = self.size = None

    def onnx_path(self, batch):
        return os.path.join(self.dir, f"b{batch}.onnx")

    def prepare(self, batches):
        make_case(self.arch, self.seed, self.dir, self.pola)
        _, cfg, _ = read_model_file(self.model_path)
        self.channels, self.size = cfg["in_chans"], cfg["img_size"]
        for batch in batches:
            export_onnx(self.model_path, self.onnx_path(batch), batch)
        return self
