"""For each trap flag, models on which that mistake is clearly visible in the logits.

Some mistakes only show under particular numerics (an eps matters only when variances are small,
the GELU form only for pre-activations where erf and tanh forms differ); the randomization
options below create those conditions. Traps of the shared L attention are checked on both
families. The reference self-test asserts every case moves the logits by at least
TRAP_MARGIN x the parity tolerance, so the parity mismatch test can never pass vacuously.
"""
from traps import TRAPS

TRAP_MARGIN = 10.0

GELU_PROBE = {"fc1_bias_shift": -2.5, "mlp_gain": 0.5, "fc2_gain": 10.0}
SMALL_RESIDUAL = {"residual_gain": 0.01}
SMALL_EMBED = {"embed_gain": 0.01}
TINY_QUERY = {"tiny_query_head": 1e-4}
SMALL_SR = {"sr_gain": 0.003}

_L_TRAPS = {
    "gate_before_dwc": {},
    "gelu_tanh": GELU_PROBE,
    "denominator_eps_outside_mean": TINY_QUERY,
    "kv_no_positional_encoding": {},
    "power_no_sigmoid": {},
    "scale_no_softplus": {},
    "dwc_head_interleaved": {},
    "denominator_eps_1e5": TINY_QUERY,
    "dwc_no_bias": {},
}

# (trap, arch, randomization options)
TRAP_CASES = (
    [(t, "reduced_pvt_sr", o) for t, o in _L_TRAPS.items()]
    + [(t, "reduced_swin_windows", o) for t, o in _L_TRAPS.items()]
    + [
        ("pvt_final_norm", "reduced_pvt_basic", {}),
        ("pvt_block_eps_1e5", "reduced_pvt_sr", SMALL_RESIDUAL),
        ("pvt_embed_eps_1e6", "reduced_pvt_basic", SMALL_EMBED),
        ("swin_shift_when_window_covers", "reduced_swin_mixed", {}),
        ("swin_merge_order", "reduced_swin_basic", {}),
        ("swin_no_shift_mask", "reduced_swin_windows", {}),
        ("swin_rel_bias_key_minus_query", "reduced_swin_mixed", {}),
        ("swin_block_eps_1e6", "reduced_swin_mixed", SMALL_RESIDUAL),
        ("swin_embed_eps_1e6", "reduced_swin_basic", SMALL_EMBED),
        ("swin_merge_eps_1e6", "reduced_swin_mixed", SMALL_RESIDUAL),
        ("swin_final_eps_1e6", "reduced_swin_mixed", SMALL_RESIDUAL),
        ("pvt_sr_eps_1e6", "reduced_pvt_sr", SMALL_SR),
        ("swin_softmax_scale_dim", "reduced_swin_mixed", {}),
        ("swin_no_rel_bias", "reduced_swin_mixed", {}),
        ("swin_qkv_no_bias", "reduced_swin_mixed", {}),
    ]
)

_missing = set(TRAPS) - {t for t, _, _ in TRAP_CASES}
assert not _missing, f"trap flags without a case: {_missing}"


TRAP_BATCH = 2


def trap_case_seed(k):
    """Seed of the k-th trap case, shared by the parity mismatch suite and the self-test, so the
    self-test's margin check covers exactly the models the mismatch suite uses."""
    return 500 + k


def case_name(trap, arch, options):
    suffix = "_" + "_".join(f"{k}{v:g}" for k, v in sorted(options.items())) if options else ""
    return f"trap_{trap}__{arch}{suffix}"
