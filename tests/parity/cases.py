"""The parity cases: which model, seed, batch and randomization each suite runs."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))

from pola_config import PRESETS, REDUCED  # noqa: E402
from trap_cases import GELU_PROBE, SMALL_EMBED, SMALL_RESIDUAL, TINY_QUERY  # noqa: E402
from trap_cases import TRAP_BATCH, TRAP_CASES, case_name, trap_case_seed  # noqa: E402


class Case:
    """One engine-vs-reference comparison. `trap` set means: the engine must NOT match the
    reference run under that trap flag (and must match the correct reference)."""

    def __init__(self, name, arch, seed, batch, rand_options=None, trap=None, via_checkpoint=None):
        self.name, self.arch, self.seed, self.batch = name, arch, seed, batch
        self.rand_options = dict(rand_options or {})
        self.trap = trap
        # "wrapped" | "bare" | "safetensors": the engine gets the model through
        # `pola convert <checkpoint> --arch A` instead of the exporter's model file.
        self.via_checkpoint = via_checkpoint


FULL_FAST = ["pola_pvt_tiny", "pola_swin_t"]


def fast_cases():
    cases = []
    for arch in FULL_FAST:
        cases.append(Case(f"{arch}_b1", arch, seed=101, batch=1))
        cases.append(Case(f"{arch}_b3", arch, seed=102, batch=3))
    for k, arch in enumerate(REDUCED):
        cases.append(Case(f"{arch}_b1", arch, seed=200 + k, batch=1))
        cases.append(Case(f"{arch}_b3", arch, seed=300 + k, batch=3))
    # The released checkpoint forms through the C++ converter (SPEC 6).
    for arch, form in [("pola_pvt_tiny", "wrapped"), ("pola_pvt_tiny", "safetensors"),
                       ("pola_swin_t", "wrapped"), ("pola_swin_t", "bare")]:
        cases.append(Case(f"{arch}_b1_via_{form}", arch, seed=103, batch=1, via_checkpoint=form))
    # Numerics under which documented mistakes become visible (small LayerNorm variances,
    # near-zero attention denominators, GELU pre-activations near -2.5).
    cases.append(Case("stress_pvt_small_variance_tiny_query", "reduced_pvt_sr", seed=601, batch=2,
                      rand_options={**SMALL_RESIDUAL, **SMALL_EMBED, **TINY_QUERY}))
    cases.append(Case("stress_swin_tiny_query_gelu", "reduced_swin_windows", seed=602, batch=2,
                      rand_options={**TINY_QUERY, **GELU_PROBE}))
    return cases


def all_cases():
    rest = [a for a in PRESETS if a not in FULL_FAST]
    return fast_cases() + [Case(f"{arch}_b1", arch, seed=400 + k, batch=1) for k, arch in enumerate(rest)]


def mismatch_cases():
    return [Case(case_name(trap, arch, options), arch, seed=trap_case_seed(k), batch=TRAP_BATCH,
                 rand_options=options, trap=trap)
            for k, (trap, arch, options) in enumerate(TRAP_CASES)]


SUITES = {"fast": fast_cases, "all": all_cases, "mismatch": mismatch_cases}
