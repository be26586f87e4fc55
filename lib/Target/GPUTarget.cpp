//===- GPUTarget.cpp - NVIDIA GPU architectures and ptxas -----------------===//

#include "lib/Target/GPUTarget.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace llvm;

namespace kiln {

const std::vector<std::string> &knownGPUArchs() {
  static const std::vector<std::string> archs = {
      "sm_75",   "sm_80",  "sm_86",   "sm_87",  "sm_89",   "sm_90",
      "sm_90a",  "sm_100", "sm_100a", "sm_103", "sm_103a", "sm_110",
      "sm_110a", "sm_120", "sm_120a", "sm_121", "sm_121a"};
  return archs;
}

Expected<std::vector<std::string>> resolveGPUArchs(const std::string &list) {
  const std::vector<std::string> &known = knownGPUArchs();
  std::vector<std::string> archs;
  std::string given = list.empty() ? kDefaultGPUArchs : list;
  for (StringRef item : split(given, ',')) {
    std::string arch = item.trim().lower();
    if (arch.empty())
      continue;
    if (!is_contained(known, arch)) {
      unsigned number = 0;
      StringRef rest(arch);
      StringRef digits =
          rest.consume_front("sm_") ? rest.take_while(isDigit) : StringRef();
      StringRef suffix = rest.drop_front(digits.size());
      if (digits.size() >= 2 && (suffix.empty() || suffix == "a") &&
          !digits.getAsInteger(10, number) && number < 75)
        return createStringError(
            "--gpu-arch: " + item.trim().str() +
            " is older than CUDA 13 supports (the oldest is sm_75)");
      return createStringError("--gpu-arch: unknown GPU architecture '" +
                               item.trim().str() + "' (expected one of " +
                               join(known, ", ") + ")");
    }
    if (!is_contained(archs, arch))
      archs.push_back(arch);
  }
  if (archs.empty())
    return createStringError("--gpu-arch: no architecture given");
  // In order of known(): the first is the oldest, whose PTX is the fallback.
  sort(archs, [&](const std::string &a, const std::string &b) {
    return find(known, a) < find(known, b);
  });
  return archs;
}

Expected<std::string> findCUDAToolkit(const std::string &cudaPath) {
  std::vector<std::string> candidates;
  if (!cudaPath.empty())
    candidates.push_back(cudaPath);
  else {
    for (const char *name : {"CUDA_HOME", "CUDA_PATH"})
      if (const char *env = std::getenv(name); env && *env)
        candidates.push_back(env);
    candidates.push_back("/usr/local/cuda");
  }
  for (const std::string &root : candidates) {
    SmallString<128> ptxas(root);
    sys::path::append(ptxas, "bin", "ptxas");
    if (sys::fs::can_execute(ptxas))
      return root;
  }
  return createStringError(
      "cannot find the CUDA toolkit's ptxas (looked in " +
      join(candidates, ", ") +
      "): install the CUDA toolkit, or give its root with --cuda-path");
}

namespace {

/// Reads what `ptxas -v` prints for each function, e.g.
///   ptxas info    : Compiling entry function 'k' for 'sm_80'
///   ptxas info    : Used 12 registers, used 0 barriers, 368 bytes cmem[0]
///   ptxas info    : 0 bytes stack frame, 0 bytes spill stores, 0 bytes
///                   spill loads
std::vector<PtxasKernelInfo> parsePtxasInfo(StringRef text) {
  std::vector<PtxasKernelInfo> kernels;
  Regex function("Compiling entry function '([^']+)'");
  Regex registers("Used ([0-9]+) registers");
  Regex shared("([0-9]+) bytes smem");
  Regex frame("([0-9]+) bytes stack frame, ([0-9]+) bytes spill stores, "
              "([0-9]+) bytes spill loads");
  SmallVector<StringRef> lines;
  text.split(lines, '\n');
  for (StringRef line : lines) {
    SmallVector<StringRef> m;
    if (function.match(line, &m)) {
      kernels.push_back({m[1].str()});
      continue;
    }
    if (kernels.empty())
      continue;
    PtxasKernelInfo &k = kernels.back();
    if (registers.match(line, &m))
      m[1].getAsInteger(10, k.registers);
    if (shared.match(line, &m))
      m[1].getAsInteger(10, k.sharedBytes);
    if (frame.match(line, &m)) {
      m[1].getAsInteger(10, k.stackBytes);
      m[2].getAsInteger(10, k.spillStores);
      m[3].getAsInteger(10, k.spillLoads);
    }
  }
  return kernels;
}

} // namespace

Expected<Cubin> runPtxas(const std::string &toolkit, const std::string &ptx,
                         const std::string &arch) {
  SmallString<128> ptxas(toolkit);
  sys::path::append(ptxas, "bin", "ptxas");
  SmallString<128> ptxPath, cubinPath, logPath;
  for (auto [path, ext] :
       {std::pair{&ptxPath, "ptx"}, std::pair{&cubinPath, "cubin"},
        std::pair{&logPath, "txt"}})
    if (std::error_code ec =
            sys::fs::createTemporaryFile("kiln-gpu", ext, *path))
      return createStringError("cannot create a temporary file: " +
                               ec.message());
  FileRemover removePtx(ptxPath), removeCubin(cubinPath), removeLog(logPath);
  {
    std::error_code ec;
    raw_fd_ostream os(ptxPath, ec);
    if (ec)
      return createStringError("cannot write " + ptxPath.str().str());
    os << ptx;
  }
  SmallVector<StringRef> args = {ptxas, "-O3", "-v",      "--gpu-name",
                                 arch,  "-o",  cubinPath, ptxPath};
  std::optional<StringRef> redirects[] = {std::nullopt, logPath.str(),
                                          logPath.str()};
  std::string message;
  int rc =
      sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, 0, 0, &message);
  auto log = MemoryBuffer::getFile(logPath);
  std::string text = log ? (*log)->getBuffer().str() : "";
  if (rc != 0)
    return createStringError("ptxas failed for " + arch +
                             (message.empty() ? "" : ": " + message) + ":\n" +
                             StringRef(text).trim().str());
  auto cubin = MemoryBuffer::getFile(cubinPath, /*IsText=*/false);
  if (!cubin)
    return createStringError("ptxas wrote no cubin for " + arch);
  Cubin result;
  result.data = (*cubin)->getBuffer().str();
  result.kernels = parsePtxasInfo(text);
  return result;
}

} // namespace kiln
