/* peak_fma.c - the fp32 FMA rate this machine reaches, the ceiling that
 * tools/benchmark.py quotes "% of peak" against.
 *
 *   clang -O2 -march=native -mprefer-vector-width=512 -ffp-contract=fast \
 *       -pthread peak_fma.c -o peak
 *   ./peak THREADS ITERATIONS     -> prints GFLOP/s
 *
 * Each thread runs CHAINS independent chains of vector multiply-adds
 * (acc = acc * a + b, contracted to one FMA instruction) on registers only,
 * so nothing but the FMA units limits it: enough chains hide the FMA
 * latency (4 cycles on two pipes needs 8; 12 leave room). One FMA on a
 * vector of LANES floats counts 2 x LANES operations. VEC_BYTES is the
 * widest vector of the target: 64 (AVX-512), or 32 / 16 elsewhere.
 * Without -mprefer-vector-width=512, clang's tuning for Intel's AVX-512
 * server cores (Skylake-SP to Emerald Rapids) splits each 64-byte vector
 * into two 32-byte ones: 104 GFLOP/s a core on Emerald Rapids against 198.
 */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef VEC_BYTES
#define VEC_BYTES 64
#endif
#define LANES (VEC_BYTES / 4)
#define CHAINS 12

typedef float vec __attribute__((vector_size(VEC_BYTES)));

static long iterations;

static void *work(void *result) {
  vec acc[CHAINS], a, b;
  for (int i = 0; i < LANES; ++i) {
    a[i] = 1.0f - 1e-7f;
    b[i] = 1e-7f;
  }
  for (int c = 0; c < CHAINS; ++c)
    acc[c] = a * (float)c;
  for (long i = 0; i < iterations; ++i)
    for (int c = 0; c < CHAINS; ++c)
      acc[c] = acc[c] * a + b;
  /* Use every chain, so that none is optimised away. */
  float sum = 0;
  for (int c = 0; c < CHAINS; ++c)
    for (int i = 0; i < LANES; ++i)
      sum += acc[c][i];
  *(float *)result = sum;
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s THREADS ITERATIONS\n", argv[0]);
    return 2;
  }
  int threads = atoi(argv[1]);
  iterations = atol(argv[2]);
  if (threads < 1 || threads > 1024 || iterations < 1) {
    fprintf(stderr, "peak_fma: bad arguments\n");
    return 2;
  }
  pthread_t *ids = calloc((size_t)threads, sizeof(pthread_t));
  float *sums = calloc((size_t)threads, sizeof(float));
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (int t = 0; t < threads; ++t)
    pthread_create(&ids[t], NULL, work, &sums[t]);
  for (int t = 0; t < threads; ++t)
    pthread_join(ids[t], NULL);
  clock_gettime(CLOCK_MONOTONIC, &end);
  double seconds = (double)(end.tv_sec - start.tv_sec) +
                   1e-9 * (end.tv_nsec - start.tv_nsec);
  double flops = 2.0 * LANES * CHAINS * (double)iterations * threads;
  printf("%.1f\n", flops / seconds / 1e9);
  /* Keeps the sums alive; never true for these inputs. */
  if (sums[0] < -1.0f)
    printf("%f\n", sums[0]);
  free(ids);
  free(sums);
  return 0;
}
