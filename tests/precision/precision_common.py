"""Shared by the precision tests: running `pola` and asking it whether bf16 is native here."""
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


def skip_without_native_bf16(binary):
    """Exits with the skip code, saying why, on a CPU without AMX-BF16 / AVX512-BF16."""
    picked, reason = auto_precision(binary)
    if picked != "bf16":
        print(f"SKIP: bf16 accuracy needs native bf16 matrix instructions; `pola --version`: {reason}")
        raise SystemExit(SKIP)
    print(f"native bf16: {reason}")
