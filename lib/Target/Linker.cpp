//===- Linker.cpp - Link a model object into a shared object --------------===//

#include "lib/Target/Linker.h"

#include "kiln/model_abi.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

#include <cstdlib>

using namespace llvm;

namespace kiln {

/// Folders that hold the target's libc.so.6 and libm.so.6.
static std::vector<std::string> libraryDirs(TargetArch arch) {
  if (arch == TargetArch::AArch64)
    return {"/usr/aarch64-linux-gnu/lib", "/lib/aarch64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu"};
  return {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64"};
}

static Expected<std::string> findLibrary(TargetArch arch, StringRef name) {
  for (const std::string &dir : libraryDirs(arch)) {
    SmallString<128> path(dir);
    sys::path::append(path, name);
    if (sys::fs::exists(path))
      return path.str().str();
  }
  return createStringError("cannot find " + name.str() +
                           " for the target (is its C library installed? "
                           "tools/setup.sh installs the AArch64 one)");
}

static std::string findLinker() {
  if (const char *env = std::getenv("KILN_LLD"))
    return env;
  return KILN_DEFAULT_LLD;
}

Error linkSharedObject(const std::string &object, const std::string &outputPath,
                       const TargetInfo &target, bool openMP) {
  SmallString<128> objectPath;
  int fd;
  if (std::error_code ec =
          sys::fs::createTemporaryFile("kiln-model", "o", fd, objectPath))
    return createStringError("cannot create a temporary file: " + ec.message());
  FileRemover removeObject(objectPath);
  {
    raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << object;
    if (os.has_error())
      return createStringError("cannot write " + objectPath.str().str());
  }
  Expected<std::string> libm = findLibrary(target.arch, "libm.so.6");
  if (!libm)
    return libm.takeError();
  Expected<std::string> libc = findLibrary(target.arch, "libc.so.6");
  if (!libc)
    return libc.takeError();
  // The dynamic loader defines __tls_get_addr, which a model's thread-local
  // slot (its index checks) calls; --as-needed keeps it out of the others.
  Expected<std::string> loader = findLibrary(
      target.arch, target.arch == TargetArch::AArch64 ? "ld-linux-aarch64.so.1"
                                                      : "ld-linux-x86-64.so.2");
  if (!loader)
    return loader.takeError();
  std::string libomp;
  if (openMP) {
    Expected<std::string> found = findLibrary(target.arch, "libomp.so.5");
    if (!found)
      return found.takeError();
    libomp = *found;
  }

  std::string linker = findLinker();
  SmallVector<StringRef> args = {
      linker, "-shared", "--eh-frame-hdr", "-z", "relro", "-z", "now", "-z",
      "noexecstack", "--gc-sections", "--as-needed",
      // An unresolved symbol is an error now,
      // not when the runtime loads the model.
      "-z", "defs", "-soname", sys::path::filename(outputPath), "-o",
      outputPath, objectPath, *libm, *libc, *loader};
  if (openMP)
    args.push_back(libomp);

  SmallString<128> errorPath;
  if (std::error_code ec =
          sys::fs::createTemporaryFile("kiln-link", "txt", errorPath))
    return createStringError("cannot create a temporary file: " + ec.message());
  FileRemover removeErrors(errorPath);
  std::optional<StringRef> redirects[] = {std::nullopt, errorPath.str(),
                                          errorPath.str()};
  std::string message;
  int rc = sys::ExecuteAndWait(linker, args, std::nullopt, redirects, 0, 0,
                               &message);
  if (rc != 0) {
    auto errors = MemoryBuffer::getFile(errorPath);
    std::string text = errors ? (*errors)->getBuffer().trim().str() : "";
    return createStringError("linking with " + linker + " failed" +
                             (message.empty() ? "" : ": " + message) +
                             (text.empty() ? "" : ":\n" + text));
  }
  return sealModelFile(outputPath);
}

Error sealModelFile(const std::string &path) {
  auto file = MemoryBuffer::getFile(path, /*IsText=*/false,
                                    /*RequiresNullTerminator=*/false);
  if (!file)
    return createStringError("cannot read " + path +
                             " to seal it: " + file.getError().message());
  StringRef data = (*file)->getBuffer();
  kiln_abi_seal seal;
  std::memcpy(seal.magic, KILN_ABI_SEAL_MAGIC, sizeof(seal.magic));
  seal.size = data.size();
  seal.checksum = kiln_abi_checksum(data.data(), data.size());
  seal.version = KILN_ABI_SEAL_VERSION;
  seal.reserved = 0;
  std::error_code ec;
  raw_fd_ostream os(path, ec, sys::fs::OF_Append);
  if (ec)
    return createStringError("cannot seal " + path + ": " + ec.message());
  os.write(reinterpret_cast<const char *>(&seal), sizeof(seal));
  os.close();
  if (os.has_error())
    return createStringError("cannot seal " + path);
  return Error::success();
}

} // namespace kiln
