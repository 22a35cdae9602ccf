"""The three engines' copies of one model: the .pola file, the PyTorch module built from it, its ONNX export.

All three are made from the single model file that tests/reference/make_case.py writes, so every
engine runs the same random weights. Runs under /usr/bin/python3 (Debian's torch 1.13).
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


def make_case(arch, seed, case_dir):
    """Random-weight model file + one input + float64 reference logits (batch 1), made once per arch."""
    if os.path.exists(os.path.join(case_dir, "logits.npy")):
        return
    subprocess.run(["/usr/bin/python3", os.path.join(REFERENCE_DIR, "make_case.py"), "--arch", arch,
                    "--seed", str(seed), "--batch", "1", "--out", case_dir], check=True)


def load_torch_model(model_path):
    """float32 PyTorch model in eval mode with exactly the tensors of the model file."""
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

    def __init__(self, arch, work_dir, seed):
        self.arch = arch
        self.dir = os.path.join(work_dir, arch)
        self.seed = seed
        self.model_path = os.path.join(self.dir, "model.pola")
        self.input_npy = os.path.join(self.dir, "input.npy")
        self.reference_logits = os.path.join(self.dir, "logits.npy")
        self.channels = self.size = None

    def onnx_path(self, batch):
        return os.path.join(self.dir, f"b{batch}.onnx")

    def prepare(self, batches):
        make_case(self.arch, self.seed, self.dir)
        _, cfg, _ = read_model_file(self.model_path)
        self.channels, self.size = cfg["in_chans"], cfg["img_size"]
        for batch in batches:
            export_onnx(self.model_path, self.onnx_path(batch), batch)
        return self
