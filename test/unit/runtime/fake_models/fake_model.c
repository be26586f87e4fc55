/*===- fake_model.c - A hand-written model implementing the Kiln ABI ------===*
 *
 * Stands in for a compiled model in the runtime's tests. One source, built
 * several times with a different FAKE_VARIANT each (see CMakeLists.txt):
 *
 *   FAKE_ADD            inputs a, b: f32 [2,3]; outputs "sum:0" = a + b and
 *                       "threads" (i32 scalar) = the thread count it was given;
 *                       two kernels ("add", then "threads"), timed through
 *                       the profiler hooks of the run arguments
 *   FAKE_V1             FAKE_ADD as an ABI version 1 model: no kernel table,
 *                       run arguments that end before `profiler`
 *   FAKE_BAD_VERSION    abi_version 999
 *   FAKE_UNKNOWN_FEATURE requires "avx512fp16,nonexistentfeature" (on AArch64
 *     "sve2,nonexistentfeature": a name the runtime knows comes first)
 *   FAKE_FEATURE        requires one real feature, FAKE_FEATURE_NAME
 *   FAKE_OTHER_ARCH     compiled for the other architecture
 *   FAKE_NEGATIVE_DIM   an input of shape [2,-3]
 *   FAKE_NULL_NAME      an output without a name
 *   FAKE_HUGE_SHAPE     an input whose byte size overflows
 *   FAKE_BAD_RANK       an input of rank -1
 *   FAKE_DUPLICATE_NAME two inputs named "a"
 *   FAKE_BAD_ALIGN      workspace alignment 48
 *   FAKE_NO_RUN         does not export kiln_abi_run
 *   FAKE_RUN_FAILS      kiln_abi_run returns KILN_ABI_RUN_NO_MEMORY
 *   FAKE_NULL_KERNEL    a kernel without a name
 *   FAKE_SYMBOLIC       FAKE_ADD with a symbolic batch: a, b and "sum:0" of
 *                       shape [batch,3], batch in 1..4 (ABI version 4); the
 *                       run adds batch rows
 *   FAKE_SYMBOL_INSIDE  a symbolic batch that is not an input's first
 *                       dimension
 *   FAKE_SYMBOL_BOUNDS  a symbolic batch with bounds 0..4
 *   FAKE_INDEX_ERROR    FAKE_ADD with one index check (ABI version 5), which
 *                       fails, on index a[0], when a[0] >= 10
 *   FAKE_BAD_CHECK      FAKE_INDEX_ERROR with an empty range [1, 0]
 *   FAKE_DATA_DEPENDENT FAKE_ADD whose second output is "pos" (i64 [2,n]),
 *                       the row and column of each positive element of a,
 *                       n decided by the run (ABI version 6, 0..6)
 *
 *===----------------------------------------------------------------------===*/

#include "kiln/model_abi.h"

#include <stddef.h>

#define FAKE_ADD 1
#define FAKE_BAD_VERSION 2
#define FAKE_UNKNOWN_FEATURE 3
#define FAKE_FEATURE 4
#define FAKE_OTHER_ARCH 5
#define FAKE_NEGATIVE_DIM 6
#define FAKE_NULL_NAME 7
#define FAKE_HUGE_SHAPE 8
#define FAKE_BAD_RANK 9
#define FAKE_DUPLICATE_NAME 10
#define FAKE_BAD_ALIGN 11
#define FAKE_NO_RUN 12
#define FAKE_RUN_FAILS 13
#define FAKE_V1 14
#define FAKE_NULL_KERNEL 15
#define FAKE_SYMBOLIC 16
#define FAKE_SYMBOL_INSIDE 17
#define FAKE_SYMBOL_BOUNDS 18
#define FAKE_INDEX_ERROR 19
#define FAKE_BAD_CHECK 20
#define FAKE_DATA_DEPENDENT 21
#define CHECKS                                                                 \
  (FAKE_VARIANT == FAKE_INDEX_ERROR || FAKE_VARIANT == FAKE_BAD_CHECK)
#define SYMBOLIC                                                               \
  (FAKE_VARIANT == FAKE_SYMBOLIC || FAKE_VARIANT == FAKE_SYMBOL_INSIDE ||      \
   FAKE_VARIANT == FAKE_SYMBOL_BOUNDS)

