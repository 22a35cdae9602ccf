#!/usr/bin/python3
"""Turns compare.py's measurements into results.md, results.csv and latency.png.

  /usr/bin/python3 bench/peers/results_report.py bench/peers/results    # redo the report from results.json
"""
import csv
import dataclasses
import json
import os
import statistics
import sys

ENGINE_LABELS = {"engine": "engine", "engine_bf16": "engine bf16", "pytorch": "PyTorch",
                 "pytorch_bf16": "PyTorch bf16", "ort": "ORT",
                 "pytorch_openblas_unset": "PyTorch (OPENBLAS_* unset)"}
# The peer comparison's targets (batch 1, 2 threads).
TARGET_VS_ORT, TARGET_VS_PYTORCH, TARGET_RSS_VS_ORT, TARGET_THREAD_SPEEDUP = 0.6, 0.35, 0.6, 1.7
QUIET_LOAD = 2.5   # above this 1-minute load average on 2 cores, other work shares our cores


def as_dict(m):
    return dataclasses.asdict(m) if dataclasses.is_dataclass(m) else m


def save_results(results, out_dir):
    data = dict(results, measurements=[as_dict(m) for m in results["measurements"]])
    tmp = os.path.join(out_dir, "results.json.tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, os.path.join(out_dir, "results.json"))


def summarize(measurements):
    """{(model, batch, threads, engine): summary over rounds}. Medians over rounds of each
    process's median and p90; the largest peak RSS; the range of load averages seen."""
    groups = {}
    for m in map(as_dict, measurements):
        groups.setdefault((m["model"], m["batch"], m["threads"], m["engine"]), []).append(m)
    summary = {}
    for key, ms in groups.items():
        loads = [x for m in ms for x in (m["load1_before"], m["load1_after"])]
        median = statistics.median(m["median_ms"] for m in ms)
        summary[key] = {
            "median_ms": median, "p90_ms": statistics.median(m["p90_ms"] for m in ms),
            "round_medians_ms": [m["median_ms"] for m in ms],
            "per_image_ms": median / key[1], "images_per_s": key[1] * 1e3 / median,
            "peak_rss_mb": max(m["peak_rss_mb"] for m in ms),
            "load_min": min(loads), "load_max": max(loads), "details": ms[-1]["details"],
        }
        d = ms[-1]["details"]
        if "gflops" in d:
            # The engine reports GFLOP/s of its own median; restate it for the median over rounds.
            gflop_per_run = d["gflops"] * ms[-1]["median_ms"] / 1e3
            summary[key]["gflops"] = gflop_per_run / (median / 1e3)
            summary[key]["peak_share"] = summary[key]["gflops"] * d["peak_share"] / d["gflops"]
    return summary


def configs_of(summary):
    seen = []
    for model, batch, threads, _ in summary:
        if (model, batch, threads) not in seen:
            seen.append((model, batch, threads))
    return seen


def engines_of(summary):
    present = {k[3] for k in summary}
    return [e for e in ENGINE_LABELS if e in present]


def ratio(summary, model, batch, threads, field, a, b):
    x, y = summary.get((model, batch, threads, a)), summary.get((model, batch, threads, b))
    return x[field] / y[field] if x and y else None


def across(summary, key_a, key_b, field):
    """summary[key_a][field] / summary[key_b][field], or None when either was not measured."""
    a, b = summary.get(key_a), summary.get(key_b)
    return a[field] / b[field] if a and b else None


def fmt(value, pattern="{:.2f}"):
    return "–" if value is None else pattern.format(value)


def write_csv(summary, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "batch", "threads", "engine", "median_ms", "p90_ms", "per_image_ms", "images_per_s",
                    "peak_rss_mb", "ratio_median_vs_engine", "rounds", "load1_min", "load1_max"])
        for (model, batch, threads, engine), s in summary.items():
            vs_engine = ratio(summary, model, batch, threads, "median_ms", engine, "engine")
            w.writerow([model, batch, threads, engine, f"{s['median_ms']:.3f}", f"{s['p90_ms']:.3f}",
                        f"{s['per_image_ms']:.3f}", f"{s['images_per_s']:.2f}", f"{s['peak_rss_mb']:.1f}",
                        f"{vs_engine:.3f}", len(s["round_medians_ms"]), f"{s['load_min']:.2f}", f"{s['load_max']:.2f}"])


