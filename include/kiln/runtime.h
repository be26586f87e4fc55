/*===- kiln/runtime.h - The Kiln runtime's C API -----------------*- C -*-===*
 *
 * libkiln_runtime opens a model compiled by Kiln (one shared object exporting
 * the ABI of kiln/model_abi.h), checks that it can run here, and runs it on
 * buffers owned by the caller. Everything the caller passes is validated; a
 * mistake is reported as a status, never undefined behaviour.
 *
 * Conventions:
 *   - Handles are opaque. An object returned through an out-parameter is owned
 *     by the caller and freed by the matching *_release / *_free function.
 *   - A function returning kiln_status returns NULL on success; any other value
 *     is an error the caller owns and must free with kiln_status_free().
 *   - Each function states whether it may be called concurrently.
 *   - Enums and structs only grow at the end.
 *   - A struct the caller allocates (kiln_model_options, kiln_tensor,
 *     kiln_tensor_info, kiln_kernel_info) starts with `struct_size`: the
 *     sizeof of the struct as the caller's code was compiled, which the
 *     KILN_*_INIT macros and kiln_model_options_init set. The runtime reads
 *     and writes only the fields that lie within it, and gives the fields it
 *     cannot see their defaults: a program built against an older header
 *     keeps working with a newer runtime. A struct_size below the first
 *     version's size, or above 4096, is INVALID_ARGUMENT. A field added
 *     later starts at or after the sizeof of the version before it, so that
 *     no caller's padding is read as a field, and its default is 0.
 *   - The shared library's soname (libkiln_runtime.so.N) changes only when a
 *     program built against the previous header could misbehave.
 *
 * Opening a model runs its code (its constructors, then its entry points):
 * open only models you trust. "Never trusting the caller" is about the
 * arguments of this API, not about the model object itself.
 *
 *===----------------------------------------------------------------------===*/

#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/model_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define KILN_RUNTIME_API
#else
#define KILN_RUNTIME_API __attribute__((visibility("default")))
#endif

/*===----------------------------------------------------------------------===*
 * Status
 *===----------------------------------------------------------------------===*/

/* What went wrong. Only grows at the end. (The _t suffix leaves the name
 * kiln_status_code to the accessor below.) */
typedef enum kiln_status_code_e {
  KILN_STATUS_OK = 0,
  KILN_STATUS_INVALID_ARGUMENT = 1, /* the caller passed something wrong */
  KILN_STATUS_NOT_FOUND = 2,        /* a file or a name does not exist */
  KILN_STATUS_ABI_MISMATCH = 3,     /* not a Kiln model, or another version */
  KILN_STATUS_UNSUPPORTED_CPU = 4,  /* wrong architecture or missing feature */
  KILN_STATUS_IO = 5,               /* a file exists but cannot be read */
  KILN_STATUS_OUT_OF_MEMORY = 6,
  KILN_STATUS_INTERNAL = 7,      /* a bug in the runtime or the model */
  KILN_STATUS_INVALID_MODEL = 8, /* a Kiln model with a broken descriptor,
                                    or a file that is not a shared object */
  KILN_STATUS_NO_DEVICE = 9,     /* no GPU to run a GPU model: no NVIDIA
                                    driver, the toolkit's stub driver, no
                                    device, or no image for this GPU */
  KILN_STATUS_DEVICE_ERROR = 10  /* the GPU or its driver failed: a driver
                                    too old, a failed launch (the handle is
                                    then unusable; open the model again) */
} kiln_status_code_t;

/* An error: a code and a message. NULL means OK. Owned by whoever received
 * it; immutable, so it may be read from several threads. */
typedef struct kiln_status_s *kiln_status;

/* The code of `status`; KILN_STATUS_OK for NULL. Thread-safe. */
KILN_RUNTIME_API kiln_status_code_t kiln_status_code(kiln_status status);

/* The message of `status`, NUL-terminated, one line, never NULL ("OK" for
 * NULL). Valid until the status is freed. Thread-safe. */
KILN_RUNTIME_API const char *kiln_status_message(kiln_status status);

/* A static name for `code`, e.g. "INVALID_ARGUMENT". Thread-safe. */
KILN_RUNTIME_API const char *kiln_status_code_name(kiln_status_code_t code);

/* Frees `status`; NULL is accepted. Not concurrently with other uses of the
 * same status. */
