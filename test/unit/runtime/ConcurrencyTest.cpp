//===- ConcurrencyTest.cpp - The runtime's thread-safety rules ------------===//
//
// runtime.h's rules, exercised from many threads at once: runs on one handle
// are serialised (each caller gets its own outputs, never another's),
// handles of one model and of several models run in parallel, and
// retain/release, set_num_threads and the describing calls may race with
// runs. tools/test.sh runs these under ThreadSanitizer too (a runtime-only
// build with KILN_ENABLE_TSAN), where any data race fails them.
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string fakeModel(const char *name) {
  return std::string(KILN_FAKE_MODEL_DIR) + "/" + name + ".so";
}

/// One caller of fake_add (out = a + b on 2 x 3 floats) with inputs of its
/// own, which checks that its output is its own sum.
struct Caller {
  explicit Caller(int seed) {
    for (int i = 0; i < 6; ++i) {
      a[i] = float(seed * 100 + i);
      b[i] = float(seed);
    }
  }
  bool run(kiln_model *model) {
    kiln_tensor inputs[2] = {
        KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, a, sizeof(a)),
        KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, b, sizeof(b))};
    kiln_tensor outputs[2] = {
        KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, sum, sizeof(sum)),
        KILN_TENSOR_INIT(KILN_DTYPE_I32, 0, nullptr, &threads,
                         sizeof(threads))};
    kiln_status status = kiln_model_run(model, inputs, 2, outputs, 2);
    bool ok = status == nullptr;
    kiln_status_free(status);
    for (int i = 0; i < 6; ++i)
      ok = ok && sum[i] == a[i] + b[i];
    return ok;
  }
  int64_t shape[2] = {2, 3};
  float a[6], b[6], sum[6] = {};
  int32_t threads = 0;
};

kiln_model *open(const char *name) {
  kiln_model *model = nullptr;
  kiln_status status =
      kiln_model_open(fakeModel(name).c_str(), nullptr, &model);
  EXPECT_EQ(status, nullptr) << kiln_status_message(status);
  kiln_status_free(status);
  return model;
}

TEST(Concurrency, ManyThreadsOneHandle) {
  kiln_model *model = open("fake_add");
  ASSERT_NE(model, nullptr);
  constexpr int kThreads = 8, kRuns = 200;
  std::atomic<int> failures{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&, t] {
      Caller caller(t + 1);
      for (int i = 0; i < kRuns; ++i)
        if (!caller.run(model))
          ++failures;
    });
  // Meanwhile: the thread count changes, the model is described, and
  // references come and go.
  std::thread other([&] {
    for (int i = 0; !done; ++i) {
      kiln_status_free(kiln_model_set_num_threads(model, 1 + i % 4));
      kiln_tensor_info info = KILN_TENSOR_INFO_INIT;
      kiln_status_free(kiln_model_input_info(model, i % 2, &info));
      if (kiln_model_num_inputs(model) != 2 ||
          kiln_model_num_threads(model) < 1)
        ++failures;
      kiln_model_release(kiln_model_retain(model));
    }
  });
  for (std::thread &w : workers)
    w.join();
  done = true;
  other.join();
  EXPECT_EQ(failures.load(), 0);
  kiln_model_release(model);
}

TEST(Concurrency, SeveralHandlesAndModels) {
  // Each thread opens, runs and releases handles of its own, of two models,
  // while the others do the same: the loaded code is shared, nothing else.
  constexpr int kThreads = 6, kRounds = 20;
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&, t] {
      Caller caller(t + 1);
      for (int r = 0; r < kRounds; ++r) {
        kiln_model *add = open("fake_add");
        kiln_model *other = open(r % 2 ? "fake_real_feature" : "fake_v1");
        if (!add || !other || !caller.run(add) ||
            kiln_model_num_outputs(other) == 0)
          ++failures;
        kiln_model_release(other);
        kiln_model_release(add);
      }
    });
  for (std::thread &w : workers)
    w.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(Concurrency, LastReleaseOnAnotherThread) {
  // A handle retained by several threads is freed by whichever releases
  // last, while the others still run on it.
  kiln_model *model = open("fake_add");
  ASSERT_NE(model, nullptr);
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t) {
    kiln_model *mine = kiln_model_retain(model);
    workers.emplace_back([&failures, mine, t] {
      Caller caller(t + 1);
      for (int i = 0; i < 50; ++i)
        if (!caller.run(mine))
          ++failures;
      kiln_model_release(mine);
    });
  }
  kiln_model_release(model);
  for (std::thread &w : workers)
    w.join();
  EXPECT_EQ(failures.load(), 0);
}

} // namespace
