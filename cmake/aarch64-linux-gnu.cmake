# CMake toolchain file: cross-build for AArch64 Linux (glibc) from an x86-64
# Debian host with clang-22 and lld-22, against Debian's cross sysroot
# (/usr/aarch64-linux-gnu, from libc6-dev-arm64-cross, libgcc-12-dev-arm64-cross
# and libstdc++-12-dev-arm64-cross; tools/setup.sh installs them).
#
#   cmake -G Ninja -S . -B build-aarch64 -DKILN_RUNTIME_ONLY=ON \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#   ninja -C build-aarch64 && ctest --test-dir build-aarch64
#
# Tests and gtest_discover_tests run the AArch64 binaries through
# CMAKE_CROSSCOMPILING_EMULATOR (qemu-aarch64 from qemu-user). Only the runtime
# and kiln-run are meant to be cross-built (KILN_RUNTIME_ONLY): the compiler
# itself runs on the host and targets AArch64 with --target=aarch64.
#
# Overridable on the command line: KILN_AARCH64_SYSROOT (default
# /usr/aarch64-linux-gnu) and KILN_LLVM_ROOT (default /usr/lib/llvm-22).

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(KILN_AARCH64_TRIPLE aarch64-linux-gnu)
if(NOT KILN_AARCH64_SYSROOT)
  set(KILN_AARCH64_SYSROOT /usr/aarch64-linux-gnu)
endif()
if(NOT KILN_LLVM_ROOT)
  set(KILN_LLVM_ROOT /usr/lib/llvm-22)
endif()
# try_compile projects read the toolchain file again: pass these on.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES
     KILN_AARCH64_SYSROOT KILN_LLVM_ROOT)

if(NOT EXISTS "${KILN_AARCH64_SYSROOT}/lib/libc.so.6")
  message(FATAL_ERROR
    "No AArch64 cross sysroot at ${KILN_AARCH64_SYSROOT} "
    "(install libc6-dev-arm64-cross libgcc-12-dev-arm64-cross "
    "libstdc++-12-dev-arm64-cross, or run tools/setup.sh)")
endif()

set(CMAKE_C_COMPILER ${KILN_LLVM_ROOT}/bin/clang)
set(CMAKE_CXX_COMPILER ${KILN_LLVM_ROOT}/bin/clang++)
set(CMAKE_C_COMPILER_TARGET ${KILN_AARCH64_TRIPLE})
set(CMAKE_CXX_COMPILER_TARGET ${KILN_AARCH64_TRIPLE})
set(CMAKE_ASM_COMPILER_TARGET ${KILN_AARCH64_TRIPLE})
# No binutils for AArch64 are installed: LLVM's archiver and lld.
set(CMAKE_AR ${KILN_LLVM_ROOT}/bin/llvm-ar CACHE FILEPATH "")
set(CMAKE_RANLIB ${KILN_LLVM_ROOT}/bin/llvm-ranlib CACHE FILEPATH "")
set(CMAKE_STRIP ${KILN_LLVM_ROOT}/bin/llvm-strip CACHE FILEPATH "")
set(CMAKE_OBJDUMP ${KILN_LLVM_ROOT}/bin/llvm-objdump CACHE FILEPATH "")

# No --sysroot: with the Debian layout, clang finds /usr/aarch64-linux-gnu and
# the gcc-cross files (/usr/lib/gcc-cross/aarch64-linux-gnu/12) by itself, and
# a --sysroot=/usr/aarch64-linux-gnu would hide the latter.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-fuse-ld=lld")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-fuse-ld=lld")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "-fuse-ld=lld")

# Libraries, headers and CMake packages only from the sysroot; programs
# (qemu, python, ...) from the host.
set(CMAKE_FIND_ROOT_PATH ${KILN_AARCH64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Run AArch64 programs (ctest, gtest_discover_tests) under user-mode QEMU; -L
# points its dynamic loader at the sysroot's ld-linux-aarch64.so.1 and libs.
find_program(KILN_QEMU_AARCH64 qemu-aarch64)
if(KILN_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR
      "${KILN_QEMU_AARCH64};-L;${KILN_AARCH64_SYSROOT}")
endif()
