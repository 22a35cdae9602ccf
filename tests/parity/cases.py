"""The parity cases: which model, seed, batch and randomization each suite runs."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))

from pola_config import PRESETS, REDUCED  # noqa: E402
from trap_cases import GELU_PROBE, SMALL_EMBED, SMALL_RESIDUAL, SMALL_SR, TINY_QUERY  # noqa: E402
from trap_cases import TRAP_BATCH, TRAP_CASES, case_name, trap_case_seed  # noqa: E402


class Case:
    """One engine-vs-reference comparison. `trap` set means: the engine must NOT match the
    reference run under that trap flag (and must match the correct reference)."""

    def __init__(self, name, arch, seed, batch, rand_options=None, trap=None, via_checkpoint=None, size=None,
                 features=False):
        self.name, self.arch, self.seed, self.batch = name, arch, seed, batch
        # (H, W): the input size when not the model's own img_size.
        self.size = size
        # Also compare `pola features` (every stage, NCHW, and the pooled embedding) with the
        # reference's intermediates.
        self.features = features
        self.rand_options = dict(rand_options or {})
        self.trap = trap
        # "wrapped" | "bare" | "safetensors": the engine gets the model through
        # `pola convert <checkpoint> --arch A` instead of the exporter's model file.
        self.via_checkpoint = via_checkpoint


FULL_FAST = ["pola_pvt_tiny", "pola_swin_t"]

# Non-square sizes per reduced variant (each a multiple of the variant's downsampling product;
# chosen so that Swin stages get padded windows, shifted masks on padded grids, stages that
# fit one rectangular window, and PVT tables resized up and down).
REDUCED_SIZES = [
    ("reduced_pvt_basic", (48, 84)),       # multiple 12: grids 24x42, 12x21, 4x7, 4x7 (tables resized)
    ("reduced_pvt_sr", (64, 96)),          # grids 16x24, 16x24, 16x24, 8x12; kv grids 8x12, 5x8, 8x12
    ("reduced_swin_basic", (96, 128)),     # stored windows 16, 8, 4, 2: every stage padded, shifted S mask
    ("reduced_swin_basic", (32, 64)),      # every stage fits one rectangular window (8x16 ... 1x2): L
                                           # encodings shrink, S biases read from the stored tables
    ("reduced_swin_windows", (64, 160)),   # L 16x40 in 6-windows padded to 18x42; S 4x10 padded, masked
    ("reduced_swin_mixed", (96, 64)),      # S stage 1 24x16 in 4-windows (masked); L 6x4 padded to 8x4
]


def size_name(size):
    return f"{size[0]}x{size[1]}"


def reduced_size_cases():
    """Every reduced variant at its non-square size, with its stage features."""
    return [Case(f"{arch}_{size_name(size)}_features", arch, seed=700 + k, batch=2, size=size, features=True)
            for k, (arch, size) in enumerate(REDUCED_SIZES)]


def full_size_cases(archs, sizes, seed, features=False):
    return [Case(f"{arch}_{size_name(size)}", arch, seed=seed + k, batch=1, size=size, features=features)
            for k, arch in enumerate(archs) for size in sizes]


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
    # Every eps of both families matters here: small residual streams (block, merging and final
    # norms), a small patch-embedding output, a small spatial-reduction output.
    cases.append(Case("stress_swin_small_variance", "reduced_swin_mixed", seed=603, batch=2,
                      rand_options={**SMALL_RESIDUAL, **SMALL_EMBED}))
    cases.append(Case("stress_pvt_small_sr_variance", "reduced_pvt_sr", seed=604, batch=2, rand_options=SMALL_SR))
    # Other input sizes: the smallest configs at one non-square size.
    return cases + reduced_size_cases() + full_size_cases(FULL_FAST, [(256, 320)], seed=800, features=True)


def all_cases():
    rest = [a for a in PRESETS if a not in FULL_FAST]
    return (fast_cases() + [Case(f"{arch}_b1", arch, seed=400 + k, batch=1) for k, arch in enumerate(rest)]
            + full_size_cases(FULL_FAST, [(512, 512), (224, 672)], seed=810)
            + full_size_cases(rest, [(320, 224)], seed=900))


def config_cases():
    """The six released configs parity_fast leaves out, at a reduced input size: every stage and
    block of each (the weights, tables and geometry of the full model), at a fraction of the
    compute of their own size (parity_all runs those)."""
    rest = [a for a in PRESETS if a not in FULL_FAST]
    return full_size_cases(rest, [(64, 96)], seed=950)


def mismatch_cases():
    return [Case(case_name(trap, arch, options), arch, seed=trap_case_seed(k), batch=TRAP_BATCH,
                 rand_options=options, trap=trap)
            for k, (trap, arch, options) in enumerate(TRAP_CASES)]


def sizes_cases():
    """Only the cases at other input sizes (fast and slow): `--suite sizes`."""
    return [c for c in all_cases() if c.size]


SUITES = {"fast": fast_cases, "all": all_cases, "mismatch": mismatch_cases, "sizes": sizes_cases,
          "configs": config_cases}
