/*===- c_api_example.c - The C API from C11 -------------------------------===*
 *
 * The minimal example of docs/runtime.md, kept compiling and passing: it
 * checks that kiln/runtime.h is plain C11 and runs the fake add model given
 * as argv[1].
 *
 *===----------------------------------------------------------------------===*/

#include "kiln/runtime.h"

#include <stdio.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.so\n", argv[0]);
    return 2;
  }
  kiln_model_options options;
  kiln_model_options_init(&options);
  options.num_threads = 2;

  kiln_model *model = NULL;
  kiln_status status = kiln_model_open(argv[1], &options, &model);
  if (status) {
    fprintf(stderr, "error: %s\n", kiln_status_message(status));
    kiln_status_free(status);
    return 1;
  }

  /* The fake model: sum:0 = a + b, all f32 [2,3]; threads = thread count. */
  const int64_t shape[2] = {2, 3};
  float a[6] = {0, 1, 2, 3, 4, 5}, b[6] = {1, 1, 1, 1, 1, 1}, sum[6];
  int32_t threads = 0;
  kiln_tensor inputs[2] = {
      KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, a, sizeof(a)),
      KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, b, sizeof(b))};
  kiln_tensor outputs[2] = {
      KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, sum, sizeof(sum)),
      KILN_TENSOR_INIT(KILN_DTYPE_I32, 0, NULL, &threads, sizeof(threads))};
  status = kiln_model_run(model, inputs, 2, outputs, 2);
  if (status) {
    fprintf(stderr, "error: %s\n", kiln_status_message(status));
    kiln_status_free(status);
    kiln_model_release(model);
    return 1;
  }
  printf("sum[5] = %g, threads = %d\n", sum[5], threads);
  kiln_model_release(model);
  return sum[5] == 6.0f && threads == 2 ? 0 : 1;
}