#ifndef FAKE_VARIANT
#error "define FAKE_VARIANT"
#endif

#define EXPORT __attribute__((visibility("default")))

#if defined(__x86_64__)
#define HOST_TRIPLE "x86_64-unknown-linux-gnu"
#define OTHER_TRIPLE "aarch64-unknown-linux-gnu"
#else
#define HOST_TRIPLE "aarch64-unknown-linux-gnu"
#define OTHER_TRIPLE "x86_64-unknown-linux-gnu"
#endif

#if SYMBOLIC
/* -1: symbolic dimension 0 of `symbols`. */
static const int64_t shape23[] = {-1, 3};
static const int64_t insideShape[] = {3, -1};
static const kiln_abi_symbol symbols[] = {
    {"batch", FAKE_VARIANT == FAKE_SYMBOL_BOUNDS ? 0 : 1, 4,
     KILN_ABI_SYMBOL_REPEAT, 0},
};
#elif FAKE_VARIANT == FAKE_DATA_DEPENDENT
static const int64_t shape23[] = {2, 3};
static const int64_t positionsShape[] = {2, -1};
static const kiln_abi_symbol symbols[] = {
    {"n", 0, 6, KILN_ABI_SYMBOL_RESULT, 0},
};
#else
static const int64_t shape23[] = {2, 3};
#endif
#if FAKE_VARIANT == FAKE_NEGATIVE_DIM
static const int64_t negativeShape[] = {2, -3};
#elif FAKE_VARIANT == FAKE_HUGE_SHAPE
static const int64_t hugeShape[] = {INT64_MAX / 2, 4};
#endif

static const kiln_abi_tensor inputs[] = {
    {"a", KILN_DTYPE_F32, 2, shape23},
#if FAKE_VARIANT == FAKE_NEGATIVE_DIM
    {"b", KILN_DTYPE_F32, 2, negativeShape},
#elif FAKE_VARIANT == FAKE_HUGE_SHAPE
    {"b", KILN_DTYPE_F32, 2, hugeShape},
#elif FAKE_VARIANT == FAKE_BAD_RANK
    {"b", KILN_DTYPE_F32, -1, shape23},
#elif FAKE_VARIANT == FAKE_DUPLICATE_NAME
    {"a", KILN_DTYPE_F32, 2, shape23},
#elif FAKE_VARIANT == FAKE_SYMBOL_INSIDE
    {"b", KILN_DTYPE_F32, 2, insideShape},
#else
    {"b", KILN_DTYPE_F32, 2, shape23},
#endif
};

static const kiln_abi_tensor outputs[] = {
#if FAKE_VARIANT == FAKE_NULL_NAME
    {NULL, KILN_DTYPE_F32, 2, shape23},
#else
    {"sum:0", KILN_DTYPE_F32, 2, shape23},
#endif
#if FAKE_VARIANT == FAKE_DATA_DEPENDENT
    {"pos", KILN_DTYPE_I64, 2, positionsShape},
#else
    {"threads", KILN_DTYPE_I32, 0, NULL},
#endif
};

#if FAKE_VARIANT != FAKE_V1
static const kiln_abi_kernel kernels[] = {
#if FAKE_VARIANT == FAKE_NULL_KERNEL
    {NULL, "", 0},
#else
    {"add", "sum (Add)", 6},
#endif
    {"threads", "", 0},
};
#endif

#if FAKE_VARIANT == FAKE_V1
#define MODEL_VERSION 1u
#elif FAKE_VARIANT == FAKE_BAD_VERSION
#define MODEL_VERSION 999u
#else
#define MODEL_VERSION KILN_ABI_VERSION
#endif

#if CHECKS
static const kiln_abi_check checks[] = {
#if FAKE_VARIANT == FAKE_BAD_CHECK
    {"emb (Gather)", "index", 1, 0},
#else
    {"emb (Gather)", "index", -10, 9},
#endif
};
#endif

