//===- ModelTest.cpp - libkiln_runtime on fake models ---------------------===//

#include "kiln/runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string fakeModel(const char *name) {
  return std::string(KILN_FAKE_MODEL_DIR) + "/" + name + ".so";
}

// Owns a status and exposes it to gtest.
struct Status {
  kiln_status status;
  Status(kiln_status s) : status(s) {}
  ~Status() { kiln_status_free(status); }
  Status(const Status &) = delete;
  kiln_status_code_t code() const { return kiln_status_code(status); }
  std::string message() const { return kiln_status_message(status); }
};

// Opens a fake model and expects it to fail with `code`; returns the message.
std::string openFails(const char *name, kiln_status_code_t code) {
  kiln_model *model = reinterpret_cast<kiln_model *>(0x1);
  Status status = kiln_model_open(fakeModel(name).c_str(), nullptr, &model);
  EXPECT_EQ(status.code(), code) << status.message();
  EXPECT_EQ(model, nullptr);
  kiln_model_release(model);
  return status.message();
}

class AddModel : public ::testing::Test {
protected:
  void SetUp() override {
    Status status =
        kiln_model_open(fakeModel("fake_add").c_str(), nullptr, &model);
    ASSERT_EQ(status.status, nullptr) << status.message();
    for (int i = 0; i < 6; ++i) {
      a[i] = float(i);
      b[i] = 10.0f * float(i);
    }
    inputs[0] = KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, a, sizeof(a));
    inputs[1] = KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, b, sizeof(b));
    outputs[0] = KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, sum, sizeof(sum));
    outputs[1] =
        KILN_TENSOR_INIT(KILN_DTYPE_I32, 0, nullptr, &threads, sizeof(threads));
  }
  void TearDown() override { kiln_model_release(model); }

  Status run() { return kiln_model_run(model, inputs, 2, outputs, 2); }

  kiln_model *model = nullptr;
  int64_t shape[2] = {2, 3};
  float a[6], b[6], sum[6] = {};
  int32_t threads = 0;
  kiln_tensor inputs[2];
  kiln_tensor outputs[2];
};

TEST_F(AddModel, DescribesInputsAndOutputs) {
  ASSERT_EQ(kiln_model_num_inputs(model), 2u);
  ASSERT_EQ(kiln_model_num_outputs(model), 2u);
  kiln_tensor_info info = KILN_TENSOR_INFO_INIT;
  ASSERT_EQ(Status(kiln_model_input_info(model, 1, &info)).code(),
            KILN_STATUS_OK);
  EXPECT_STREQ(info.name, "b");
  EXPECT_EQ(info.dtype, KILN_DTYPE_F32);
  ASSERT_EQ(info.rank, 2);
  EXPECT_EQ(info.shape[0], 2);
  EXPECT_EQ(info.shape[1], 3);
  EXPECT_EQ(info.byte_size, 24u);
  ASSERT_EQ(Status(kiln_model_output_info(model, 1, &info)).code(),
            KILN_STATUS_OK);
  EXPECT_STREQ(info.name, "threads");
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.byte_size, 4u);

  Status outOfRange = kiln_model_output_info(model, 2, &info);
  EXPECT_EQ(outOfRange.code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(outOfRange.message().find("out of range"), std::string::npos);

  size_t index = 99;
  EXPECT_EQ(Status(kiln_model_find_output(model, "sum:0", &index)).code(),
            KILN_STATUS_OK);
  EXPECT_EQ(index, 0u);
  Status missing = kiln_model_find_input(model, "c", &index);
  EXPECT_EQ(missing.code(), KILN_STATUS_NOT_FOUND);
  EXPECT_EQ(missing.message(), "the model has no input named 'c'");

  const kiln_abi_model *descriptor = kiln_model_descriptor(model);
  ASSERT_NE(descriptor, nullptr);
  EXPECT_STREQ(descriptor->producer, "kiln runtime tests");
}

TEST_F(AddModel, RunsAndReusesTheModel) {
  for (int repeat = 0; repeat < 3; ++repeat) {
    Status status = run();
    ASSERT_EQ(status.status, nullptr) << status.message();
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(sum[i], 11.0f * float(i));
  }
}

