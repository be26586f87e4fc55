# Helpers for running the runtime's unit tests in a cross build (for example
# with cmake/aarch64-linux-gnu.cmake), used by runtime/CMakeLists.txt.

# kiln_provide_cross_gtest(): make find_package(GTest) succeed for the target
# architecture. A GTest found in the cross sysroot is used as it is; otherwise
# GoogleTest is built from the sources of Debian's `googletest` package
# (/usr/src/googletest, or KILN_GTEST_SOURCE_DIR) and find_package(GTest) is
# redirected to it (FetchContent's OVERRIDE_FIND_PACKAGE, CMake >= 3.24), so
# that test/unit/runtime/CMakeLists.txt needs no cross-specific code. Without
# either, the tests are skipped with test/unit/runtime's warning.
function(kiln_provide_cross_gtest)
  find_package(GTest QUIET)
  if(GTest_FOUND)
    message(STATUS "GoogleTest for ${CMAKE_SYSTEM_PROCESSOR}: found in the sysroot")
    return()
  endif()
  set(KILN_GTEST_SOURCE_DIR /usr/src/googletest CACHE PATH
      "GoogleTest sources built for cross-built unit tests")
  if(NOT EXISTS "${KILN_GTEST_SOURCE_DIR}/CMakeLists.txt")
    message(WARNING "No GoogleTest for ${CMAKE_SYSTEM_PROCESSOR} and no sources "
                    "at ${KILN_GTEST_SOURCE_DIR} (apt-get install googletest)")
    return()
  endif()
  if(CMAKE_VERSION VERSION_LESS 3.24)
    message(WARNING "Building GoogleTest from source needs CMake >= 3.24")
    return()
  endif()
  message(STATUS "GoogleTest for ${CMAKE_SYSTEM_PROCESSOR}: built from "
                 "${KILN_GTEST_SOURCE_DIR}")
  set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  include(FetchContent)
  FetchContent_Declare(GTest SOURCE_DIR ${KILN_GTEST_SOURCE_DIR}
                       OVERRIDE_FIND_PACKAGE)
  FetchContent_MakeAvailable(GTest)
  # Not our code: no -Wall -Wextra noise from it.
  foreach(t gtest gtest_main)
    if(TARGET ${t})
      target_compile_options(${t} PRIVATE -w)
    endif()
  endforeach()
endfunction()

# kiln_emulate_kiln_run_in_tests(): the kiln-run tests start kiln-run through
# std::system(), that is through the host's /bin/sh, which cannot execute an
# AArch64 binary (no binfmt_misc registration is assumed). Point their
# KILN_RUN_PATH at a wrapper script that runs kiln-run under the emulator.
function(kiln_emulate_kiln_run_in_tests)
  if(NOT TARGET kiln_runtime_tests OR NOT CMAKE_CROSSCOMPILING_EMULATOR)
    return()
  endif()
  set(wrapper ${PROJECT_BINARY_DIR}/bin/kiln-run-emulated)
  list(JOIN CMAKE_CROSSCOMPILING_EMULATOR "' '" emulator)
  file(GENERATE OUTPUT ${wrapper}
    CONTENT "#!/bin/sh\n# Generated: runs the cross-built kiln-run under the emulator.\nexec '${emulator}' '$<TARGET_FILE:kiln-run>' \"$@\"\n"
    FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
                     GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  get_target_property(defs kiln_runtime_tests COMPILE_DEFINITIONS)
  list(FILTER defs EXCLUDE REGEX "^KILN_RUN_PATH=")
  list(APPEND defs "KILN_RUN_PATH=\"${wrapper}\"")
  set_target_properties(kiln_runtime_tests PROPERTIES COMPILE_DEFINITIONS "${defs}")
endfunction()
