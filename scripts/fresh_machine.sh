#!/usr/bin/env bash
# The fresh-machine check: what CI on this machine cannot see.
#
# CI runs on a machine where earlier sessions installed packages by hand, so a
# package missing from scripts/install_deps.sh stays invisible there. This
# script builds a minimal Debian 12 root with mmdebstrap (from the package
# sources apt already uses here), copies a clean clone of HEAD into it, and
# inside it (chroot, /proc /sys /dev mounted) runs
#   1. the README's first command, read from README.md exactly as written;
#   2. a short subset of the tests (C/C++ units, the C API and the installed
#      package, the CLI, the README examples, the fast PyTorch parity suite);
#   3. the ARM64 set-up from that root: scripts/cross_arm64.sh installs what it
#      needs and builds the aarch64 pola, which must start under qemu and
#      bundle into a relocatable folder (POLA_FRESH_ARM64=0 leaves it out).
# It prints the time of each step, exits non-zero on the first failure and
# unmounts and deletes the root on any exit, Ctrl-C included.
#
#   scripts/fresh_machine.sh              # needs root; takes a few minutes
#   POLA_FRESH_KEEP=1 scripts/fresh_machine.sh   # keep the root for a look
#   POLA_FRESH_TESTS='regex' ...          # another ctest subset ('' = none)
# It is not part of scripts/test.sh: run it before a stop that touches
# dependencies, build files or scripts.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
SUITE="${POLA_FRESH_SUITE:-bookworm}"
TESTS="${POLA_FRESH_TESTS-^(kernels\..*|engine_units|engine\.int8_units|api\..*|cli\..*|docs\.usage|doors\..*|serve\.guards|parity_fast)$}"

die() { echo "fresh_machine: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (mmdebstrap, chroot and mounts)"
if ! command -v mmdebstrap >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
fi

# The first command of README.md: the first line of its first ```sh block,
# without its trailing comment. The check runs what a user would paste.
FIRST_COMMAND=$(awk '/^```sh$/ {inside = 1; next} inside {print; exit}' README.md | sed 's/[[:space:]]*#.*$//')
[ -n "$FIRST_COMMAND" ] || die "README.md has no \`\`\`sh block with a first command"

WORK=$(mktemp -d /var/tmp/pola-fresh.XXXXXX)
ROOT="$WORK/root"
MOUNTS=(proc sys dev dev/pts)
cleanup() {
  local status=$?
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
    mountpoint -q "$ROOT/${MOUNTS[i]}" 2>/dev/null && umount -l "$ROOT/${MOUNTS[i]}"
  done
  if [ "${POLA_FRESH_KEEP:-0}" = 1 ]; then
    echo "fresh_machine: root kept at $ROOT (unmounted)"
  else
    rm -rf --one-file-system "$WORK"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'echo "fresh_machine: interrupted" >&2; exit 130' INT TERM HUP

TIMES=()
step() {  # step NAME COMMAND...: runs it, records its time, stops on failure
  local name="$1" t0 status=0
  shift
  echo "fresh_machine: --- $name"
  t0=$(date +%s)
  "$@" || status=$?
  TIMES+=("$(printf '%-34s %5d s' "$name" $(($(date +%s) - t0)))")
  if [ "$status" -ne 0 ]; then
    printf 'fresh_machine: FAILED at "%s" (exit %d)\n' "$name" "$status" >&2
    printf '  %s\n' "${TIMES[@]}" >&2
    exit "$status"
  fi
}

make_root() {
  # minbase: the Essential packages and apt, nothing else (as a container
  # image has). The host's sources file keeps the same package source.
  local sources=()
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
    [ -s "$f" ] && sources+=("$f")
  done
  [ ${#sources[@]} -gt 0 ] || die "no apt sources on this machine"
  mmdebstrap --quiet --variant=minbase --mode=root \
    --aptopt='Acquire::Check-Valid-Until "false"' \
    "$SUITE" "$ROOT" "${sources[@]}"
}

copy_clone() {
  # A clean clone of HEAD: only what is committed, as a user's `git clone` has.
  git clone --quiet --no-hardlinks "$REPO" "$ROOT/src"
  git -C "$ROOT/src" checkout --quiet "$(git -C "$REPO" rev-parse HEAD)"
  cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
}

mount_all() {
  mount -t proc proc "$ROOT/proc"
  mount -t sysfs sysfs "$ROOT/sys"
  mount --bind /dev "$ROOT/dev"
  mount --bind /dev/pts "$ROOT/dev/pts"
}

in_root() {  # a login-free shell with the environment of a new root user
  chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    TERM=dumb LANG=C.UTF-8 /bin/bash -c "cd /src && $1"
}

echo "fresh_machine: HEAD $(git rev-parse --short HEAD), suite $SUITE, root $ROOT"
echo "fresh_machine: the README's first command: $FIRST_COMMAND"
step "mmdebstrap minimal root" make_root
step "clean clone of HEAD" copy_clone
step "mount /proc /sys /dev" mount_all
step "README first command" in_root "$FIRST_COMMAND"
if [ -n "$TESTS" ]; then
  step "build the rest (scripts/build.sh)" in_root "scripts/build.sh >/dev/null"
  step "test subset (ctest)" in_root "ctest --test-dir build --output-on-failure -j2 -R '$TESTS'"
fi
if [ "${POLA_FRESH_ARM64:-1}" != 0 ]; then
  step "arm64: cross_arm64.sh build" in_root "scripts/cross_arm64.sh build >/dev/null"
  step "arm64: run --version under qemu" in_root "scripts/cross_arm64.sh run --version | grep -q '^  isa       neon64'"
  step "arm64: relocatable bundle" in_root "scripts/cross_arm64.sh bundle /tmp/pola-arm64-bundle"
fi
echo "fresh_machine: passed"
printf '  %s\n' "${TIMES[@]}"