def latency_table(summary):
    engines = engines_of(summary)
    head = ["model", "batch", "thr"] + [f"{ENGINE_LABELS[e]} median (p90) ms" for e in engines] + \
        ["engine/ORT", "engine/PyTorch"] + [f"RSS {ENGINE_LABELS[e]} MB" for e in engines] + \
        ["engine GFLOP/s (peak share)", "load avg"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for model, batch, threads in configs_of(summary):
        cells = [model, str(batch), str(threads)]
        for e in engines:
            s = summary.get((model, batch, threads, e))
            cells.append(f"{s['median_ms']:.1f} ({s['p90_ms']:.1f})" if s else "–")
        cells.append(fmt(ratio(summary, model, batch, threads, "median_ms", "engine", "ort")))
        cells.append(fmt(ratio(summary, model, batch, threads, "median_ms", "engine", "pytorch")))
        for e in engines:
            s = summary.get((model, batch, threads, e))
            cells.append(f"{s['peak_rss_mb']:.0f}" if s else "–")
        eng = summary.get((model, batch, threads, "engine")) or {}
        cells.append(f"{eng['gflops']:.0f} ({100 * eng['peak_share']:.0f}%)" if "gflops" in eng else "–")
        loads = [s for k, s in summary.items() if k[:3] == (model, batch, threads)]
        cells.append(f"{min(s['load_min'] for s in loads):.1f}–{max(s['load_max'] for s in loads):.1f}")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def verdict(value, target, at_most=True):
    if value is None:
        return "not measured"
    ok = value <= target if at_most else value >= target
    return f"**{value:.2f}x** (target {'<=' if at_most else '>='} {target}x: {'met' if ok else 'not met'})"


def load_note(summary, keys):
    found = [summary[k] for k in keys if k in summary]
    if not found:
        return ""
    return f" [load {min(s['load_min'] for s in found):.1f}–{max(s['load_max'] for s in found):.1f}]"


# The bf16 goals depend on the bf16 path that ran: (bf16/fp32, bf16/ORT fp32) targets.
BF16_TARGETS = {"AMX-BF16": (0.35, 0.25), "AVX512-BF16": (0.7, None)}
BF16_TARGET_VS_PYTORCH_BF16, BF16_TARGET_RSS = 0.25, 1.0


def bf16_lines(summary):
    """The goals for the engine's bf16 run: with AMX bf16/fp32 <= 0.35 and bf16/ORT <= 0.25; with
    AVX512-BF16 only bf16/fp32 <= 0.7 (no ORT goal); everywhere bf16/PyTorch-bf16 <= 0.25, RSS <= fp32's."""
    lines = []
    for model, batch, threads in configs_of(summary):
        if model not in ("pola_swin_t", "pola_pvt_tiny") or (model, batch, threads, "engine_bf16") not in summary:
            continue
        r = lambda a, b, what="median_ms": ratio(summary, model, batch, threads, what, a, b)  # noqa: E731
        keys = [(model, batch, threads, e) for e in ("engine", "engine_bf16", "ort", "pytorch_bf16")]
        bf16_isa = summary[(model, batch, threads, "engine_bf16")]["details"].get("bf16_isa", "")
        vs_fp32, vs_ort = BF16_TARGETS.get(bf16_isa, BF16_TARGETS["AMX-BF16"])
        ort = r('engine_bf16', 'ort')
        ort_text = verdict(ort, vs_ort) if vs_ort is not None or ort is None else f"**{ort:.2f}x** (no target here)"
        lines.append(f"- {model}, batch {batch}, {threads} threads, engine bf16{' (' + bf16_isa + ')' if bf16_isa else ''}: "
                     f"bf16/fp32 {verdict(r('engine_bf16', 'engine'), vs_fp32)}, "
                     f"bf16/ORT fp32 {ort_text}, "
                     f"bf16/PyTorch bf16 {verdict(r('engine_bf16', 'pytorch_bf16'), BF16_TARGET_VS_PYTORCH_BF16)}, "
                     f"peak RSS bf16/fp32 {verdict(r('engine_bf16', 'engine', 'peak_rss_mb'), BF16_TARGET_RSS)}"
                     + load_note(summary, keys))
    return lines


def issue_section(summary):
    lines = ["## Issue #4's questions", ""]
    for model in ("pola_swin_t", "pola_pvt_tiny"):
        keys = [(model, 1, 2, e) for e in ("engine", "ort", "pytorch")]
        if (model, 1, 2, "engine") not in summary:
            continue
        lines.append(f"- {model}, batch 1, 2 threads: engine/ORT "
                     f"{verdict(ratio(summary, model, 1, 2, 'median_ms', 'engine', 'ort'), TARGET_VS_ORT)}, "
                     f"engine/PyTorch {verdict(ratio(summary, model, 1, 2, 'median_ms', 'engine', 'pytorch'), TARGET_VS_PYTORCH)}"
                     + load_note(summary, keys))
    if ("pola_swin_t", 1, 2, "engine") in summary:
        keys = [("pola_swin_t", 1, 2, e) for e in ("engine", "ort")]
        lines.append("- pola_swin_t peak RSS, engine/ORT process (batch 1, 2 threads): "
                     + verdict(ratio(summary, "pola_swin_t", 1, 2, "peak_rss_mb", "engine", "ort"), TARGET_RSS_VS_ORT)
                     + load_note(summary, keys))
    lines += bf16_lines(summary)
    engines = engines_of(summary)
    thread_rows = [(m, b) for m, b, t in configs_of(summary) if t == 2 and (m, b, 1, "engine") in summary]
    if thread_rows:
        lines += ["", f"1 -> 2 threads speed-up, median(1 thread) / median(2 threads) (target >= {TARGET_THREAD_SPEEDUP}x "
                  "for the engine on pola_swin_t batch 1):", "",
                  "| model | batch | " + " | ".join(ENGINE_LABELS[e] for e in engines) + " |",
                  "|---|---|" + "---|" * len(engines)]
        for m, b in thread_rows:
            cells = [fmt(across(summary, (m, b, 1, e), (m, b, 2, e), "median_ms"), "{:.2f}x") for e in engines]
            lines.append(f"| {m} | {b} | " + " | ".join(cells) + " |")
    batch_rows = [(m, b, t) for m, b, t in configs_of(summary) if b > 1 and (m, 1, t, "engine") in summary]
    if batch_rows:
        lines += ["", "Throughput gain of batching, images/s at batch B / images/s at batch 1:", "",
                  "| model | batch | threads | " + " | ".join(ENGINE_LABELS[e] for e in engines) + " |",
                  "|---|---|---|" + "---|" * len(engines)]
        for m, b, t in batch_rows:
            cells = [fmt(across(summary, (m, b, t, e), (m, 1, t, e), "images_per_s"), "{:.2f}x") for e in engines]
            lines.append(f"| {m} | {b} | {t} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def agreement_section(agreement):
    if not agreement:
        return ""
    lines = ["## Do the three compute the same logits? (batch 1, one input)", "",
             "max|a-b| / max|reference logit|; reference = float64 PyTorch reference (make_case.py).", "",
             "| model | engine vs ref | PyTorch vs ref | ORT vs ref | engine vs ORT | engine vs PyTorch | argmax (ref/engine/PyTorch/ORT) | agree |",
             "|---|---|---|---|---|---|---|---|"]
    for a in agreement:
        d, am = a["diff"], a["argmax"]
        lines.append(f"| {a['model']} | {d['engine vs reference_f64']:.1e} | {d['pytorch vs reference_f64']:.1e} | "
                     f"{d['ort vs reference_f64']:.1e} | {d['engine vs ort']:.1e} | {d['engine vs pytorch']:.1e} | "
                     f"{am['reference_f64']}/{am['engine']}/{am['pytorch']}/{am['ort']} | {'yes' if a['agree'] else '**NO**'} |")
    return "\n".join(lines)


def meta_section(results, summary):
    meta = results["meta"]
    engine = next((s["details"] for k, s in summary.items() if k[3] == "engine"), {})
    ort = next((s["details"] for k, s in summary.items() if k[3] == "ort"), {})
    env = ", ".join(f"{k}={v if v is not None else '(unset)'}" for k, v in meta["openblas_env"].items())
    args = results["args"]
    start, end = meta.get("load_at_start", [0, 0, 0]), meta.get("load_at_end", ["?"] * 3)
    return "\n".join([
        f"- date: {meta['date']}; CPU: {meta['cpu']}, {meta['cores']} cores; engine ISA: {engine.get('isa', '?')}",
        f"- engine commit (built into `pola`): {engine.get('commit', '?')}; checkout HEAD {meta['git_head']}"
        + (" with uncommitted changes under engine/ kernels/ weights/ apps/ (shared checkout)"
           if meta["engine_sources_dirty"] else ""),
        f"- PyTorch {meta['torch']} with {meta['blas']}; {env}"
        + ("" if any(meta["openblas_env"].values()) else
           " (neither is set here, so the PyTorch rows are the unset case; a run where they are set adds a "
           "'PyTorch (OPENBLAS_* unset)' column)"),
        f"- ONNX Runtime (onnxruntime-node) {ort.get('version', '?')}, opset 17 export, intraOp = threads, interOp 1, "
        "graphOptimizationLevel all",
        f"- {args['rounds']} alternating rounds per configuration, {args['runs']} timed runs per process at batch 1 "
        f"(fewer at larger batches, at least 3), {args['warmup']} warm-up; figures are medians over rounds",
        f"- extra environment in every engine's process: {args.get('env') or 'none'}; busy-waiting threads: "
        + ("off (--no-spin: OMP_WAIT_POLICY=passive for engine and PyTorch, allow_spinning 0 for ORT)"
           if args.get("no_spin") else "each engine's default (libgomp and ORT spin before sleeping)"),
        f"- processes killed after {args.get('timeout', '?')} s (not in the figures): "
        + (", ".join(f"{t['model']} b{t['batch']} t{t['threads']} {t['engine']} round {t['round']} (load {t['load1']:.1f})"
                     for t in results.get("timeouts", [])) or "none"),
        f"- 1-minute load average at start {start[0]:.2f}, at end {end[0] if isinstance(end[0], str) else f'{end[0]:.2f}'} "
        f"(2 cores: above ~{QUIET_LOAD} other work shares the cores and every figure is inflated)",
    ])


def plot(summary, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    engines = engines_of(summary)
    batches = sorted({k[1] for k in summary})
    fig, axes = plt.subplots(1, len(batches), figsize=(6 + 3 * len(batches), 5), squeeze=False)
    width = 0.8 / len(engines)
    for ax, batch in zip(axes[0], batches):
        groups = [(m, t) for m, b, t in configs_of(summary) if b == batch]
        for i, engine in enumerate(engines):
            values = [summary.get((m, batch, t, engine), {}).get("median_ms", 0) for m, t in groups]
            xs = [g + (i - (len(engines) - 1) / 2) * width for g in range(len(groups))]
            bars = ax.bar(xs, values, width, label=ENGINE_LABELS[engine])
            ax.bar_label(bars, fmt="%.0f", fontsize=7, rotation=90, padding=2)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([f"{m.replace('pola_', '')}\n{t} thr" for m, t in groups], fontsize=8)
        # Log scale: the engines differ by ratios, and a loaded machine stretches some bars 20x.
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        tallest = max((s["median_ms"] for k, s in summary.items() if k[1] == batch), default=1)
        ax.set_ylim(top=tallest * 2.5)  # room for the rotated value labels
        ax.set_ylabel("median latency per batch (ms, log scale)")
        ax.set_title(f"batch {batch}")
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(results, out_dir):
    summary = summarize(results["measurements"])
    write_csv(summary, os.path.join(out_dir, "results.csv"))
    loads = [x for s in summary.values() for x in (s["load_min"], s["load_max"])] or [0]
    title = (f"PolaFormer engine vs PyTorch vs ONNX Runtime, {results['meta']['date']}, "
             f"load avg {min(loads):.1f}–{max(loads):.1f} on {results['meta']['cores']} cores")
    if summary:
        plot(summary, os.path.join(out_dir, "latency.png"), title)
    md = "\n\n".join(part for part in [
        "# Peer comparison: engine vs PyTorch vs ONNX Runtime",
        "Made by `bench/peers/compare.py` (see bench/peers/README.md). Same random weights in all three "
        "(tests/reference/make_case.py), one fresh process per measurement, engines alternating.",
        meta_section(results, summary),
        issue_section(summary),
        "## Latency and memory\n\nmedian (p90) per batch in ms; ratios < 1 mean the engine is faster; RSS is each "
        "process's peak (PyTorch and ORT include their interpreter / Node runtime).\n\n" + latency_table(summary),
        agreement_section(results.get("agreement")),
        "![median latency](latency.png)",
    ] if part)
    with open(os.path.join(out_dir, "results.md"), "w") as f:
        f.write(md + "\n")
    return md


if __name__ == "__main__":
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    with open(os.path.join(folder, "results.json")) as f:
        print(write_report(json.load(f), folder))