TEST_F(AddModel, DescribesKernels) {
  ASSERT_EQ(kiln_model_num_kernels(model), 2u);
  kiln_kernel_info info = KILN_KERNEL_INFO_INIT;
  ASSERT_EQ(Status(kiln_model_kernel_info(model, 0, &info)).code(),
            KILN_STATUS_OK);
  EXPECT_STREQ(info.name, "add");
  EXPECT_STREQ(info.source, "sum (Add)");
  EXPECT_EQ(info.flops, 6u);
  Status outOfRange = kiln_model_kernel_info(model, 2, &info);
  EXPECT_EQ(outOfRange.code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(outOfRange.message(),
            "kernel index 2 out of range: the model has 2 kernels");
  EXPECT_EQ(kiln_model_num_kernels(nullptr), 0u);
}

// Two clock reads around every kernel: each counter grows run after run,
// and the model still computes its outputs.
TEST_F(AddModel, ProfiledRunTimesEveryKernel) {
  uint64_t kernelNs[2] = {0, 0};
  uint64_t previous[2] = {0, 0};
  for (int repeat = 0; repeat < 3; ++repeat) {
    std::fill(std::begin(sum), std::end(sum), 0.0f);
    Status status =
        kiln_model_run_profiled(model, inputs, 2, outputs, 2, kernelNs, 2);
    ASSERT_EQ(status.status, nullptr) << status.message();
    EXPECT_EQ(sum[5], 55.0f);
    for (int k = 0; k < 2; ++k) {
      EXPECT_GT(kernelNs[k], previous[k]) << "kernel " << k;
      previous[k] = kernelNs[k];
    }
  }
  // A plain run passes no hooks.
  ASSERT_EQ(run().status, nullptr);
  EXPECT_EQ(kernelNs[0], previous[0]);

  Status wrongCount =
      kiln_model_run_profiled(model, inputs, 2, outputs, 2, kernelNs, 1);
  EXPECT_EQ(wrongCount.code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(wrongCount.message(), "kiln_model_run_profiled: num_kernels is 1, "
                                  "but the model has 2 kernels");
  Status nullArray =
      kiln_model_run_profiled(model, inputs, 2, outputs, 2, nullptr, 2);
  EXPECT_EQ(nullArray.code(), KILN_STATUS_INVALID_ARGUMENT);
}

// A model of ABI version 1 has no kernel table: it still opens and runs, and
// a profiled run with no counters is a plain run.
TEST(ModelOpen, LoadsAbiVersion1) {
  kiln_model *model = nullptr;
  ASSERT_EQ(
      Status(kiln_model_open(fakeModel("fake_v1").c_str(), nullptr, &model))
          .code(),
      KILN_STATUS_OK);
  EXPECT_EQ(kiln_model_descriptor(model)->abi_version, 1u);
  EXPECT_EQ(kiln_model_num_kernels(model), 0u);
  int64_t shape[2] = {2, 3};
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {}, sum[6] = {};
  int32_t threads = 0;
  kiln_tensor inputs[2] = {
      KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, a, sizeof(a)),
      KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, b, sizeof(b))};
  kiln_tensor outputs[2] = {
      KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, sum, sizeof(sum)),
      KILN_TENSOR_INIT(KILN_DTYPE_I32, 0, nullptr, &threads, 4)};
  Status status =
      kiln_model_run_profiled(model, inputs, 2, outputs, 2, nullptr, 0);
  EXPECT_EQ(status.status, nullptr) << status.message();
  EXPECT_EQ(sum[5], 6.0f);
  kiln_model_release(model);
}

