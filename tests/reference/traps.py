"""Trap switches: each flag makes the reference commit ONE documented mistake "the intuitive way".

They exist so the parity driver can prove that parity *can* fail: the engine's logits must
disagree with the reference run under any one of these flags. A flag never changes the
parameters (the engine runs the very same model file), only what the forward pass computes.
"""

TRAPS = {
    # SPEC 4: PVT checkpoints contain norm.* but the reference never applies it.
    "pvt_final_norm": "PVT: apply the (unused) final LayerNorm before pooling",
    # SPEC 2: PVT blocks use eps 1e-6, patch embeddings (and sr norm) 1e-5.
    "pvt_block_eps_1e5": "PVT: block norm1/norm2 use eps 1e-5 instead of 1e-6",
    "pvt_embed_eps_1e6": "PVT: patch-embedding LayerNorms use eps 1e-6 instead of 1e-5",
    # SPEC 3 step 9: out = proj((attn + dwc(v)) * g).
    "gate_before_dwc": "L: multiply the attention output by g before adding the local branch",
    # SPEC 2: exact erf GELU.
    "gelu_tanh": "MLP: tanh-approximated GELU instead of the erf form",
    # SPEC 5: if the stage fits in the window, s = 0.
    "swin_shift_when_window_covers": "Swin: shift odd blocks by w/2 even when one window covers the stage",
    # SPEC 3 step 7: eps is added to the mean-based denominator q.kmean.
    "denominator_eps_outside_mean": "L: normalise by q.sum_k(phi_k) + eps (eps added to a sum, not a mean)",
    # SPEC 3 step 2.
    "kv_no_positional_encoding": "L: forget to add positional_encoding to k",
    # SPEC 5: quadrant order x00, x10, x01, x11 (row index first).
    "swin_merge_order": "Swin: patch merging concatenates x00, x01, x10, x11",
    # SPEC 3 step 3. The exponent is clamped into the legal range (1, 1+alpha) so the trap
    # gives finite (but wrong) numbers instead of overflowing for negative exponents.
    "power_no_sigmoid": "L: exponent p = clamp(1 + alpha*power, 1, 1+alpha) without the sigmoid",
    "scale_no_softplus": "L: divide q and k by the raw scale parameter instead of softplus(scale)",
    # SPEC 3 step 8: channel c = head*d + j uses dwc channel j.
    "dwc_head_interleaved": "L: local branch reads channels as c = j*h + head (head-minor layout)",
    # SPEC 5: shifted S windows need the -100 region mask.
    "swin_no_shift_mask": "Swin S: shifted windows without the -100 region mask",
    # SPEC 5: (dy, dx) = query position minus key position.
    "swin_rel_bias_key_minus_query": "Swin S: relative position index built from key minus query",
    # SPEC 5: every Swin LayerNorm uses eps 1e-5 (block, patch embedding, patch merging, final).
    "swin_block_eps_1e6": "Swin: block norm1/norm2 use eps 1e-6 instead of 1e-5",
    "swin_embed_eps_1e6": "Swin: the patch-embedding LayerNorm uses eps 1e-6 instead of 1e-5",
    "swin_merge_eps_1e6": "Swin: the patch-merging LayerNorm uses eps 1e-6 instead of 1e-5",
    "swin_final_eps_1e6": "Swin: the final LayerNorm uses eps 1e-6 instead of 1e-5",
    # SPEC 2: the spatial-reduction norm of PVT attention uses eps 1e-5.
    "pvt_sr_eps_1e6": "PVT: the spatial-reduction LayerNorm uses eps 1e-6 instead of 1e-5",
    # SPEC 3 step 7: the denominator eps is 1e-6.
    "denominator_eps_1e5": "L: denominator eps 1e-5 instead of 1e-6",
    # SPEC 5: S attention scales q by head_dim^-0.5.
    "swin_softmax_scale_dim": "Swin S: scale q by dim^-0.5 (all heads) instead of head_dim^-0.5",
    # Biases the S attention and the L local branch add.
    "swin_no_rel_bias": "Swin S: no relative position bias",
    "swin_qkv_no_bias": "Swin S: the qkv projection without its bias",
    "dwc_no_bias": "L: the local branch's depthwise conv without its bias",
}


# PolaFormer++ (pola_pp.py, SPEC-polaformerpp). Kept out of TRAPS: TRAP_CASES and the parity
# mismatch suite cover TRAPS, and the engine cannot run this family yet.
PP_TRAPS = {
    # SPEC-polaformerpp 2.7 / T3: RoPE on the numerator only; z uses the un-rotated features.
    "pp_rope_denominator": "PolaPP L: normalise by RoPE(phi) . mean(RoPE(psi)) (RoPE on the denominator too)",
    # SPEC-polaformerpp 2.6 / T4: RoPE pairs are interleaved (2t, 2t+1).
    "pp_rope_halves": "PolaPP: RoPE rotates pairs (t, t + D/2) instead of interleaved pairs (2t, 2t+1)",
}


def check_traps(traps):
    traps = frozenset(traps or ())
    unknown = traps - set(TRAPS) - set(PP_TRAPS)
    if unknown:
        raise KeyError(f"unknown trap flags {sorted(unknown)}; known: {sorted(TRAPS) + sorted(PP_TRAPS)}")
    return traps


class RunContext:
    """What one forward pass should do besides the plain computation.

    traps: active trap flags; dump: dict filled with named intermediates (or None);
    quadratic_attention: compute L attention in the explicit N x n form (self-check only).
    """

    def __init__(self, traps=(), dump=False, quadratic_attention=False):
        self.traps = check_traps(traps)
        self.dumps = {} if dump else None
        self.quadratic_attention = quadratic_attention

    def has(self, trap):
        return trap in self.traps

    def record(self, name, tensor):
        if self.dumps is not None:
            if name in self.dumps:
                raise RuntimeError(f"intermediate {name} recorded twice")
            self.dumps[name] = tensor.detach().clone()
