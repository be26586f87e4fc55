#!/usr/bin/env bash
# Kiln's main job on the CNN that ships with the project (tools/models/
# kiln_cnn.py, fixed seeded weights): build the model, compile it into one
# shared object, run it with kiln-run, check every output against
# onnxruntime, and print the timings of both.
# Usage: tools/main-job.sh [--threads N] [--repeat N]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${KILN_BUILD_DIR:-$root/build}
llvm=/usr/lib/llvm-22

tools/setup.sh --quiet
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
export CCACHE_BASEDIR="$root"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -G Ninja -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER="$llvm/bin/clang" \
    -DCMAKE_CXX_COMPILER="$llvm/bin/clang++" \
    -DLLVM_EXTERNAL_LIT="$llvm/bin/lit" \
    -DPython3_EXECUTABLE="$root/.venv/bin/python" >/dev/null
fi
echo "main-job: building kiln-compile and kiln-run"
ninja -C "$build" kiln-compile kiln-run >/dev/null
exec "$root/.venv/bin/python" "$root/tools/main_job.py" --build "$build" "$@"