KILN_RUNTIME_API void kiln_status_free(kiln_status status);

/*===----------------------------------------------------------------------===*
 * Element types and CPU features
 *===----------------------------------------------------------------------===*/

/* A static short name for `dtype` ("f32", "i64", "bool", "bf16", ...), or NULL
 * if `dtype` is not a kiln_dtype. Thread-safe. */
KILN_RUNTIME_API const char *kiln_dtype_name(int32_t dtype);

/* Bytes per element of `dtype`, or 0 if it is not a kiln_dtype. Thread-safe. */
KILN_RUNTIME_API size_t kiln_dtype_size(int32_t dtype);

/* The CPU features this runtime can check for the architecture of
 * `target_triple` (e.g. "x86_64-unknown-linux-gnu", "aarch64-linux-gnu"), as
 * a static comma-separated list in LLVM's spelling ("avx2,fma,..."). NULL
 * means the machine the runtime runs on. Returns "" for an architecture the
 * runtime does not know. A compiler records in a model's `cpu_features` only
 * names from this list: the runtime refuses any other. Thread-safe. */
KILN_RUNTIME_API const char *
kiln_runtime_known_cpu_features(const char *target_triple);

/* 1 if the running CPU (and the OS) supports `feature`, 0 if not, -1 if the
 * runtime cannot check that name on this architecture. Besides the list
 * above, AArch64 knows "sve-vector-bits=N": the calling thread's SVE vector
 * length is N bits (what `kiln-compile --sve-vector-bits=N` code needs).
 * Thread-safe. */
KILN_RUNTIME_API int kiln_runtime_cpu_supports(const char *feature);

/* The newest model ABI version this runtime loads (KILN_ABI_VERSION at its
 * build); it also loads every version down to KILN_ABI_MIN_VERSION.
 * Thread-safe. */
KILN_RUNTIME_API uint32_t kiln_runtime_abi_version(void);

/*===----------------------------------------------------------------------===*
 * Models
 *===----------------------------------------------------------------------===*/

/* An opened model: the loaded object, its checked descriptor, its workspace
 * and its thread count. */
typedef struct kiln_model kiln_model;

/* Where a model runs, and where a tensor's data lives. Only grows at the end;
 * the GPU target adds its devices. */
typedef enum kiln_device_e {
  KILN_DEVICE_NONE = -2,    /* kiln_model_open: check the model and read its
                               descriptor, without a device (no GPU, no
                               workspace); kiln_model_run then fails. For
                               tools that describe models (kiln-run --info) */
  KILN_DEVICE_DEFAULT = -1, /* kiln_model_open: the device the model was
                               compiled for */
  KILN_DEVICE_CPU = 0,      /* the host: the model's code runs on its CPUs */
  KILN_DEVICE_CUDA = 1      /* an NVIDIA GPU, through the CUDA driver, which
                               the runtime loads when it opens a GPU model:
                               libcuda.so.1, or the file named by the
                               KILN_CUDA_DRIVER environment variable */
} kiln_device;

/* Options of kiln_model_open. Initialise with kiln_model_options_init() and
 * then set fields, so that fields added later get their defaults. */
typedef struct kiln_model_options {
  /* sizeof(kiln_model_options) as the caller was compiled; set by
   * kiln_model_options_init. */
  size_t struct_size;
  /* Threads the model may use; 0 picks the default: the KILN_NUM_THREADS
   * environment variable if it holds an integer in [1, 4096], else the number
   * of online CPUs. */
  int32_t num_threads;
  /* The device to run on, a kiln_device: KILN_DEVICE_DEFAULT (the default)
   * takes the model's; a model refuses a device it was not compiled for. */
  int32_t device;
  /* A GPU model: the CUDA device ordinal (0, the default, is the first). */
  int32_t device_index;
} kiln_model_options;

/* Sets every field of `*options` to its default, and its struct_size to the
 * caller's sizeof(kiln_model_options). Thread-safe. */
#define kiln_model_options_init(options)                                       \
  kiln_model_options_init_sized((options), sizeof(*(options)))
/* What kiln_model_options_init calls: `struct_size` bytes at `options`
 * (fields beyond it are left alone). Thread-safe. */
KILN_RUNTIME_API void kiln_model_options_init_sized(kiln_model_options *options,
                                                    size_t struct_size);

