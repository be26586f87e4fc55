#!/usr/bin/env bash
# Installs everything Kiln needs on a Debian 12 (bookworm) machine, and does
# nothing that is already done:
#   - LLVM, MLIR, Clang, lld and OpenMP 22 from Debian's packages
#   - the ONNX and protobuf development packages, GoogleTest, ccache, ninja
#   - qemu-user and an AArch64 cross sysroot (for the aarch64 target), with
#     LLVM's OpenMP runtime for AArch64 in it
#   - a Python virtual environment at .venv with tools/requirements.txt
#   - with --bench, also the benchmark's peers (IREE, Apache TVM) in a second
#     environment, .venv-bench, from tools/requirements-bench.txt (about 1 GB;
#     only tools/benchmark.py uses it)
#   - with --zoo, also Debian's python3-torch and python3-torchvision (about
#     100 MB), with which tools/models/zoo.py exports the benchmark's
#     torchvision architectures
# Usage: tools/setup.sh [--quiet] [--bench] [--zoo]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
quiet=0
bench=0
zoo=0
say() { [[ $quiet == 1 ]] || echo "setup: $*"; }
die() { echo "setup: error: $*" >&2; exit 1; }
for arg in "$@"; do
  case "$arg" in
    --quiet) quiet=1 ;;
    --bench) bench=1 ;;
    --zoo) zoo=1 ;;
    *) die "unknown argument '$arg' (usage: tools/setup.sh [--quiet] [--bench] [--zoo])" ;;
  esac
done

packages=(
  llvm-22-dev libmlir-22-dev mlir-22-tools clang-22 lld-22 libomp-22-dev
  llvm-22-tools clang-format-22
  libonnx-dev libprotobuf-dev protobuf-compiler
  cmake ninja-build ccache libgtest-dev libgmock-dev
  qemu-user libc6-dev-arm64-cross libgcc-12-dev-arm64-cross
  libstdc++-12-dev-arm64-cross
  python3-venv
)
if [[ $zoo == 1 ]]; then
  packages+=(python3-torch python3-torchvision)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  say "installing Debian packages: ${missing[*]}"
  sudo=""
  if [[ $(id -u) != 0 ]]; then
    command -v sudo >/dev/null || die "need root (or sudo) to install: ${missing[*]}"
    sudo=sudo
  fi
  $sudo apt-get update -qq || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null ||
    die "apt-get could not install: ${missing[*]}"
else
  say "Debian packages: all present"
fi
[[ -x /usr/lib/llvm-22/bin/mlir-tblgen ]] || die "MLIR 22 is not where expected (/usr/lib/llvm-22)"

# LLVM's OpenMP runtime for AArch64, which multithreaded AArch64 models link
# and load. Debian ships it only as libomp5-19:arm64, which cannot be
# installed beside the amd64 libomp5-19 through multiarch (both own
# /usr/lib/llvm-19/lib/libomp.so.5), so the package is downloaded with apt and
# its library put into the cross sysroot, where lld and qemu-aarch64 find it.
arm_omp=/usr/aarch64-linux-gnu/lib/libomp.so.5
if [[ -d /usr/aarch64-linux-gnu/lib && ! -f "$arm_omp" ]]; then
  say "installing LLVM's OpenMP runtime for AArch64 (libomp5-19:arm64) into $arm_omp"
  sudo=""
  [[ $(id -u) != 0 ]] && sudo=sudo
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $sudo dpkg --add-architecture arm64 && $sudo apt-get update -qq ||
      die "cannot add the arm64 architecture to apt"
  fi
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -qq libomp5-19:arm64 2>/dev/null &&
    dpkg-deb -x libomp5-19_*_arm64.deb x) ||
    { rm -rf "$tmp"; die "cannot download libomp5-19:arm64"; }
  $sudo install -m 644 "$tmp/x/usr/lib/llvm-19/lib/libomp.so.5" "$arm_omp" ||
    { rm -rf "$tmp"; die "cannot install $arm_omp"; }
  rm -rf "$tmp"
fi

# Python: a virtual environment in the checkout, updated when the pinned
# requirements change.
python=${KILN_PYTHON:-python3}
# make_venv DIR REQUIREMENTS
make_venv() {
  local venv="$root/$1" requirements="$root/$2"
  local stamp="$venv/.kiln-requirements"
  if [[ -f "$stamp" ]] && cmp -s "$stamp" "$requirements"; then
    say "Python environment $1: up to date"
    return
  fi
  say "creating the Python environment in $1"
  [[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv" ||
    die "cannot create a virtual environment with $python"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements" ||
    die "pip could not install $2"
  cp "$requirements" "$stamp"
}
make_venv .venv tools/requirements.txt
if [[ $bench == 1 ]]; then
  make_venv .venv-bench tools/requirements-bench.txt
fi
say "done"
