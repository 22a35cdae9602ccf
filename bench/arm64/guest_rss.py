#!/usr/bin/python3
"""Peak resident memory of an aarch64 program under qemu-user, split into the guest's share and qemu's.

  guest_rss.py build-arm64/pola-qemu bench -m M.pola -b 1 --threads 2 --low-memory

getrusage inside the guest reports the host process, qemu included: its translation cache, its own
heap and its binary. This samples /proc/PID/smaps of the qemu process every 5 ms and counts, at the
sample where the guest's share peaked:
- qemu: the qemu binary's mappings, the host [heap] (qemu's malloc; the guest's brk is an mmap) and
  anonymous executable mappings (the translated code);
- guest: everything else (the program, its libraries, its heap and stacks, mapped files).
qemu runs with MALLOC_ARENA_MAX=1, so its malloc stays in its [heap] instead of per-thread arenas
that would look like the guest's anonymous memory; QEMU_UNSET_ENV keeps that setting from the
guest, whose malloc is left as it is. Any other anonymous mmap of qemu's would still count as the
guest's: the guest figure is an upper bound.
Figures are decimal MB (10^6 bytes), as `pola bench` reports the file and the arena.
"""
import os
import re
import subprocess
import sys
import time

MAPPING = re.compile(r"^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \S+\s*(.*)$")


def shares(pid):
    """{'guest': bytes, 'qemu': bytes} resident now, or None once the process is gone."""
    out = {"guest": 0, "qemu": 0}
    owner = "guest"
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                m = MAPPING.match(line)
                if m:
                    perms, name = m.group(1), m.group(2).strip()
                    qemu = "qemu-" in name or name == "[heap]" or ("x" in perms and name == "")
                    owner = "qemu" if qemu else "guest"
                elif line.startswith("Rss:"):
                    out[owner] += int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    # The wrapper (build-arm64/pola-qemu) execs qemu, so the child's pid is qemu's.
    env = {**os.environ, "MALLOC_ARENA_MAX": "1", "QEMU_UNSET_ENV": "MALLOC_ARENA_MAX"}
    proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    peak = None
    while proc.poll() is None:
        s = shares(proc.pid)
        if s and (peak is None or s["guest"] > peak["guest"]):
            peak = s
        time.sleep(0.005)
    err = proc.stderr.read()
    if proc.returncode != 0 or peak is None:
        sys.exit(f"guest_rss: {' '.join(sys.argv[1:])} exited {proc.returncode}: {err.strip()}")
    print(f"guest {peak['guest'] / 1e6:.1f} MB, qemu {peak['qemu'] / 1e6:.1f} MB at the guest's peak")


if __name__ == "__main__":
    main()