/* Opens the model object at `path` (dlopen with RTLD_NOW | RTLD_LOCAL; a path
 * without '/' is taken relative to the current directory, not searched for)
 * and checks it: both ABI symbols present, the ABI version, the architecture
 * of its target triple, every required CPU feature, and the descriptor
 * itself. Allocates the model's workspace. `options` may be NULL for the
 * defaults. On success stores a new handle in `*out_model` that the caller
 * owns and frees with kiln_model_release(); on failure stores NULL (when
 * `out_model` is not NULL) and returns the error. Thread-safe. */
KILN_RUNTIME_API kiln_status kiln_model_open(const char *path,
                                             const kiln_model_options *options,
                                             kiln_model **out_model);

/* Adds a reference to `model`, which the caller then owns and gives back
 * with kiln_model_release; returns `model` (NULL for NULL). An opened model
 * holds one reference. Thread-safe. */
KILN_RUNTIME_API kiln_model *kiln_model_retain(kiln_model *model);

/* Gives back one reference to `model`; the last one frees it and unloads its
 * object when no other handle uses it. NULL is accepted. Thread-safe, except
 * that the last release must not run concurrently with any other call on
 * `model`; every pointer obtained from `model` then becomes invalid. */
KILN_RUNTIME_API void kiln_model_release(kiln_model *model);

/* The model's descriptor, as checked by kiln_model_open (target triple, CPU,
 * features, producer, ...). Owned by the model; valid until it is released.
 * NULL for a NULL model. Fields added in a later ABI version than the
 * descriptor's abi_version are absent: read the kernel table through
 * kiln_model_kernel_info instead. Thread-safe. */
KILN_RUNTIME_API const kiln_abi_model *
kiln_model_descriptor(const kiln_model *model);

/* Number of inputs / outputs; 0 for a NULL model. Thread-safe. */
KILN_RUNTIME_API size_t kiln_model_num_inputs(const kiln_model *model);
KILN_RUNTIME_API size_t kiln_model_num_outputs(const kiln_model *model);

/* Description of one input or output. The pointers are owned by the model and
 * valid until it is released. Set struct_size before asking
 * (KILN_TENSOR_INFO_INIT): the runtime fills only what lies within it. */
typedef struct kiln_tensor_info {
  size_t struct_size; /* sizeof(kiln_tensor_info) as the caller was compiled */
  const char *name;   /* NUL-terminated, unique among inputs (outputs) */
  int32_t dtype;      /* a kiln_dtype */
  int32_t rank;
  const int64_t *shape; /* `rank` entries: a size >= 0, or -1 for a symbolic
                           dimension, whose size each run chooses */
  size_t byte_size;     /* bytes of the dense row-major tensor; for a tensor
                           with symbolic dimensions, at their largest sizes
                           (a buffer of this size holds any run's) */
  /* `rank` entries: -1 for a static dimension, else the index of the
   * symbolic dimension it is (kiln_model_symbol_info). Tensors that share a
   * symbol share its size in a run. */
  const int32_t *dim_symbols;
} kiln_tensor_info;

/* An initializer for a kiln_tensor_info to be filled:
 *   kiln_tensor_info info = KILN_TENSOR_INFO_INIT; */
#define KILN_TENSOR_INFO_INIT                                                  \
  {sizeof(kiln_tensor_info), NULL, 0, 0, NULL, 0, NULL}

/* Fills `*out_info` for input (output) number `index`. INVALID_ARGUMENT for a
 * NULL pointer or an index out of range. Thread-safe. */
KILN_RUNTIME_API kiln_status kiln_model_input_info(const kiln_model *model,
                                                   size_t index,
                                                   kiln_tensor_info *out_info);
KILN_RUNTIME_API kiln_status kiln_model_output_info(const kiln_model *model,
                                                    size_t index,
                                                    kiln_tensor_info *out_info);

/* Stores in `*out_index` the index of the input (output) named `name`;
 * NOT_FOUND if there is none. Thread-safe. */
KILN_RUNTIME_API kiln_status kiln_model_find_input(const kiln_model *model,
                                                   const char *name,
                                                   size_t *out_index);
KILN_RUNTIME_API kiln_status kiln_model_find_output(const kiln_model *model,
                                                    const char *name,
                                                    size_t *out_index);

