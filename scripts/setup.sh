#!/usr/bin/env bash
# One-step, idempotent setup: Debian packages + .venv with every pinned Python dependency.
# Run by `make setup` (and so by `make demo` / `make test`). A second run checks and exits.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV="$ROOT/.venv"
PY=${PYTHON:-python3}
# Quiet unless something fails: each step's output goes to a log that is printed only on failure.
LOG=$(mktemp -t havln-setup.XXXXXX)
trap 'rm -f "$LOG"' EXIT
quiet() {
  if ! "$@" >>"$LOG" 2>&1; then
    echo "[setup] FAILED: $*" >&2
    tail -n 60 "$LOG" >&2
    exit 1
  fi
}

# Debian packages: librealsense USB runtime, Cyclone DDS 0.10.2 (the Go2's version) to build the
# cyclonedds Python binding, EGL/OSMesa/GL for MuJoCo's headless renderer and OpenCV, chromium for the
# operator console's browser test (Playwright drives /usr/bin/chromium; no browser is downloaded).
# SDFormat 12 and `ign sdf -k` (libsdformat-dev ships the ign plugin) check the Gazebo SDF files in the tests.
# iproute2 (ip, tc) and nftables build and shape the two-namespace link of test_link_faults / bench link.
APT_PKGS=(libusb-1.0-0 cyclonedds-dev libegl1 libgl1 libosmesa6 libglib2.0-0 chromium sdformat-sdf ignition-tools libsdformat-dev iproute2 nftables)
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[setup] installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  quiet $SUDO apt-get update -qq
  quiet $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Node.js + npm (Debian's) for the bag check with Foxglove's own MCAP / ros2msg / CDR readers
# (tools/bagcheck, test/test_bag_readers.py); an already installed node/npm (e.g. NodeSource's) is kept.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "[setup] installing Debian packages: nodejs npm"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  quiet $SUDO apt-get update -qq
  quiet $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm
fi
# The npm packages, exactly as package-lock.json pins them, into tools/bagcheck/node_modules
# (project-local; reinstalled only when the lock file changed).
BAGCHECK="$ROOT/tools/bagcheck"
npm_want=$(sha256sum < "$BAGCHECK/package-lock.json" | cut -c1-16)
if [ ! -f "$BAGCHECK/node_modules/.havln-npm-$npm_want" ]; then
  echo "[setup] installing the bag check's npm packages (tools/bagcheck/package-lock.json)"
  (cd "$BAGCHECK" && quiet npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
  touch "$BAGCHECK/node_modules/.havln-npm-$npm_want"
fi

# Python venv, reinstalled only when the lock file or setup.py changed.
want=$(cat requirements.lock setup.py | sha256sum | cut -c1-16)
stamp="$VENV/.havln-setup-$want"
if [ -f "$stamp" ] && "$VENV/bin/python" -c "import havln_robot" 2>/dev/null; then
  echo "[setup] up to date (.venv matches requirements.lock)"
  exit 0
fi
[ -x "$VENV/bin/python" ] || { echo "[setup] creating .venv"; quiet "$PY" -m venv "$VENV"; }
quiet "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip setuptools wheel

# cyclonedds==0.10.2 must match the robot's Cyclone DDS; build it against Debian's library through
# a CYCLONEDDS_HOME of symlinks (the binding's build looks for include/, lib/, bin/ under it).
ARCH_LIB=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
CYHOME="$VENV/cyclonedds-home"
mkdir -p "$CYHOME"
ln -sfn /usr/include "$CYHOME/include"
ln -sfn /usr/bin "$CYHOME/bin"
ln -sfn "/usr/lib/$ARCH_LIB" "$CYHOME/lib"
echo "[setup] installing pinned Python packages (first run takes a few minutes)"
# Built without pip's wheel cache: a cached wheel remembers the CYCLONEDDS_HOME of the venv that built
# it first (cyclonedds/__library__.py), so another checkout's venv would load that one's libddsc.
quiet env CYCLONEDDS_HOME="$CYHOME" "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-cache-dir \
  --no-binary cyclonedds --no-deps "$(grep -i '^cyclonedds==' requirements.lock)"
quiet env CYCLONEDDS_HOME="$CYHOME" "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
  --no-binary cyclonedds -r requirements.lock
quiet "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
rm -f "$VENV"/.havln-setup-*
touch "$stamp"
echo "[setup] done: $("$VENV/bin/python" --version), $(wc -l < requirements.lock) pinned packages"
