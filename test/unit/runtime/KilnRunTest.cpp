//===- KilnRunTest.cpp - The kiln-run tool, end to end on a fake model ----===//

#include "TensorFile.h"

#include "kiln/runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>

using namespace kiln;

namespace {

struct Result {
  int exitCode = -1;
  std::string out, err;
};

std::string readText(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

class KilnRun : public ::testing::Test {
protected:
  void SetUp() override {
    dir = testing::TempDir() + "/kiln_run_" +
          testing::UnitTest::GetInstance()->current_test_info()->name();
    std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str());
    model = std::string(KILN_FAKE_MODEL_DIR) + "/fake_add.so";
    int64_t shape[2] = {2, 3};
    float a[6], b[6];
    for (int i = 0; i < 6; ++i) {
      a[i] = float(i);
      b[i] = 0.5f;
    }
    ASSERT_EQ(writeNpyFile(dir + "/a.npy", KILN_DTYPE_F32, shape, 2, a, 24),
              "");
    ASSERT_EQ(writeNpyFile(dir + "/b.npy", KILN_DTYPE_F32, shape, 2, b, 24),
              "");
  }

  // Runs kiln-run with `args` (shell words), from `dir`.
  Result run(const std::string &args) {
    std::string command = "cd '" + dir + "' && '" KILN_RUN_PATH "' " + args +
                          " >stdout.txt 2>stderr.txt";
    int status = std::system(command.c_str());
    Result result;
    result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = readText(dir + "/stdout.txt");
    result.err = readText(dir + "/stderr.txt");
    return result;
  }

  std::string dir, model;
};

TEST_F(KilnRun, RunsAndWritesOutputs) {
  Result r = run("'" + model + "' --input b=b.npy --input a=a.npy");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("output 'sum:0': f32 [2,3] -> ./sum_0.npy"),
            std::string::npos)
      << r.out;
  HostTensor sum;
  ASSERT_EQ(readTensorFile(dir + "/sum_0.npy", sum), "");
  EXPECT_EQ(sum.shape, (std::vector<int64_t>{2, 3}));
  const float *values = reinterpret_cast<const float *>(sum.data());
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(values[i], float(i) + 0.5f);
}

TEST_F(KilnRun, JsonThreadsRepeatAndOutputDir) {
  mkdir((dir + "/out").c_str(), 0755);
  Result r = run("--json --threads=3 --repeat 4 --warmup 2 --output-dir out "
                 "--input a=a.npy --input=b=b.npy '" +
                 model + "'");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out.rfind("{\"outputs\": {\"sum:0\": \"out/sum_0.npy\", "
                        "\"threads\": \"out/threads.npy\"}, \"median_ms\": ",
                        0),
            0u)
      << r.out;
  EXPECT_NE(r.out.find("\"repeat\": 4, \"threads\": 3}\n"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1); // exactly one line
  HostTensor threads;
  ASSERT_EQ(readTensorFile(dir + "/out/threads.npy", threads), "");
  EXPECT_EQ(threads.dtype, KILN_DTYPE_I32);
  EXPECT_TRUE(threads.shape.empty());
  EXPECT_EQ(*reinterpret_cast<const int32_t *>(threads.data()), 3);
}

TEST_F(KilnRun, ThreadsFromEnvironment) {
  Result r = run("--json --input a=a.npy --input b=b.npy '" + model +
                 "' KILN_NUM_THREADS=2");
  EXPECT_EQ(r.exitCode, 2); // a second positional argument
  r = run("--json --input a=a.npy --input b=b.npy '" + model + "'");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  setenv("KILN_NUM_THREADS", "2", 1);
  r = run("--json --input a=a.npy --input b=b.npy '" + model + "'");
  unsetenv("KILN_NUM_THREADS");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("\"threads\": 2}"), std::string::npos) << r.out;
}

