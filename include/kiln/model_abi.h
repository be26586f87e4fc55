/*===- kiln/model_abi.h - What a compiled Kiln model exports ------*- C -*-===*
 *
 * A model compiled by Kiln is one shared object that exports exactly two C
 * symbols:
 *
 *   const kiln_abi_model *kiln_abi_describe(void);
 *   int32_t kiln_abi_run(const kiln_abi_run_args *args);
 *
 * `kiln_abi_describe` returns a pointer to read-only data inside the object;
 * the first field of that data is always `abi_version`, so a loader can refuse
 * an object of another version before it reads anything else.
 *
 * Application code does not use this header directly: it uses the runtime
 * (`kiln/runtime.h`), which opens the object, checks the version and the CPU
 * features, validates every input, and only then calls `kiln_abi_run`. The
 * compiler (lib/Target) emits exactly these layouts.
 *
 * Rules of change: fields are only appended, and appending one bumps
 * KILN_ABI_VERSION (a field is read only from objects of the version that
 * added it); anything else is a new ABI. A runtime loads every version from
 * KILN_ABI_MIN_VERSION to KILN_ABI_VERSION.
 *
 * Versions:
 *   1  descriptor, run arguments
 *   2  the kernel table (kiln_abi_model.num_kernels, .kernels) and the
 *      profiler hooks (kiln_abi_run_args.profiler)
 *   3  GPU models: the device, device images, GPU kernels and constants of
 *      kiln_abi_model, and kiln_abi_run_args.gpu
 *   4  symbolic dimensions: kiln_abi_model.num_symbols, .symbols, negative
 *      shape entries that name them, and kiln_abi_run_args.symbol_values
 *   5  run-time index checks: kiln_abi_model.num_checks, .checks,
 *      kiln_abi_run_args.error and KILN_ABI_RUN_INDEX_ERROR
 *   6  sizes that the data decides: symbols of kind KILN_ABI_SYMBOL_RESULT
 *      and kiln_abi_run_args.symbol_results
 *   7  index checks in CUDA models: their kiln_abi_run_args.error is device
 *      memory, which the kernels write and the caller reads after the run
 *   8  sizes that the code reads: symbols of kind KILN_ABI_SYMBOL_DIM
 *
 *===----------------------------------------------------------------------===*/

#ifndef KILN_MODEL_ABI_H
#define KILN_MODEL_ABI_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the layouts below, and the oldest version a runtime still
 * loads. */
#define KILN_ABI_VERSION 8u
#define KILN_ABI_MIN_VERSION 1u

/* Element types. The numbers are ONNX's TensorProto.DataType numbers, so that a
 * value read from an ONNX model needs no translation. Only grows. */
typedef enum kiln_dtype {
  KILN_DTYPE_INVALID = 0,
  KILN_DTYPE_F32 = 1,
  KILN_DTYPE_U8 = 2,
  KILN_DTYPE_I8 = 3,
  KILN_DTYPE_U16 = 4,
  KILN_DTYPE_I16 = 5,
  KILN_DTYPE_I32 = 6,
  KILN_DTYPE_I64 = 7,
  /* 8 is ONNX's STRING, which Kiln does not support. */
  KILN_DTYPE_BOOL = 9, /* one byte per element, 0 or 1 */
  KILN_DTYPE_F16 = 10,
  KILN_DTYPE_F64 = 11,
  KILN_DTYPE_U32 = 12,
  KILN_DTYPE_U64 = 13,
  KILN_DTYPE_BF16 = 16,
  /* Narrow types, one element per byte (never packed two or four per byte as
   * ONNX's TensorProto does). 8-bit floats: the byte is the element's code. */
  KILN_DTYPE_F8E4M3FN = 17,
  KILN_DTYPE_F8E4M3FNUZ = 18,
  KILN_DTYPE_F8E5M2 = 19,
  KILN_DTYPE_F8E5M2FNUZ = 20,
  /* 4- and 2-bit types: the element's code (two's complement for the signed
   * integers) in the low bits of its byte, the high bits zero. */
  KILN_DTYPE_U4 = 21,
  KILN_DTYPE_I4 = 22,
  KILN_DTYPE_F4E2M1 = 23,
  KILN_DTYPE_F8E8M0 = 24, /* one byte, the biased exponent */
  KILN_DTYPE_U2 = 25,
  KILN_DTYPE_I2 = 26
} kiln_dtype;