TEST_F(AddModel, SetsNumThreads) {
  EXPECT_EQ(Status(kiln_model_set_num_threads(model, 3)).code(),
            KILN_STATUS_OK);
  EXPECT_EQ(kiln_model_num_threads(model), 3);
  ASSERT_EQ(run().code(), KILN_STATUS_OK);
  EXPECT_EQ(threads, 3);
  Status zero = kiln_model_set_num_threads(model, 0);
  EXPECT_EQ(zero.code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(zero.message(), "number of threads must be 1 to 4096, got 0");
  EXPECT_EQ(Status(kiln_model_set_num_threads(model, -2)).code(),
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Status(kiln_model_set_num_threads(nullptr, 2)).code(),
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_model_num_threads(model), 3);
}

TEST_F(AddModel, RejectsWrongCounts) {
  Status fewer = kiln_model_run(model, inputs, 1, outputs, 2);
  EXPECT_EQ(fewer.code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(fewer.message(), "expected 2 inputs, got 1");
  Status more = kiln_model_run(model, inputs, 2, outputs, 3);
  EXPECT_EQ(more.message(), "expected 2 outputs, got 3");
}

TEST_F(AddModel, RejectsNullPointers) {
  EXPECT_EQ(Status(kiln_model_run(nullptr, inputs, 2, outputs, 2)).code(),
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Status(kiln_model_run(model, nullptr, 2, outputs, 2)).message(),
            "kiln_model_run: inputs array is NULL");
  EXPECT_EQ(Status(kiln_model_run(model, inputs, 2, nullptr, 2)).message(),
            "kiln_model_run: outputs array is NULL");
  inputs[1].data = nullptr;
  EXPECT_EQ(run().message(), "input 'b' (#1): data is NULL");
  inputs[1].data = b;
  inputs[0].shape = nullptr;
  EXPECT_EQ(run().message(), "input 'a' (#0): shape is NULL");
}

TEST_F(AddModel, RejectsWrongDtype) {
  inputs[1].dtype = KILN_DTYPE_I32;
  Status status = run();
  EXPECT_EQ(status.code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(status.message(), "input 'b' (#1): expected dtype f32, got i32");
  inputs[1].dtype = 77;
  EXPECT_EQ(run().message(),
            "input 'b' (#1): expected dtype f32, got unknown (77)");
}

TEST_F(AddModel, RejectsWrongShapeAndRank) {
  int64_t wrong[2] = {2, 4};
  inputs[0].shape = wrong;
  EXPECT_EQ(run().message(), "input 'a' (#0): expected shape [2,3], got [2,4]");
  int64_t rank3[3] = {2, 3, 1};
  outputs[0].shape = rank3;
  outputs[0].rank = 3;
  inputs[0].shape = shape;
  EXPECT_EQ(run().message(),
            "output 'sum:0' (#0): expected shape [2,3], got [2,3,1]");
  outputs[0].rank = -1;
  EXPECT_EQ(run().message(), "output 'sum:0' (#0): negative rank");
  outputs[0].rank = 1000000;
  EXPECT_EQ(run().message(),
            "output 'sum:0' (#0): expected shape [2,3], got rank 1000000");
}

TEST_F(AddModel, RejectsWrongByteSize) {
  inputs[0].byte_size = 20;
  EXPECT_EQ(run().message(), "input 'a' (#0): expected 24 bytes, got 20");
  inputs[0].byte_size = 28;
  EXPECT_EQ(run().message(), "input 'a' (#0): expected 24 bytes, got 28");
}

TEST_F(AddModel, RejectsOverlappingOutputs) {
  outputs[1].data = reinterpret_cast<char *>(sum) + 20;
  EXPECT_EQ(run().message(),
            "output 'threads' (#1) overlaps output 'sum:0' (#0)");
  outputs[1].data = &threads;
  outputs[0].data = a;
  EXPECT_EQ(run().message(), "output 'sum:0' (#0) overlaps input 'a' (#0)");
}

TEST_F(AddModel, StructsCarryTheirSize) {
  // A struct_size outside [first version's size, 4096] is refused.
  kiln_tensor_info info = KILN_TENSOR_INFO_INIT;
  info.struct_size = 8;
  Status small = kiln_model_input_info(model, 0, &info);
  EXPECT_EQ(small.code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(small.message().find("kiln_model_input_info: out_info: "
                                 "struct_size is 8"),
            std::string::npos)
      << small.message();
  kiln_kernel_info kernel = KILN_KERNEL_INFO_INIT;
  kernel.struct_size = 1 << 20;
  EXPECT_EQ(Status(kiln_model_kernel_info(model, 0, &kernel)).code(),
            KILN_STATUS_INVALID_ARGUMENT);
  inputs[0].struct_size = 0;
  Status zero = run();
  EXPECT_EQ(zero.code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(zero.message().find("input #0: struct_size is 0"),
            std::string::npos)
      << zero.message();

  // Every tensor of a call has the same size: it is the array's stride.
  inputs[0].struct_size = sizeof(kiln_tensor);
  outputs[1].struct_size = sizeof(kiln_tensor) - sizeof(int32_t);
  Status mixed = run();
  EXPECT_EQ(mixed.code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(mixed.message().find("output #1: struct_size is"),
            std::string::npos)
      << mixed.message();
  outputs[1].struct_size = sizeof(kiln_tensor);

  // A larger struct (a caller with a newer header): the fields this runtime
  // knows are read at their offsets, the rest ignored.
  struct Newer {
    kiln_tensor tensor;
    int64_t added;
  };
  Newer newer[2] = {{inputs[0], 7}, {inputs[1], 7}};
  newer[0].tensor.struct_size = newer[1].tensor.struct_size = sizeof(Newer);
  Newer newerOutputs[2] = {{outputs[0], 7}, {outputs[1], 7}};
  newerOutputs[0].tensor.struct_size = sizeof(Newer);
  newerOutputs[1].tensor.struct_size = sizeof(Newer);
  Status status =
      kiln_model_run(model, &newer[0].tensor, 2, &newerOutputs[0].tensor, 2);
  ASSERT_EQ(status.status, nullptr) << status.message();
  EXPECT_EQ(sum[5], 55.0f);
}

TEST_F(AddModel, RefusesAnotherDevice) {
  inputs[1].device = 3;
  Status status = run();
  EXPECT_EQ(status.code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(status.message(),
            "input #1: device 3, but a tensor's data is in host memory "
            "(KILN_DEVICE_CPU) or, for a GPU model, in its GPU's memory "
            "(KILN_DEVICE_CUDA)");
  inputs[1].device = KILN_DEVICE_CUDA;
  Status cuda = run();
  EXPECT_EQ(cuda.code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(cuda.message(), "input #1: device KILN_DEVICE_CUDA, but the model "
                            "runs on the CPU");
  kiln_model_options options;
  kiln_model_options_init(&options);
  EXPECT_EQ(options.struct_size, sizeof(options));
  EXPECT_EQ(options.device, KILN_DEVICE_DEFAULT);
  EXPECT_EQ(options.device_index, 0);
  // A CPU model on the GPU.
  options.device = KILN_DEVICE_CUDA;
  kiln_model *other = nullptr;
  Status open =
      kiln_model_open(fakeModel("fake_add").c_str(), &options, &other);
  EXPECT_EQ(open.code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(open.message().find("was compiled for CPU, not for the GPU"),
            std::string::npos)
      << open.message();
  EXPECT_EQ(other, nullptr);
  // Not a device at all.
  options.device = 7;
  Status bad = kiln_model_open(fakeModel("fake_add").c_str(), &options, &other);
  EXPECT_EQ(bad.code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(bad.message().find("device 7 is not a kiln_device"),
            std::string::npos)
      << bad.message();
  // Explicitly the CPU, as the model is.
  options.device = KILN_DEVICE_CPU;
  Status cpu = kiln_model_open(fakeModel("fake_add").c_str(), &options, &other);
  EXPECT_EQ(cpu.code(), KILN_STATUS_OK) << cpu.message();
  kiln_model_release(other);
}

TEST_F(AddModel, RetainedModelOutlivesOneRelease) {
  EXPECT_EQ(kiln_model_retain(nullptr), nullptr);
  kiln_model *second = kiln_model_retain(model);
  EXPECT_EQ(second, model);
  kiln_model_release(model); // the first reference
  model = second;            // TearDown releases the last one
  Status status = run();
  ASSERT_EQ(status.status, nullptr) << status.message();
  EXPECT_EQ(sum[5], 55.0f);
}

TEST_F(AddModel, SerialisesConcurrentRuns) {
  std::vector<std::thread> workers;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t)
    workers.emplace_back([&, t] {
      float localSum[6];
      int32_t localThreads;
      kiln_tensor outs[2] = {KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape,
                                              localSum, sizeof(localSum)),
                             KILN_TENSOR_INIT(KILN_DTYPE_I32, 0, nullptr,
                                              &localThreads,
                                              sizeof(localThreads))};
      for (int i = 0; i < 50; ++i) {
        Status status = kiln_model_run(model, inputs, 2, outs, 2);
        if (status.status || localSum[5] != 55.0f)
          ++failures[t];
      }
    });
  for (std::thread &w : workers)
    w.join();
  for (int f : failures)
    EXPECT_EQ(f, 0);
}

TEST(ModelOpen, DefaultThreadsFromEnvironment) {
  setenv("KILN_NUM_THREADS", "5", 1);
  kiln_model *model = nullptr;
  ASSERT_EQ(
      Status(kiln_model_open(fakeModel("fake_add").c_str(), nullptr, &model))
          .code(),
      KILN_STATUS_OK);
  EXPECT_EQ(kiln_model_num_threads(model), 5);
  kiln_model_release(model);

  // An invalid value is ignored: the default is the number of online CPUs.
  setenv("KILN_NUM_THREADS", "0x", 1);
  ASSERT_EQ(
      Status(kiln_model_open(fakeModel("fake_add").c_str(), nullptr, &model))
          .code(),
      KILN_STATUS_OK);
  EXPECT_GE(kiln_model_num_threads(model), 1);
  EXPECT_EQ(kiln_model_num_threads(model),
            std::max(1, int(std::thread::hardware_concurrency())));
  kiln_model_release(model);

  // Options win over the environment.
  setenv("KILN_NUM_THREADS", "5", 1);
  kiln_model_options options;
  kiln_model_options_init(&options);
  EXPECT_EQ(options.num_threads, 0);
  options.num_threads = 2;
  ASSERT_EQ(
      Status(kiln_model_open(fakeModel("fake_add").c_str(), &options, &model))
          .code(),
      KILN_STATUS_OK);
  EXPECT_EQ(kiln_model_num_threads(model), 2);
  kiln_model_release(model);
  unsetenv("KILN_NUM_THREADS");

  options.num_threads = -1;
  Status bad = kiln_model_open(fakeModel("fake_add").c_str(), &options, &model);
  EXPECT_EQ(bad.code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(model, nullptr);
}

TEST(ModelOpen, RejectsBadArguments) {
  kiln_model *model = nullptr;
  EXPECT_EQ(Status(kiln_model_open(nullptr, nullptr, &model)).code(),
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Status(kiln_model_open("", nullptr, &model)).code(),
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(
      Status(kiln_model_open(fakeModel("fake_add").c_str(), nullptr, nullptr))
          .code(),
      KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(
      Status(kiln_model_open(KILN_FAKE_MODEL_DIR, nullptr, &model)).message(),
      std::string("cannot open model '") + KILN_FAKE_MODEL_DIR +
          "': not a regular file");
  // NULL handles are accepted where documented.
  kiln_model_release(nullptr);
  EXPECT_EQ(kiln_model_num_inputs(nullptr), 0u);
  EXPECT_EQ(kiln_model_num_threads(nullptr), 0);
  EXPECT_EQ(kiln_model_descriptor(nullptr), nullptr);
}

TEST(ModelOpen, MissingFile) {
  std::string message = openFails("does_not_exist", KILN_STATUS_NOT_FOUND);
  EXPECT_EQ(message, "cannot open model '" + fakeModel("does_not_exist") +
                         "': No such file or directory");
}

TEST(ModelOpen, FileThatIsNotASharedObject) {
  std::string path = fakeModel("not_a_model");
  FILE *file = std::fopen(path.c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fputs("this is not an ELF file\n", file);
  std::fclose(file);
  std::string message = openFails("not_a_model", KILN_STATUS_INVALID_MODEL);
  EXPECT_EQ(message.rfind("cannot load model '" + path + "': ", 0), 0u)
      << message;
}

TEST(ModelOpen, SharedObjectWithoutTheAbi) {
  std::string message = openFails("fake_no_run", KILN_STATUS_ABI_MISMATCH);
  EXPECT_NE(
      message.find("is not a Kiln model: it does not export kiln_abi_run"),
      std::string::npos)
      << message;
}

TEST(ModelOpen, AbiVersionMismatch) {
  EXPECT_EQ(openFails("fake_bad_version", KILN_STATUS_ABI_MISMATCH),
            "model ABI version 999, but this runtime loads versions 1 to " +
                std::to_string(KILN_ABI_VERSION) +
                "; recompile the model with a matching Kiln");
}

TEST(ModelOpen, UnknownCpuFeature) {
  std::string message =
      openFails("fake_unknown_feature", KILN_STATUS_UNSUPPORTED_CPU);
  EXPECT_EQ(message.rfind("model requires CPU feature 'nonexistentfeature', "
                          "which this runtime cannot check",
                          0),
            0u)
      << message;
}

TEST(ModelOpen, CpuFeatureCheckedAgainstTheHost) {
  kiln_model *model = nullptr;
  Status real =
      kiln_model_open(fakeModel("fake_real_feature").c_str(), nullptr, &model);
  EXPECT_EQ(real.status, nullptr) << real.message();
  kiln_model_release(model);
  model = nullptr;

  Status fp16 =
      kiln_model_open(fakeModel("fake_avx512fp16").c_str(), nullptr, &model);
#if defined(__x86_64__)
  if (kiln_runtime_cpu_supports("avx512fp16") == 1) {
    EXPECT_EQ(fp16.status, nullptr) << fp16.message();
  } else {
    EXPECT_EQ(fp16.code(), KILN_STATUS_UNSUPPORTED_CPU);
    EXPECT_EQ(fp16.message(), "model requires CPU feature 'avx512fp16', which "
                              "this CPU (or OS) does not support");
  }
#else
  EXPECT_EQ(fp16.code(), KILN_STATUS_UNSUPPORTED_CPU);
#endif
  kiln_model_release(model);
}

TEST(ModelOpen, OtherArchitecture) {
  std::string message =
      openFails("fake_other_arch", KILN_STATUS_UNSUPPORTED_CPU);
  EXPECT_NE(message.find("but this machine is"), std::string::npos) << message;
}

TEST(ModelOpen, BrokenDescriptors) {
  EXPECT_EQ(openFails("fake_negative_dim", KILN_STATUS_INVALID_MODEL),
            "invalid model: input 'b' (#1) has negative dimension -3 in shape "
            "[2,-3]");
  EXPECT_EQ(openFails("fake_null_name", KILN_STATUS_INVALID_MODEL),
            "invalid model: output #0 has no name");
  std::string huge = openFails("fake_huge_shape", KILN_STATUS_INVALID_MODEL);
  EXPECT_NE(huge.find("is too large"), std::string::npos) << huge;
  EXPECT_EQ(openFails("fake_bad_rank", KILN_STATUS_INVALID_MODEL),
            "invalid model: input 'b' (#1) has rank -1, expected 0 to 64");
  EXPECT_EQ(openFails("fake_duplicate_name", KILN_STATUS_INVALID_MODEL),
            "invalid model: inputs #0 and #1 are both named 'a'");
  EXPECT_EQ(openFails("fake_bad_align", KILN_STATUS_INVALID_MODEL),
            "invalid model: workspace alignment 48 is not a power of 2 up to "
            "1048576");
  EXPECT_EQ(openFails("fake_null_kernel", KILN_STATUS_INVALID_MODEL),
            "invalid model: kernel #0 has no name or source, or one longer "
            "than 4095 bytes");
}

// A symbolic batch (ABI version 4): described as -1 with its symbol, sized
// at its largest; any batch within the bounds runs, the same in every
// tensor; outputs' shapes are known before the run.
TEST(SymbolicModel, DescribesAndRunsAnyBatch) {
  kiln_model *model = nullptr;
  Status opened =
      kiln_model_open(fakeModel("fake_symbolic").c_str(), nullptr, &model);
  ASSERT_EQ(opened.status, nullptr) << opened.message();
  ASSERT_EQ(kiln_model_num_symbols(model), 1u);
  kiln_symbol_info symbol = KILN_SYMBOL_INFO_INIT;
  ASSERT_EQ(Status(kiln_model_symbol_info(model, 0, &symbol)).code(),
            KILN_STATUS_OK);
  EXPECT_STREQ(symbol.name, "batch");
  EXPECT_EQ(symbol.min, 1);
  EXPECT_EQ(symbol.max, 4);
  EXPECT_EQ(Status(kiln_model_symbol_info(model, 1, &symbol)).code(),
            KILN_STATUS_INVALID_ARGUMENT);
  kiln_tensor_info info = KILN_TENSOR_INFO_INIT;
  ASSERT_EQ(Status(kiln_model_input_info(model, 0, &info)).code(),
            KILN_STATUS_OK);
  EXPECT_EQ(info.shape[0], -1);
  EXPECT_EQ(info.shape[1], 3);
  EXPECT_EQ(info.dim_symbols[0], 0);
  EXPECT_EQ(info.dim_symbols[1], -1);
  EXPECT_EQ(info.byte_size, 4u * 3u * 4u); // at the largest batch

  float a[12], b[12], sum[12];
  for (int i = 0; i < 12; ++i)
    a[i] = float(i), b[i] = 100.0f, sum[i] = -1.0f;
  int32_t threads = 0;
  for (int64_t batch : {1, 3, 4}) {
    int64_t shape[2] = {batch, 3};
    size_t bytes = size_t(batch) * 12;
    kiln_tensor inputs[2] = {
        KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, a, bytes),
        KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, b, bytes)};
    int64_t outShape[2] = {0, 0};
    size_t outBytes = 0;
    ASSERT_EQ(Status(kiln_model_output_shape(model, inputs, 2, 0, outShape, 2,
                                             &outBytes))
                  .code(),
              KILN_STATUS_OK);
    EXPECT_EQ(outShape[0], batch);
    EXPECT_EQ(outShape[1], 3);
    EXPECT_EQ(outBytes, bytes);
    kiln_tensor outputs[2] = {
        KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, sum, bytes),
        KILN_TENSOR_INIT(KILN_DTYPE_I32, 0, nullptr, &threads, 4)};
    Status status = kiln_model_run(model, inputs, 2, outputs, 2);
    ASSERT_EQ(status.status, nullptr) << status.message();
    for (int i = 0; i < 3 * batch; ++i)
      EXPECT_EQ(sum[i], float(i) + 100.0f);
  }

  // Out of bounds, disagreeing, and an output of another batch.
  int64_t five[2] = {5, 3}, two[2] = {2, 3}, one[2] = {1, 3};
  kiln_tensor outputs[2] = {
      KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, two, sum, 24),
      KILN_TENSOR_INIT(KILN_DTYPE_I32, 0, nullptr, &threads, 4)};
  kiln_tensor tooMany[2] = {KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, five, a, 60),
                            KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, five, b, 60)};
  Status bounds = kiln_model_run(model, tooMany, 2, outputs, 2);
  EXPECT_EQ(bounds.code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(bounds.message(),
            "input 'a' (#0): dimension 0 ('batch') is 5, outside the model's "
            "bounds 1..4 (kiln-compile --dynamic-dims batch=MIN..MAX sets "
            "them)");
  kiln_tensor disagree[2] = {KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, two, a, 24),
                             KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, one, b, 12)};
  Status mismatch = kiln_model_run(model, disagree, 2, outputs, 2);
  EXPECT_EQ(mismatch.code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(mismatch.message(),
            "input 'b' (#1): dimension 0 ('batch') is 1, but 2 in the "
            "tensors before it; every dimension named 'batch' has the same "
            "size in a run");
  kiln_tensor ones[2] = {KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, one, a, 12),
                         KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, one, b, 12)};
  Status output = kiln_model_run(model, ones, 2, outputs, 2);
  EXPECT_EQ(output.code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(output.message().find("output 'sum:0' (#0): dimension 0 "
                                  "('batch') is 2, but 1"),
            std::string::npos)
      << output.message();
  kiln_tensor wrongBytes[2] = {KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, one, a, 24),
                               KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, one, b, 12)};
  Status bytes = kiln_model_run(model, wrongBytes, 2, outputs, 2);
  EXPECT_EQ(bytes.message(), "input 'a' (#0): expected 12 bytes, got 24");
  int64_t wide[2] = {1, 4};
  kiln_tensor wrongShape[2] = {KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, wide, a, 16),
                               KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, one, b, 12)};
  EXPECT_EQ(Status(kiln_model_run(model, wrongShape, 2, outputs, 2)).message(),
            "input 'a' (#0): expected shape [batch,3], got [1,4]");
  int64_t small[1];
  EXPECT_EQ(
      Status(kiln_model_output_shape(model, ones, 2, 0, small, 1, nullptr))
          .code(),
      KILN_STATUS_INVALID_ARGUMENT);
  kiln_model_release(model);
}

TEST(SymbolicModel, BrokenSymbols) {
  EXPECT_EQ(openFails("fake_symbol_inside", KILN_STATUS_INVALID_MODEL),
            "invalid model: symbolic dimension 'batch' is not the first "
            "dimension");
  EXPECT_NE(openFails("fake_symbol_bounds", KILN_STATUS_INVALID_MODEL)
                .find("bounds outside 1 <= min <= max"),
            std::string::npos);
}

// A size that the data decides (ABI version 6): described as -1 with its
// symbol, given at its largest before the run, passed at that size; the run
// returns it in out_shape and leaves the output dense in that shape.
TEST(DataDependentModel, ReturnsTheRunsShape) {
  kiln_model *model = nullptr;
  Status opened = kiln_model_open(fakeModel("fake_data_dependent").c_str(),
                                  nullptr, &model);
  ASSERT_EQ(opened.status, nullptr) << opened.message();
  ASSERT_EQ(kiln_model_num_symbols(model), 1u);
  kiln_symbol_info symbol = KILN_SYMBOL_INFO_INIT;
  ASSERT_EQ(Status(kiln_model_symbol_info(model, 0, &symbol)).code(),
            KILN_STATUS_OK);
  EXPECT_STREQ(symbol.name, "n");
  EXPECT_EQ(symbol.min, 0);
  EXPECT_EQ(symbol.max, 6);
  EXPECT_EQ(symbol.data_dependent, 1);
  kiln_tensor_info info = KILN_TENSOR_INFO_INIT;
  ASSERT_EQ(Status(kiln_model_output_info(model, 1, &info)).code(),
            KILN_STATUS_OK);
  EXPECT_EQ(info.shape[0], 2);
  EXPECT_EQ(info.shape[1], -1);
  EXPECT_EQ(info.dim_symbols[1], 0);
  EXPECT_EQ(info.byte_size, 2u * 6u * 8u);

  int64_t shape[2] = {2, 3};
  float a[6] = {1, -1, 2, -3, 4, -5}, b[6] = {}, sum[6];
  kiln_tensor inputs[2] = {
      KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, a, sizeof(a)),
      KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, b, sizeof(b))};
  int64_t largest[2] = {0, 0};
  size_t bytes = 0;
  ASSERT_EQ(
      Status(kiln_model_output_shape(model, inputs, 2, 1, largest, 2, &bytes))
          .code(),
      KILN_STATUS_OK);
  EXPECT_EQ(largest[0], 2);
  EXPECT_EQ(largest[1], 6);
  EXPECT_EQ(bytes, 96u);
  int64_t positions[12];
  int64_t runShape[2] = {-1, -1};
  kiln_tensor outputs[2] = {
      KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, sum, sizeof(sum)),
      KILN_TENSOR_INIT(KILN_DTYPE_I64, 2, largest, positions, bytes)};
  outputs[1].out_shape = runShape;
  Status status = kiln_model_run(model, inputs, 2, outputs, 2);
  ASSERT_EQ(status.status, nullptr) << status.message();
  EXPECT_EQ(runShape[0], 2);
  EXPECT_EQ(runShape[1], 3);
  // Positive: (0,0), (0,2), (1,1), dense as [2,3].
  const int64_t expected[6] = {0, 0, 1, 0, 2, 1};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(positions[i], expected[i]) << i;

  // No out_shape, the output at another size, a size out of range.
  outputs[1].out_shape = nullptr;
  EXPECT_EQ(Status(kiln_model_run(model, inputs, 2, outputs, 2)).message(),
            "output 'pos' (#1): its size is decided by the run, which "
            "returns it through out_shape, but out_shape is NULL");
  outputs[1].out_shape = runShape;
  int64_t three[2] = {2, 3};
  outputs[1].shape = three;
  outputs[1].byte_size = 48;
  EXPECT_NE(Status(kiln_model_run(model, inputs, 2, outputs, 2))
                .message()
                .find("dimension 1 ('n') is decided by the run; pass the "
                      "output at its largest size, 6"),
            std::string::npos);
  outputs[1].shape = largest;
  outputs[1].byte_size = bytes;
  a[0] = 99;
  Status bad = kiln_model_run(model, inputs, 2, outputs, 2);
  EXPECT_EQ(bad.code(), KILN_STATUS_INTERNAL);
  EXPECT_EQ(bad.message(), "model returned size 7 for 'n', outside 0..6");
  kiln_model_release(model);
}

