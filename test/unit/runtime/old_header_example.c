/*===- old_header_example.c - A caller built against an older header ------===*
 *
 * The runtime's structs grow at the end, and each caller-allocated one
 * carries its size (include/kiln/runtime.h). This program is what a caller
 * compiled against the header of the sized structs' first version looks
 * like: it declares those structs as that header had them, kiln_tensor
 * without the `device` field added since (the runtime's kMinTensorSize),
 * and calls the runtime's exported functions.
 * The runtime must read only what lies within each struct_size, give the
 * missing fields their defaults, and write nothing past a struct it fills.
 * It runs the fake add model given as argv[1].
 *
 *===----------------------------------------------------------------------===*/

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The declarations of that header, for the types this program uses. */
typedef struct kiln_status_s *kiln_status;
typedef struct kiln_model kiln_model;
typedef struct {
  size_t struct_size;
  int32_t num_threads;
  int32_t device;
} old_model_options;
typedef struct {
  size_t struct_size;
  const char *name;
  int32_t dtype;
  int32_t rank;
  const int64_t *shape;
  size_t byte_size;
} old_tensor_info;
typedef struct {
  size_t struct_size;
  int32_t dtype;
  int32_t rank;
  const int64_t *shape;
  void *data;
  size_t byte_size;
} old_tensor;
void kiln_model_options_init_sized(old_model_options *options,
                                   size_t struct_size);
kiln_status kiln_model_open(const char *path, const old_model_options *options,
                            kiln_model **out_model);
kiln_status kiln_model_input_info(const kiln_model *model, size_t index,
                                  old_tensor_info *out_info);
kiln_status kiln_model_run(kiln_model *model, const old_tensor *inputs,
                           size_t num_inputs, const old_tensor *outputs,
                           size_t num_outputs);
const char *kiln_status_message(kiln_status status);
void kiln_status_free(kiln_status status);
void kiln_model_release(kiln_model *model);

static int failed(kiln_status status, const char *what) {
  if (!status)
    return 0;
  fprintf(stderr, "%s: %s\n", what, kiln_status_message(status));
  kiln_status_free(status);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.so\n", argv[0]);
    return 2;
  }
  /* The options, followed by bytes the runtime must not touch. */
  struct {
    old_model_options options;
    unsigned char canary[32];
  } opened;
  memset(opened.canary, 0xAB, sizeof(opened.canary));
  kiln_model_options_init_sized(&opened.options, sizeof(opened.options));
  opened.options.num_threads = 2;
  for (size_t i = 0; i < sizeof(opened.canary); ++i)
    if (opened.canary[i] != 0xAB) {
      fprintf(stderr, "kiln_model_options_init wrote past the struct\n");
      return 1;
    }
  kiln_model *model = NULL;
  if (failed(kiln_model_open(argv[1], &opened.options, &model), "open"))
    return 1;

  struct {
    old_tensor_info info;
    unsigned char canary[32];
  } described;
  memset(&described, 0xAB, sizeof(described));
  described.info.struct_size = sizeof(described.info);
  if (failed(kiln_model_input_info(model, 0, &described.info), "info"))
    return 1;
  for (size_t i = 0; i < sizeof(described.canary); ++i)
    if (described.canary[i] != 0xAB) {
      fprintf(stderr, "kiln_model_input_info wrote past the struct\n");
      return 1;
    }

  /* The fake model: sum:0 = a + b, all f32 [2,3]; threads = thread count.
   * The arrays' stride is the old, smaller struct. */
  const int64_t shape[2] = {2, 3};
  float a[6] = {0, 1, 2, 3, 4, 5}, b[6] = {1, 1, 1, 1, 1, 1}, sum[6];
  int32_t threads = 0;
  old_tensor inputs[2] = {{sizeof(old_tensor), 1, 2, shape, a, sizeof(a)},
                          {sizeof(old_tensor), 1, 2, shape, b, sizeof(b)}};
  old_tensor outputs[2] = {
      {sizeof(old_tensor), 1, 2, shape, sum, sizeof(sum)},
      {sizeof(old_tensor), 6, 0, NULL, &threads, sizeof(threads)}};
  if (failed(kiln_model_run(model, inputs, 2, outputs, 2), "run")) {
    kiln_model_release(model);
    return 1;
  }
  printf("input 0 '%s' of %zu bytes; sum[5] = %g, threads = %d\n",
         described.info.name, described.info.byte_size, sum[5], threads);
  /* The name belongs to the model: read it before the model goes. */
  int ok = strcmp(described.info.name, "a") == 0 &&
           described.info.byte_size == 24 && sum[5] == 6.0f && threads == 2;
  kiln_model_release(model);
  return ok ? 0 : 1;
}