/* One input or output of the model. Tensors are dense, row-major (C order),
 * without padding. An entry of `shape` >= 0 is a static size; since version
 * 4, an entry d < 0 is symbolic dimension number -1 - d of
 * kiln_abi_model.symbols, whose size each run chooses (before version 4,
 * every entry is >= 0). */
typedef struct kiln_abi_tensor {
  const char *name;     /* the ONNX graph input/output name, NUL-terminated */
  int32_t dtype;        /* a kiln_dtype */
  int32_t rank;         /* number of entries in `shape` */
  const int64_t *shape; /* `rank` dimensions */
} kiln_abi_tensor;

/* One kernel: a loop nest the compiler outlined into a function of its own
 * (since version 2). The model calls its kernels one after the other from the
 * thread that called kiln_abi_run; parallel loops run inside a kernel. */
typedef struct kiln_abi_kernel {
  const char *name;   /* unique in the model, e.g. "main_kernel12" */
  const char *source; /* the ONNX nodes it computes, e.g. "conv1 (Conv)";
                         "" when unknown */
  uint64_t flops;     /* floating-point operations of one call, counted from
                         the loops (a fused multiply-add counts 2); 0 when
                         unknown */
} kiln_abi_kernel;

/* Where a model's kernels run (since version 3). */
#define KILN_ABI_DEVICE_CPU 0
#define KILN_ABI_DEVICE_CUDA 1 /* NVIDIA GPUs, through the CUDA driver API */

/* Formats of a device image (since version 3). */
#define KILN_ABI_IMAGE_CUBIN 1 /* an ELF cubin made by ptxas for `arch` */
#define KILN_ABI_IMAGE_PTX                                                     \
  2 /* PTX text for `arch` and newer, which the                                \
       driver compiles when it loads it */
#define KILN_ABI_IMAGE_EMULATION                                               \
  3 /* host code of the kernels: `data` is an                                  \
       array of kiln_abi_emulated_kernel, one                                  \
       per GPU kernel (kiln-compile                                            \
       --gpu-emulation) */

/* One image of a GPU model's kernels (since version 3). */
typedef struct kiln_abi_device_image {
  const char *arch; /* "sm_80", "sm_90a"; "host" for an emulation image */
  int32_t format;   /* a KILN_ABI_IMAGE_* */
  int32_t reserved; /* zero */
  const void *data; /* `size` bytes inside the model object */
  uint64_t size;
} kiln_abi_device_image;

/* How one GPU kernel is launched (since version 3). Entry k of
 * kiln_abi_model.gpu_kernels describes entry k of .kernels. */
typedef struct kiln_abi_gpu_kernel {
  uint32_t grid[3];     /* blocks in x, y, z, each >= 1 */
  uint32_t block[3];    /* threads per block in x, y, z, each >= 1 */
  uint32_t shared_size; /* bytes of dynamic shared memory */
  uint32_t num_params;  /* parameters, each a device pointer */
} kiln_abi_gpu_kernel;

/* One kernel of an emulation image: runs thread (ids[3], ids[4], ids[5]) of
 * block (ids[0], ids[1], ids[2]); params[i] points to the value of
 * parameter i, as cuLaunchKernel's kernelParams do. ids[6] is the address
 * of the block's shared memory (KILN_ABI_EMULATED_SHARED_SIZE bytes, which
 * the kernel's static shared buffers are laid out in) and ids[7] that of a
 * `void (*)(void)` that the thread calls at each barrier (__syncthreads):
 * the emulator runs each thread as a coroutine and switches threads there. */
#define KILN_ABI_EMULATED_SHARED_SIZE 49152
typedef struct kiln_abi_emulated_kernel {
  const char *name; /* the kernel's name, as in the other images */
  void (*run)(void *const *params, const int64_t *ids);
} kiln_abi_emulated_kernel;

/* A symbolic dimension (since version 4): a size that each run chooses,
 * within [min, max], and that every dimension naming it shares. */
typedef struct kiln_abi_symbol {
  const char *name; /* the ONNX dim_param, e.g. "batch" */
  int64_t min;      /* >= 1 (KILN_ABI_SYMBOL_RESULT: 0) */
  int64_t max;      /* >= min */
  /* Who chooses the size, and how the model's code takes it:
   *
   * KILN_ABI_SYMBOL_REPEAT: the caller, through the inputs; the entry takes
   * one sample (the symbol is dimension 0 of every input and output that
   * names it, and nowhere else), and kiln_abi_run calls it once per sample.
   *
   * KILN_ABI_SYMBOL_RESULT (since version 6): the run, from the data (the
   * output of a NonZero, Unique, ...); only outputs name it. The run writes
   * the size to symbol_results[k] of its arguments, and writes each output
   * that names such a symbol as if the symbol were `max`: row-major in the
   * output's largest shape, of which the entries within the run's sizes
   * are the output (the runtime moves them together, to the dense layout
   * of the run's shape).
   *
   * KILN_ABI_SYMBOL_DIM (since version 8): the caller, through the inputs;
   * the model's code reads the size (a sequence length), anywhere in the
   * shapes. Each input and output that names it is dense at the run's
   * size; the workspace is sized for `max`. Beside a REPEAT symbol, a
   * sample's size is that of the run's sizes (the same layout: a dense
   * tensor of all the samples). */
  int32_t kind;
  int32_t reserved; /* zero */
} kiln_abi_symbol;