/// A fake add model (a [2,3] + b [2,3]) opened with its buffers, for the
/// tests of what a run reports.
struct AddRun {
  kiln_model *model = nullptr;
  int64_t shape[2] = {2, 3};
  float a[6] = {}, b[6] = {}, sum[6] = {};
  int32_t threads = 0;
  kiln_tensor inputs[2] = {
      KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, a, sizeof(a)),
      KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, b, sizeof(b))};
  kiln_tensor outputs[2] = {
      KILN_TENSOR_INIT(KILN_DTYPE_F32, 2, shape, sum, sizeof(sum)),
      KILN_TENSOR_INIT(KILN_DTYPE_I32, 0, nullptr, &threads, 4)};

  explicit AddRun(const char *name) {
    EXPECT_EQ(Status(kiln_model_open(fakeModel(name).c_str(), nullptr, &model))
                  .code(),
              KILN_STATUS_OK);
  }
  ~AddRun() { kiln_model_release(model); }
  Status run() { return kiln_model_run(model, inputs, 2, outputs, 2); }
};

TEST(ModelRun, ModelFailureBecomesStatus) {
  AddRun add("fake_run_fails");
  ASSERT_NE(add.model, nullptr);
  Status status = add.run();
  EXPECT_EQ(status.code(), KILN_STATUS_OUT_OF_MEMORY);
  EXPECT_EQ(status.message(), "model ran out of memory");
}