TEST_F(KilnRun, ErrorsAreOneLine) {
  struct Case {
    std::string args;
    int exitCode;
    std::string err;
  } cases[] = {
      {"", 2, "kiln-run: error: no model given (see --help)\n"},
      {"'" + model + "' --bogus", 2,
       "kiln-run: error: unknown option '--bogus' (see --help)\n"},
      {"'" + model + "' --repeat 0", 2,
       "kiln-run: error: --repeat expects an integer from 1 to 1000000000, "
       "got '0'\n"},
      {"'" + model + "' --threads", 2,
       "kiln-run: error: --threads needs a value\n"},
      {"missing.so", 1,
       "kiln-run: error: cannot open model 'missing.so': No such file or "
       "directory\n"},
      {"'" + model + "' --input a=a.npy", 1,
       "kiln-run: error: missing input 'b' (give it with --input b=FILE)\n"},
      {"'" + model + "' --input a=a.npy --input c=b.npy", 1,
       "kiln-run: error: the model has no input named 'c'\n"},
      {"'" + model + "' --input a.npy", 1,
       "kiln-run: error: --input 'a.npy' names no input; the model has 2 "
       "inputs, use --input NAME=FILE\n"},
      {"'" + model + "' --input a=a.npy --input a=b.npy", 1,
       "kiln-run: error: input 'a' is given twice\n"},
      {"'" + model + "' --input a=nothere.npy --input b=b.npy", 1,
       "kiln-run: error: input 'a': cannot open 'nothere.npy': No such file "
       "or directory\n"},
      {"'" + model + "' --input a=stdout.txt --input b=b.npy", 1,
       "kiln-run: error: input 'a': 'stdout.txt': unknown tensor file type "
       "(expected a .npy file or an ONNX TensorProto .pb file)\n"},
      // An output folder that cannot be made: a file stands in its path.
      {"'" + model + "' --input a=a.npy --input b=b.npy --output-dir a.npy/out",
       1,
       "kiln-run: error: cannot create the output folder 'a.npy/out': Not a "
       "directory\n"},
  };
  for (const Case &c : cases) {
    Result r = run(c.args);
    EXPECT_EQ(r.exitCode, c.exitCode) << c.args;
    EXPECT_EQ(r.err, c.err) << c.args;
    EXPECT_EQ(r.out, "") << c.args;
  }
}

TEST_F(KilnRun, ShapeMismatchComesFromTheRuntime) {
  int64_t shape[2] = {2, 4};
  float data[8] = {};
  ASSERT_EQ(writeNpyFile(dir + "/wide.npy", KILN_DTYPE_F32, shape, 2, data, 32),
            "");
  Result r = run("'" + model + "' --input a=wide.npy --input b=b.npy");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.err, "kiln-run: error: input 'a' (#0): expected shape [2,3], "
                   "got [2,4]\n");
}

TEST_F(KilnRun, MalformedInputFileIsAnError) {
  std::ofstream(dir + "/bad.npy", std::ios::binary) << "\x93NUMPY\x01";
  Result r = run("'" + model + "' --input a=bad.npy --input b=b.npy");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.err, "kiln-run: error: input 'a': 'bad.npy': not a .npy file "
                   "(no \\x93NUMPY magic string)\n");
}

// One line per kernel of the table (slowest first), then the time outside
// kernels; the kernel without a FLOP count shows "-".
TEST_F(KilnRun, ProfilePrintsEveryKernel) {
  Result r = run("'" + model +
                 "' --input a=a.npy --input b=b.npy --repeat 3 "
                 "--profile");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.err, "");
  size_t header = r.out.find("profile: 2 kernels, medians of 3 runs: ");
  ASSERT_NE(header, std::string::npos) << r.out;
  std::string table = r.out.substr(header);
  EXPECT_NE(table.find("  add (sum (Add))\n"), std::string::npos) << table;
  EXPECT_NE(table.find("-  threads\n"), std::string::npos) << table;
  EXPECT_NE(table.find("-  (outside kernels)\n"), std::string::npos) << table;
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 2 + 2 + 1) << table;

  r = run("'" + model + "' --input a=a.npy --input b=b.npy --profile --json");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("\"profile\": {\"total_ms\": "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("{\"name\": \"add\", \"source\": \"sum (Add)\", "
                       "\"flops\": 6, \"ms\": "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\"flops\": 0, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"gflops\": null}], \"outside_ms\": "),
            std::string::npos)
      << r.out;
}

// A model of ABI version 1 still runs under --profile, with a note.
TEST_F(KilnRun, ProfileOfAModelWithoutKernelTable) {
  Result r = run("'" + std::string(KILN_FAKE_MODEL_DIR) +
                 "/fake_v1.so' --input a=a.npy --input b=b.npy --profile");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.err, "kiln-run: note: the model has no kernel table (ABI "
                   "version 1; kernel profiling needs version 2): --profile "
                   "reports only the total\n");
  EXPECT_NE(r.out.find("profile: 0 kernels, medians of 1 run: "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("(outside kernels)"), std::string::npos) << r.out;
  Result bad = run("'" + model +
                   "' --input a=a.npy --input b=b.npy "
                   "--profile=1");
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_EQ(bad.err, "kiln-run: error: --profile takes no value\n");
}

TEST_F(KilnRun, Help) {
  Result r = run("--help");
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_EQ(r.out.rfind("usage: kiln-run MODEL.so --input NAME=FILE", 0), 0u);
  EXPECT_EQ(r.err, "");
}

} // namespace