#define KILN_ABI_SYMBOL_REPEAT 1
#define KILN_ABI_SYMBOL_RESULT 2
#define KILN_ABI_SYMBOL_DIM 3

/* A check of indices read at run time (since version 5): a gather's or a
 * scatter's indices must lie in [low, high] (negative ones count from the
 * end of the dimension). The model clamps an index out of range, so it
 * never reads or writes outside a tensor, and fails the run
 * (KILN_ABI_RUN_INDEX_ERROR). */
typedef struct kiln_abi_check {
  const char *source; /* the ONNX node, "name (OpType)"; "" when unknown */
  const char *what;   /* which index: "index", "index 1 of a tuple" */
  int64_t low;
  int64_t high; /* >= low */
} kiln_abi_check;

/* The model descriptor. */
typedef struct kiln_abi_model {
  uint32_t abi_version;      /* == KILN_ABI_VERSION; always the first field */
  uint32_t reserved;         /* zero */
  const char *target_triple; /* e.g. "x86_64-unknown-linux-gnu" */
  const char *cpu;           /* the CPU the code was tuned for, e.g. "znver4" */
  const char *cpu_features;  /* features the code requires, comma-separated
                                without signs, e.g. "avx2,fma,avx512f"; "" for
                                none. A runtime refuses a model that needs a
                                feature the running CPU lacks, or one the
                                runtime cannot check. */
  const char *producer;      /* e.g. "kiln 0.1.0" */
  int64_t num_inputs;
  const kiln_abi_tensor *inputs;
  int64_t num_outputs;
  const kiln_abi_tensor *outputs;
  uint64_t workspace_size;  /* bytes of scratch memory `run` needs, 0 if none */
  uint64_t workspace_align; /* alignment of that memory in bytes, power of 2 */
  /* Since version 2. */
  int64_t num_kernels;            /* entries of `kernels`, >= 0 */
  const kiln_abi_kernel *kernels; /* NULL when num_kernels is 0 */
  /* Since version 3. A CUDA model's workspace (above) is device memory. */
  int32_t device;            /* a KILN_ABI_DEVICE_* */
  int32_t num_device_images; /* entries of `device_images`; 0 for the CPU */
  const kiln_abi_device_image *device_images;
  const kiln_abi_gpu_kernel *gpu_kernels; /* num_kernels entries for a CUDA
                                             model, else NULL */
  const void *constants;   /* the constants segment, which the runtime copies
                              to the device once; NULL when its size is 0 */
  uint64_t constants_size; /* bytes, a multiple of 256 */
  /* Since version 4. */
  int32_t num_symbols;            /* entries of `symbols`, >= 0 */
  int32_t reserved2;              /* zero */
  const kiln_abi_symbol *symbols; /* NULL when num_symbols is 0 */
  /* Since version 5. */
  int32_t num_checks;           /* entries of `checks`, >= 0 */
  int32_t reserved3;            /* zero */
  const kiln_abi_check *checks; /* NULL when num_checks is 0 */
} kiln_abi_model;

/* Hooks a caller may pass to time each kernel (since version 2). The model
 * calls kernel_begin(context, k) right before kernel k (an index into
 * kiln_abi_model.kernels) and kernel_end(context, k) right after it, on the
 * thread that called kiln_abi_run, never nested. */
typedef struct kiln_abi_profiler {
  void *context;
  void (*kernel_begin)(void *context, int64_t kernel);
  void (*kernel_end)(void *context, int64_t kernel);
} kiln_abi_profiler;

/* What a CUDA model's run calls to launch kernel k (an index into
 * kiln_abi_model.kernels) with its parameters (since version 3): params[i]
 * is the device address of parameter i. Launches go in order on one stream;
 * the runtime reports a failed launch after the run. */