static const kiln_abi_model model = {
    MODEL_VERSION,
    0,
#if FAKE_VARIANT == FAKE_OTHER_ARCH
    OTHER_TRIPLE,
#else
    HOST_TRIPLE,
#endif
    "generic",
#if FAKE_VARIANT == FAKE_UNKNOWN_FEATURE
#if defined(__x86_64__)
    "avx512fp16,nonexistentfeature",
#else
    "sve2,nonexistentfeature",
#endif
#elif FAKE_VARIANT == FAKE_FEATURE
    FAKE_FEATURE_NAME,
#else
    "",
#endif
    "kiln runtime tests",
    2,
    inputs,
    2,
    outputs,
    1000, /* workspace_size */
#if FAKE_VARIANT == FAKE_BAD_ALIGN
    48,
#else
    128, /* workspace_align */
#endif
#if FAKE_VARIANT == FAKE_V1
    /* Not part of a version 1 descriptor: a runtime that read them would
       refuse the model. */
    -1,
    NULL,
#else
    2,
    kernels,
#endif
#if SYMBOLIC || FAKE_VARIANT == FAKE_DATA_DEPENDENT
    KILN_ABI_DEVICE_CPU,
    0,
    NULL,
    NULL,
    NULL,
    0,
    1, /* num_symbols */
    0,
    symbols,
#elif CHECKS
    KILN_ABI_DEVICE_CPU,
    0,
    NULL,
    NULL,
    NULL,
    0,
    0, /* num_symbols */
    0,
    NULL,
    1, /* num_checks */
    0,
    checks,
#endif
};

EXPORT const kiln_abi_model *kiln_abi_describe(void) { return &model; }

#if FAKE_VARIANT != FAKE_NO_RUN
EXPORT int32_t kiln_abi_run(const kiln_abi_run_args *args) {
  if (FAKE_VARIANT == FAKE_RUN_FAILS)
    return KILN_ABI_RUN_NO_MEMORY;
  if (!args || args->abi_version != MODEL_VERSION || args->num_threads < 1 ||
      !args->workspace || ((uintptr_t)args->workspace & 127) != 0)
    return KILN_ABI_RUN_BAD_ARGS;
  const float *a = (const float *)args->inputs[0];
  const float *b = (const float *)args->inputs[1];
  float *sum = (float *)args->outputs[0];
#if SYMBOLIC
  if (!args->symbol_values)
    return KILN_ABI_RUN_BAD_ARGS;
  const int rows = (int)args->symbol_values[0];
#else
  const int rows = 2;
#endif
  /* Touch the whole workspace so that ASan sees a short one. */
  unsigned char *workspace = (unsigned char *)args->workspace;
  for (int i = 0; i < 1000; ++i)
    workspace[i] = (unsigned char)i;
#if FAKE_VARIANT == FAKE_V1
  const kiln_abi_profiler *profiler = NULL;
#else
  const kiln_abi_profiler *profiler = args->profiler;
#endif
  if (profiler)
    profiler->kernel_begin(profiler->context, 0);
  for (int i = 0; i < 3 * rows; ++i)
    sum[i] = a[i] + b[i];
  if (profiler) {
    profiler->kernel_end(profiler->context, 0);
    profiler->kernel_begin(profiler->context, 1);
  }
#if FAKE_VARIANT == FAKE_DATA_DEPENDENT
  /* Written at the largest size, [2,6]; the count to symbol_results. */
  if (!args->symbol_results)
    return KILN_ABI_RUN_BAD_ARGS;
  int64_t *positions = (int64_t *)args->outputs[1];
  int64_t count = 0;
  for (int i = 0; i < 12; ++i)
    positions[i] = -1;
  for (int i = 0; i < 6; ++i)
    if (a[i] > 0) {
      positions[count] = i / 3;
      positions[6 + count] = i % 3;
      ++count;
    }
  args->symbol_results[0] = a[0] == 99 ? 7 : count; /* 99: a bad size */
#else
  *(int32_t *)args->outputs[1] = args->num_threads;
#endif
  if (profiler)
    profiler->kernel_end(profiler->context, 1);
#if CHECKS
  if (a[0] >= 10) {
    if (args->error) {
      args->error->check = 0;
      args->error->value = (int64_t)a[0];
    }
    return KILN_ABI_RUN_INDEX_ERROR;
  }
#endif
  return KILN_ABI_RUN_OK;
}
#endif
