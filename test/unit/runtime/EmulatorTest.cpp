//===- EmulatorTest.cpp - The CUDA driver emulator's threads and barriers -===//
//
// libkiln_cuda_emulator runs each thread of a block as a coroutine that
// gives way at every barrier, and resumes the threads between barriers in
// the order KILN_EMULATOR_ORDER names. These tests launch hand-written
// kernel twins through the driver entry points the runtime uses: a block
// reversing an array through shared memory is right with its barrier, and
// wrong without it (the race a GPU could hide); a barrier that only some
// threads reach fails the launch; shared memory starts each block as NaN.
//
//===----------------------------------------------------------------------===//

#include "kiln/model_abi.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" {
int cuModuleLoadDataEx(void **, const void *, unsigned, int *, void **);
int cuModuleGetFunction(void **, void *, const char *);
int cuModuleUnload(void *);
int kiln_emulator_attach(void *, const void *, int64_t);
int cuLaunchKernel(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
                   unsigned, unsigned, void *, void **, void **);
}

namespace {

constexpr int kThreads = 64;

float *bufferParam(void *const *params, int i) {
  return *static_cast<float *const *>(params[i]);
}

void barrier(const int64_t *ids) {
  reinterpret_cast<void (*)()>(static_cast<uintptr_t>(ids[7]))();
}

/// y[block * 64 + 63 - t] = x[block * 64 + t], through shared memory.
template <bool WithBarrier>
void reverse(void *const *params, const int64_t *ids) {
  float *x = bufferParam(params, 0), *y = bufferParam(params, 1);
  auto *shared = reinterpret_cast<float *>(static_cast<uintptr_t>(ids[6]));
  int64_t base = ids[0] * kThreads, t = ids[3];
  shared[t] = x[base + t];
  if (WithBarrier)
    barrier(ids);
  y[base + t] = shared[kThreads - 1 - t];
}

/// Only the even threads reach the barrier.
void divergent(void *const *, const int64_t *ids) {
  if (ids[3] % 2 == 0)
    barrier(ids);
}

/// Reads shared memory that no thread wrote.
void unwritten(void *const *params, const int64_t *ids) {
  auto *shared = reinterpret_cast<float *>(static_cast<uintptr_t>(ids[6]));
  bufferParam(params, 1)[ids[0] * kThreads + ids[3]] = shared[ids[3]];
}

const char kImage[] = ".version 8.0\n.target sm_80\n"
                      ".entry reverse(\n.entry racy(\n.entry divergent(\n"
                      ".entry unwritten(\n";

class Emulator : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(cuModuleLoadDataEx(&module, kImage, 0, nullptr, nullptr), 0);
    static const kiln_abi_emulated_kernel table[] = {
        {"reverse", &reverse<true>},
        {"racy", &reverse<false>},
        {"divergent", &divergent},
        {"unwritten", &unwritten}};
    ASSERT_EQ(kiln_emulator_attach(module, table, 4), 0);
    for (int i = 0; i < 2 * kThreads; ++i)
      x.push_back(float(i));
    y.assign(2 * kThreads, 0.0f);
  }
  void TearDown() override { cuModuleUnload(module); }

  /// Launches `name` on 2 blocks of 64 threads in `order`; its result.
  int launch(const char *name, const char *order) {
    setenv("KILN_EMULATOR_ORDER", order, 1);
    void *function = nullptr;
    EXPECT_EQ(cuModuleGetFunction(&function, module, name), 0);
    float *xp = x.data(), *yp = y.data();
    void *params[] = {&xp, &yp};
    int result = cuLaunchKernel(function, 2, 1, 1, kThreads, 1, 1, 0, nullptr,
                                params, nullptr);
    unsetenv("KILN_EMULATOR_ORDER");
    return result;
  }

  bool reversed() const {
    for (int b = 0; b < 2; ++b)
      for (int t = 0; t < kThreads; ++t)
        if (y[b * kThreads + kThreads - 1 - t] != x[b * kThreads + t])
          return false;
    return true;
  }

  void *module = nullptr;
  std::vector<float> x, y;
};

TEST_F(Emulator, BarrierOrdersSharedMemoryInEveryOrder) {
  for (const char *order : {"forward", "reverse", "shuffle"}) {
    y.assign(y.size(), 0.0f);
    ASSERT_EQ(launch("reverse", order), 0) << order;
    EXPECT_TRUE(reversed()) << order;
  }
}

TEST_F(Emulator, MissingBarrierShows) {
  // Forward order: thread 0 reads element 63 before thread 63 stored it;
  // reverse order: thread 63 reads element 0 first. Either way some
  // element is wrong.
  for (const char *order : {"forward", "reverse"}) {
    y.assign(y.size(), 0.0f);
    ASSERT_EQ(launch("racy", order), 0) << order;
    EXPECT_FALSE(reversed()) << order;
  }
}

TEST_F(Emulator, BarrierSomeThreadsSkipFailsTheLaunch) {
  EXPECT_EQ(launch("divergent", "forward"), 719); // CUDA_ERROR_LAUNCH_FAILED
}

TEST_F(Emulator, SharedMemoryStartsAsNaN) {
  ASSERT_EQ(launch("unwritten", "forward"), 0);
  for (float v : y)
    EXPECT_TRUE(std::isnan(v));
}

} // namespace