typedef struct kiln_abi_gpu {
  void *context;
  void (*launch)(void *context, int64_t kernel, void *const *params);
  void *constants; /* the device address of the constants segment */
} kiln_abi_gpu;

/* Arguments of one run. The runtime has validated everything before the call:
 * the model code trusts these pointers. For a CUDA model, inputs, outputs and
 * workspace are device addresses. */
typedef struct kiln_abi_run_args {
  uint32_t abi_version;      /* == the model's abi_version */
  int32_t num_threads;       /* > 0 */
  const void *const *inputs; /* num_inputs pointers, in descriptor order */
  void *const *outputs;      /* num_outputs pointers, in descriptor order */
  void *workspace;           /* workspace_size bytes, or NULL if that is 0 */
  /* Since version 2: NULL, or hooks around every kernel call. */
  const kiln_abi_profiler *profiler;
  /* Since version 3: the launcher of a CUDA model; NULL for a CPU model. */
  const kiln_abi_gpu *gpu;
  /* Since version 4: this run's size of each symbolic dimension,
   * num_symbols entries, each within its bounds; NULL when num_symbols is
   * 0. */
  const int64_t *symbol_values;
  /* Since version 5: NULL, or where a run that returns
   * KILN_ABI_RUN_INDEX_ERROR says which check failed, and on which index.
   * Since version 7, for a CUDA model with checks: device memory, never
   * NULL, which the caller sets to {-1, 0} before the run; the kernels
   * write the first failed check there, kiln_abi_run returns
   * KILN_ABI_RUN_OK all the same, and the caller reads it after the run's
   * work is done (a check >= 0: the run failed it). */
  struct kiln_abi_run_error *error;
  /* Since version 6: num_symbols entries, where the run writes the size of
   * each KILN_ABI_SYMBOL_RESULT symbol (the others are left alone); may be
   * NULL only for a model without such symbols. For a CUDA model, device
   * memory: its kernels write the sizes there. */
  int64_t *symbol_results;
} kiln_abi_run_args;

/* The first failed index check of a run (since version 5). */
typedef struct kiln_abi_run_error {
  int64_t check; /* an index into kiln_abi_model.checks */
  int64_t value; /* the index that was out of range */
} kiln_abi_run_error;

/* The seal of a model file (not part of the loaded image): kiln-compile
 * appends these 32 bytes after the shared object it links, and the runtime
 * checks them before loading the file, so that a file damaged after it was
 * written is refused rather than loaded. A file without a seal (a model of
 * an older Kiln) is checked for its structure only. */
#define KILN_ABI_SEAL_MAGIC "KILNSEAL" /* 8 bytes, no NUL */
#define KILN_ABI_SEAL_VERSION 1u
typedef struct kiln_abi_seal {
  char magic[8];     /* KILN_ABI_SEAL_MAGIC */
  uint64_t size;     /* bytes before the seal: the whole shared object */
  uint64_t checksum; /* kiln_abi_checksum of those bytes */
  uint32_t version;  /* KILN_ABI_SEAL_VERSION */
  uint32_t reserved; /* zero */
} kiln_abi_seal;

/* The seal's checksum: a multiply-xorshift mix (FNV-1a's constants) of the
 * data's 64-bit little-endian words, the last one zero-padded, then of its
 * length. Not cryptographic: it finds damage, not forgery. Kiln's hosts are
 * little-endian (x86-64, AArch64), where a word is read as it lies. */
static inline uint64_t kiln_abi_checksum(const void *data, uint64_t size) {
  const unsigned char *bytes = (const unsigned char *)data;
  uint64_t hash = 0xcbf29ce484222325ull;
  uint64_t i = 0;
  for (; i < size; i += 8) {
    uint64_t word = 0;
    memcpy(&word, bytes + i, size - i < 8 ? (size_t)(size - i) : 8);
    hash = (hash ^ word) * 0x100000001b3ull;
    hash ^= hash >> 29;
  }
  hash = (hash ^ size) * 0x100000001b3ull;
  return hash ^ (hash >> 32);
}

/* Return codes of kiln_abi_run. */
#define KILN_ABI_RUN_OK 0
#define KILN_ABI_RUN_BAD_ARGS 1  /* version mismatch or a NULL pointer */
#define KILN_ABI_RUN_NO_MEMORY 2 /* an internal allocation failed */
/* An index read at run time was out of range (since version 5): the run
 * finished with that index clamped, and its outputs are not to be used;
 * `*args->error` (when not NULL) says which check failed. */
#define KILN_ABI_RUN_INDEX_ERROR 3

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_MODEL_ABI_H */