TEST(ModelRun, FailedIndexCheckNamesNodeAndIndex) {
  AddRun add("fake_index_error");
  ASSERT_NE(add.model, nullptr);
  EXPECT_EQ(add.run().code(), KILN_STATUS_OK);
  add.a[0] = 1000000;
  Status status = add.run();
  EXPECT_EQ(status.code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(status.message(),
            "emb (Gather): index 1000000 is out of range [-10, 9]; the run's "
            "outputs are not valid");
  // The next run starts afresh.
  add.a[0] = 3;
  EXPECT_EQ(add.run().code(), KILN_STATUS_OK);
  EXPECT_NE(openFails("fake_bad_check", KILN_STATUS_INVALID_MODEL)
                .find("index check #0"),
            std::string::npos);
}

TEST(Status, NullIsOk) {
  EXPECT_EQ(kiln_status_code(nullptr), KILN_STATUS_OK);
  EXPECT_STREQ(kiln_status_message(nullptr), "OK");
  kiln_status_free(nullptr);
  EXPECT_STREQ(kiln_status_code_name(KILN_STATUS_ABI_MISMATCH), "ABI_MISMATCH");
}

TEST(Dtype, NamesAndSizes) {
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_F32), "f32");
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_BF16), "bf16");
  EXPECT_EQ(kiln_dtype_name(8), nullptr); // ONNX STRING
  EXPECT_EQ(kiln_dtype_name(-1), nullptr);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_F16), 2u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_U64), 8u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_BOOL), 1u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_INVALID), 0u);
}