/* A symbolic dimension of the model: a size that each run chooses, within
 * [min, max], shared by every dimension that names it. Either the caller
 * chooses it through the inputs (kiln-compile --dynamic-dims), or the run
 * decides it from the data (`data_dependent`: an output of NonZero,
 * Compress, Unique or NonMaxSuppression; only outputs name it, and the run
 * gives its size through kiln_tensor.out_shape). The name is owned by the
 * model. Set struct_size before asking (KILN_SYMBOL_INFO_INIT). */
typedef struct kiln_symbol_info {
  size_t struct_size; /* sizeof(kiln_symbol_info) as the caller was compiled */
  const char *name;   /* the ONNX dim_param, e.g. "batch" */
  int64_t min;        /* >= 1; 0 for a data-dependent one */
  int64_t max;        /* >= min */
  int32_t data_dependent; /* 1: the run decides the size; 0: the inputs */
} kiln_symbol_info;

/* An initializer for a kiln_symbol_info to be filled. */
#define KILN_SYMBOL_INFO_INIT {sizeof(kiln_symbol_info), NULL, 0, 0, 0}

/* Number of symbolic dimensions; 0 for a NULL model and for a model with
 * static shapes only. Thread-safe. */
KILN_RUNTIME_API size_t kiln_model_num_symbols(const kiln_model *model);

/* Fills `*out_info` for symbolic dimension number `index`. INVALID_ARGUMENT
 * for a NULL pointer or an index out of range. Thread-safe. */
KILN_RUNTIME_API kiln_status kiln_model_symbol_info(const kiln_model *model,
                                                    size_t index,
                                                    kiln_symbol_info *out_info);

/* Sets the number of threads later runs use; `num_threads` must be in
 * [1, 4096]. Thread-safe: waits for a run in progress on `model`. */
KILN_RUNTIME_API kiln_status kiln_model_set_num_threads(kiln_model *model,
                                                        int32_t num_threads);

/* The number of threads runs use; 0 for a NULL model. Thread-safe. */
KILN_RUNTIME_API int32_t kiln_model_num_threads(const kiln_model *model);

/* One tensor passed to kiln_model_run, owned by the caller. Dense, row-major
 * (C order), without padding. For an input the runtime and the model only
 * read `data`. Every tensor of one call has the same struct_size, which is
 * also the stride of the array (KILN_TENSOR_INIT sets it). */
typedef struct kiln_tensor {
  size_t struct_size;   /* sizeof(kiln_tensor) as the caller was compiled */
  int32_t dtype;        /* a kiln_dtype; must equal the model's */
  int32_t rank;         /* must equal the model's */
  const int64_t *shape; /* `rank` entries; must equal the model's, but for a
                           symbolic dimension: any size within its bounds,
                           the same in every tensor that shares it */
  void *data;           /* may be NULL only when byte_size is 0 */
  size_t byte_size;     /* must equal the byte size of `shape` exactly */
  int32_t device;       /* where `data` lives, a kiln_device:
                           KILN_DEVICE_CPU (the default), host memory, for
                           any model (a GPU model copies it to and from the
                           device around the run); or, for a GPU model,
                           KILN_DEVICE_CUDA: memory of the model's GPU from
                           cuMemAlloc, used in place once the driver confirms
                           that `byte_size` bytes at `data` lie in one of
                           its allocations (4- and 2-bit types excepted:
                           their codes are checked in host memory) */
  int64_t *out_shape;   /* for an output: NULL, or `rank` entries where a
                           successful run writes the output's shape in this
                           run. Required for an output with a data-dependent
                           dimension (kiln_symbol_info), which the caller
                           passes at its largest size (`shape` and
                           `byte_size` as kiln_model_output_shape gives
                           them): the run writes the output's elements
                           densely, row-major in the shape it returns, at the
                           start of `data`. Ignored for an input. */
} kiln_tensor;

/* An initializer for a kiln_tensor, taking its dtype, rank, shape, data and
 * byte size:
 *   kiln_tensor x = KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, data, bytes); */
/* clang-format off */
#define KILN_TENSOR_INIT(dtype, rank, shape, data, byte_size)                  \
  {sizeof(kiln_tensor), (dtype), (rank), (shape), (data), (byte_size),        \
   KILN_DEVICE_CPU, NULL}
/* clang-format on */

