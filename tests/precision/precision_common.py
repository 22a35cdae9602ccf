"""Shared by the precision tests: running `pola`, asking it whether bf16 is native here, and
reading /proc/cpuinfo for the int8 instructions."""
import os
import subprocess

SKIP = 77  # ctest SKIP_RETURN_CODE


def pola(binary, *args, env=None, check=True):
    proc = subprocess.run([binary, *args], capture_output=True, text=True, env=env, timeout=3600)
    if check and proc.returncode != 0:
        raise RuntimeError(f"pola {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc


def auto_precision(binary, env=None):
    """(precision, reason) that `--precision auto` picks, from `pola --version`."""
    for line in pola(binary, "--version", env=env).stdout.splitlines():
        line = line.strip()
        if line.startswith("precision auto = "):
            picked, _, reason = line[len("precision auto = "):].partition(" ")
            return picked, reason.strip("()")
    raise RuntimeError("`pola --version` does not say what --precision auto picks")


def native_bf16(binary, env=None):
    """The native bf16 instructions `pola --version` reports: 'AMX-BF16', 'AVX512-BF16' or 'none'."""
    for line in pola(binary, "--version", env=env).stdout.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "bf16":
            return words[1]
    raise RuntimeError("`pola --version` does not say which bf16 instructions the CPU has")


def cpuinfo_bf16(path="/proc/cpuinfo"):
    """The native bf16 instructions /proc/cpuinfo lists ('AMX-BF16', 'AVX512-BF16', 'none'), or None
    where it cannot be read: a source independent of the engine's own detection."""
    try:
        with open(path) as f:
            flags = next((set(l.split(":", 1)[1].split()) for l in f if l.startswith("flags")), None)
    except OSError:
        return None
    if flags is None:
        return None
    avx512 = {"avx512f", "avx512dq", "avx512bw", "avx512vl"} <= flags
    if avx512 and {"amx_tile", "amx_bf16"} <= flags:
        return "AMX-BF16"
    return "AVX512-BF16" if avx512 and "avx512_bf16" in flags else "none"


def skip_without_native_bf16(binary):
    """Exits with the skip code, saying why, on a CPU without AMX-BF16 / AVX512-BF16; fails (exit
    1) when the engine's detection disagrees with /proc/cpuinfo, so a lost feature never turns a
    bf16 check into a skip."""
    isa = native_bf16(binary)
    listed = cpuinfo_bf16()
    if listed is not None and listed != isa:
        print(f"FAIL: `pola --version` says the native bf16 instructions are {isa}, /proc/cpuinfo lists {listed}")
        raise SystemExit(1)
    if isa == "none":
        print("SKIP: bf16 accuracy needs native bf16 matrix instructions (AMX-BF16 or AVX512-BF16); "
              "`pola --version` says this CPU has none")
        raise SystemExit(SKIP)
    print(f"native bf16: {isa}")


def native_int8(binary, env=None):
    """The int8 instructions `pola --version` reports ('AMX-INT8', 'AVX512-VNNI', 'AVX-VNNI' or
    'none'), failing (exit 1) where it disagrees with /proc/cpuinfo and no POLA_ISA cap is set."""
    for line in pola(binary, "--version", env=env).stdout.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "int8":
            listed = cpuinfo_int8()
            if not (os.environ if env is None else env).get("POLA_ISA") and listed is not None and listed != words[1]:
                print(f"FAIL: `pola --version` says the int8 instructions are {words[1]}, /proc/cpuinfo lists {listed}")
                raise SystemExit(1)
            return words[1]
    raise RuntimeError("`pola --version` does not say which int8 instructions the CPU has")


def cpuinfo_int8(path="/proc/cpuinfo"):
    """The int8 dot-product instructions /proc/cpuinfo lists, best first ('AMX-INT8',
    'AVX512-VNNI', 'AVX-VNNI', or 'none'), or None where it cannot be read. `--precision int8`
    needs one of them (the engine refuses it otherwise)."""
    try:
        with open(path) as f:
            flags = next((set(l.split(":", 1)[1].split()) for l in f if l.startswith("flags")), None)
    except OSError:
        return None
    if flags is None:
        return None
    if {"amx_tile", "amx_int8"} <= flags:
        return "AMX-INT8"
    if {"avx512f", "avx512_vnni"} <= flags:
        return "AVX512-VNNI"
    return "AVX-VNNI" if "avx_vnni" in flags else "none"


def skip_without_int8(reason="int8 runs"):
    """Exits with the skip code, saying why, on a CPU without AMX-INT8, AVX512-VNNI or AVX-VNNI
    (per /proc/cpuinfo); returns the instructions found otherwise."""
    isa = cpuinfo_int8()
    if isa in (None, "none"):
        print(f"SKIP: {reason} need int8 dot-product instructions (AMX-INT8, AVX512-VNNI or AVX-VNNI); "
              f"/proc/cpuinfo lists {'none' if isa else 'nothing readable'}")
        raise SystemExit(SKIP)
    print(f"int8 instructions (/proc/cpuinfo): {isa}")
    return isa
