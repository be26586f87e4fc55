#!/usr/bin/env bash
# Formats every tracked C and C++ file in place with clang-format 22 (LLVM style).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
git ls-files '*.c' '*.cpp' '*.h' | xargs /usr/lib/llvm-22/bin/clang-format -i