TEST(CpuFeatures, KnownList) {
  std::string x86 = kiln_runtime_known_cpu_features("x86_64-unknown-linux-gnu");
  EXPECT_NE(x86.find("avx2"), std::string::npos);
  EXPECT_NE(x86.find("avx512fp16"), std::string::npos);
  EXPECT_NE(x86.find("avxvnni"), std::string::npos);
  std::string arm = kiln_runtime_known_cpu_features("aarch64-linux-gnu");
  EXPECT_NE(arm.find("i8mm"), std::string::npos);
  EXPECT_STREQ(kiln_runtime_known_cpu_features("riscv64"), "");
  std::string host = kiln_runtime_known_cpu_features(nullptr);
#if defined(__x86_64__)
  EXPECT_EQ(host, x86);
  EXPECT_EQ(kiln_runtime_cpu_supports("sse2"), 1);
  EXPECT_EQ(kiln_runtime_cpu_supports("i8mm"), -1);
  EXPECT_EQ(kiln_runtime_cpu_supports("sve-vector-bits=256"), -1);
#elif defined(__aarch64__)
  EXPECT_EQ(host, arm);
  EXPECT_EQ(kiln_runtime_cpu_supports("neon"), 1);
  // With SVE, exactly one vector length is this thread's; without, none.
  int lengths = 0;
  for (int bits = 128; bits <= 2048; bits += 128)
    lengths += kiln_runtime_cpu_supports(
        ("sve-vector-bits=" + std::to_string(bits)).c_str());
  EXPECT_EQ(lengths, kiln_runtime_cpu_supports("sve"));
  EXPECT_EQ(kiln_runtime_cpu_supports("sve-vector-bits=x"), -1);
  EXPECT_EQ(kiln_runtime_cpu_supports("sve-vector-bits="), -1);
#endif
  EXPECT_EQ(kiln_runtime_cpu_supports("nonexistentfeature"), -1);
  EXPECT_EQ(kiln_runtime_cpu_supports(nullptr), -1);
  // Every name in the host's list can be checked.
  size_t start = 0;
  while (start < host.size()) {
    size_t comma = host.find(',', start);
    std::string name = host.substr(start, comma - start);
    EXPECT_GE(kiln_runtime_cpu_supports(name.c_str()), 0) << name;
    start = comma == std::string::npos ? host.size() : comma + 1;
  }
  EXPECT_EQ(kiln_runtime_abi_version(), KILN_ABI_VERSION);
}

} // namespace
