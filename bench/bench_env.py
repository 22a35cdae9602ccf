"""The machine and build a benchmark ran on, for its result file (shared by the benchmarks under bench/).

A figure means little without where it was taken: the CPU (model name, the ISA extensions the
engine can use), the cores, the load average (other jobs on a shared machine make figures noisy;
result files say so), the commit and what `pola --version` reports. Import it with

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # bench/
    import bench_env
"""
import os
import platform
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# The /proc/cpuinfo flags that decide which kernels and precisions the engine can use.
ISA_FLAGS = ("avx512f", "avx512_bf16", "amx_bf16", "avx2", "fma")


def _cpuinfo_field(name):
    """The first value of `name` in /proc/cpuinfo (e.g. 'model name', 'flags'), or ''."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == name:
                    return value.strip()
    except OSError:
        pass
    return ""


def cpu_model():
    """The CPU's model name with its family and model numbers, as the engine's results name it, e.g.
    'AMD EPYC (family 25 model 17)': a VM may call Zen 4 and Zen 5 both 'AMD EPYC' (families 25, 26)."""
    name = _cpuinfo_field("model name") or platform.processor() or "unknown"
    family, model = _cpuinfo_field("cpu family"), _cpuinfo_field("model")
    return f"{name} (family {family} model {model})" if family and model else name


def cpu_flags():
    """Every CPU feature flag the kernel reports, as a set."""
    return set(_cpuinfo_field("flags").split())


def isa_flags():
    """Which of ISA_FLAGS this CPU has, in that order."""
    flags = cpu_flags()
    return [f for f in ISA_FLAGS if f in flags]


def cores():
    """Logical cores this process may run on."""
    return len(os.sched_getaffinity(0))


def cpu_description():
    """One line for a report: '<model name>, <n> logical cores'."""
    return f"{cpu_model()}, {cores()} logical cores"


def loadavg():
    """The 1, 5 and 15 minute load averages as text ('1.02 0.87 0.55')."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def git_commit(source=ROOT):
    """The short commit of the checkout at `source` ('' outside a git checkout)."""
    r = subprocess.run(["git", "-C", source, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else ""


def pola_version(pola):
    """What `pola --version` prints (version, revision built from, compiler, ISA chosen, oneDNN)."""
    r = subprocess.run([pola, "--version"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else f"({pola} --version failed: {r.stderr.strip()})"


def environment(pola=None, source=ROOT):
    """Everything above as one dict for a JSON result file; `pola` (the binary measured) is optional."""
    env = {"cpu": cpu_model(), "isa_flags": isa_flags(), "cores": cores(), "load_average": list(os.getloadavg()),
           "commit": git_commit(source), "python": platform.python_version(), "platform": platform.platform()}
    if pola:
        env["pola_version"] = pola_version(pola)
    return env