/* The shape of output number `index` in a run on `inputs`, known before the
 * run: checks the inputs' count, dtypes, ranks and shapes as kiln_model_run
 * does (not their data), writes the output's rank dimensions to
 * out_shape[0..capacity) and, when out_byte_size is not NULL, its bytes.
 * INVALID_ARGUMENT when `capacity` is below the output's rank. This is how a
 * caller sizes the output buffers of a model with symbolic dimensions (or
 * it allocates kiln_tensor_info.byte_size, their largest size, once). A
 * data-dependent dimension is given at its largest size, which the run's
 * output has room for; the run's size comes back in kiln_tensor.out_shape.
 * Thread-safe. */
KILN_RUNTIME_API kiln_status kiln_model_output_shape(
    const kiln_model *model, const kiln_tensor *inputs, size_t num_inputs,
    size_t index, int64_t *out_shape, size_t capacity, size_t *out_byte_size);

/* Runs `model` once: reads `num_inputs` inputs and writes `num_outputs`
 * outputs, each in the model's order (see kiln_model_find_input). Before
 * calling the model, checks the counts, every pointer, dtype, rank, dimension
 * and byte size against the descriptor (INVALID_ARGUMENT, with a message such
 * as "input 'x' (#0): expected shape [1,3,224,224], got [1,3,224,225]"),
 * each symbolic dimension against its bounds and against the other tensors
 * that share it (an output's shape must be the one kiln_model_output_shape
 * gives), and that no output buffer overlaps another buffer. After a
 * successful run, each output's `out_shape` (where not NULL) holds its
 * shape in this run: an output with a data-dependent dimension must pass
 * one. On error the outputs are unspecified.
 *
 * Thread-safe: runs on one handle are serialised by a lock inside the handle
 * (they share its workspace). To run in parallel, open the model once per
 * thread; handles share the loaded code but not their workspaces. */
KILN_RUNTIME_API kiln_status kiln_model_run(kiln_model *model,
                                            const kiln_tensor *inputs,
                                            size_t num_inputs,
                                            const kiln_tensor *outputs,
                                            size_t num_outputs);

/*===----------------------------------------------------------------------===*
 * Profiling
 *===----------------------------------------------------------------------===*/

/* One kernel of a model: a loop nest the compiler outlined into a function.
 * The pointers are owned by the model and valid until it is released. Set
 * struct_size before asking (KILN_KERNEL_INFO_INIT). */
typedef struct kiln_kernel_info {
  size_t struct_size; /* sizeof(kiln_kernel_info) as the caller was compiled */
  const char *name;   /* unique in the model, e.g. "kiln_model_main_kernel12" */
  const char *source; /* the ONNX nodes it computes, e.g. "conv1 (Conv)";
                         "" when unknown */
  uint64_t flops;     /* floating-point operations of one call, counted by
                         the compiler from the loops (a fused multiply-add
                         counts 2); 0 when unknown */
} kiln_kernel_info;

/* An initializer for a kiln_kernel_info to be filled. */
#define KILN_KERNEL_INFO_INIT {sizeof(kiln_kernel_info), NULL, NULL, 0}

/* Number of kernels in the model's kernel table; 0 for a NULL model and for
 * a model of ABI version 1, which has no table. Thread-safe. */
KILN_RUNTIME_API size_t kiln_model_num_kernels(const kiln_model *model);

/* Fills `*out_info` for kernel number `index`. INVALID_ARGUMENT for a NULL
 * pointer or an index out of range. Thread-safe. */
KILN_RUNTIME_API kiln_status kiln_model_kernel_info(const kiln_model *model,
                                                    size_t index,
                                                    kiln_kernel_info *out_info);

/* Like kiln_model_run, and adds the wall time of each kernel of this run, in
 * nanoseconds of a monotonic clock, to kernel_ns[i] (the caller zeroes it
 * once and may sum several runs). `num_kernels` must equal
 * kiln_model_num_kernels(model); `kernel_ns` may be NULL only when that is 0
 * (then nothing is timed). Time spent outside kernels (the entry function's
 * own work) is the run's time minus their sum. The timing costs two clock
 * reads per kernel. Thread-safe as kiln_model_run; `kernel_ns` must not be
 * used by another thread during the call. */
KILN_RUNTIME_API kiln_status kiln_model_run_profiled(
    kiln_model *model, const kiln_tensor *inputs, size_t num_inputs,
    const kiln_tensor *outputs, size_t num_outputs, uint64_t *kernel_ns,
    size_t num_kernels);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RUNTIME_H */
