"""Write a model's weights in the forms the released checkpoints come in (SPEC 6):

  (a) wrapped: {'model': state_dict, 'optimizer': AdamW state, 'lr_scheduler': {...}, 'epoch': 3,
      'max_accuracy': 81.2, 'config': training_config.CfgNode}  (torch.save zip container)
  (b) bare state dict (torch.save)
  (c) safetensors copy of the state dict (buffers included, as a straight dump would have them)
"""
import torch

import safetensors_io
from training_config import training_config_for


def _optimizer_state(model, seed):
    """A real AdamW state_dict after one step on random gradients (exp_avg, exp_avg_sq per param).
    The model's parameters are restored afterwards."""
    backup = {k: v.detach().clone() for k, v in model.state_dict().items()}
    gen = torch.Generator().manual_seed(int(seed) + 17)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    for p in model.parameters():
        p.grad = torch.randn(p.shape, generator=gen, dtype=p.dtype) * 1e-3
    optimizer.step()
    state = optimizer.state_dict()
    model.zero_grad(set_to_none=True)
    model.load_state_dict(backup)
    return state


def save_wrapped(path, model, cfg, arch, seed=0):
    torch.save({
        "model": model.state_dict(),
        "optimizer": _optimizer_state(model, seed),
        "lr_scheduler": {"last_epoch": 3, "base_lrs": [1e-3], "t_initial": 300, "warmup_t": 20,
                         "_step_count": 4},
        "epoch": 3,
        "max_accuracy": 81.2,
        "config": training_config_for(cfg, arch),
    }, path)


def save_bare(path, model):
    torch.save(model.state_dict(), path)


def save_safetensors(path, model):
    safetensors_io.save_file(path, {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()})


CHECKPOINT_FORMS = {
    "wrapped": ("checkpoint_wrapped.pth", lambda p, m, cfg, arch, seed: save_wrapped(p, m, cfg, arch, seed)),
    "bare": ("checkpoint_bare.pth", lambda p, m, cfg, arch, seed: save_bare(p, m)),
    "safetensors": ("checkpoint.safetensors", lambda p, m, cfg, arch, seed: save_safetensors(p, m)),
}


def save_checkpoints(out_dir, model, cfg, arch, forms, seed=0):
    """Write the requested forms into out_dir; returns the written paths."""
    import os
    written = []
    for form in forms:
        filename, writer = CHECKPOINT_FORMS[form]
        path = os.path.join(out_dir, filename)
        writer(path, model, cfg, arch, seed)
        written.append(path)
    return written
