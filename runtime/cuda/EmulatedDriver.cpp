//===- EmulatedDriver.cpp - A CUDA driver that runs kernels on the host ---===//
//
// libkiln_cuda_emulator.so implements the CUDA driver entry points that
// Kiln's runtime calls, over host memory, so that the whole GPU path of a
// model (its images, kernel table, launches, constants, workspace and
// copies) runs in CI on a machine without a GPU. Select it with
// KILN_CUDA_DRIVER=/path/to/libkiln_cuda_emulator.so.
//
// It checks what a driver would: a cubin is an ELF file for the CUDA machine
// (EM_CUDA), PTX has .version and .target, and every kernel the runtime asks
// for is an entry of the image. It runs a kernel through the host twins that
// kiln-compile --gpu-emulation puts in the model (kiln_emulator_attach),
// each thread a coroutine of its own that gives way at each barrier, the
// threads of each block resumed, between barriers, in the order
// KILN_EMULATOR_ORDER names: forward (the default), reverse or shuffle
// (drawn again for every stretch between barriers). Shared memory starts
// each block as 0xff bytes.
//
// Environment, for tests:
//   KILN_EMULATOR_ARCH   the device's architecture, e.g. sm_80 (default sm_90)
//   KILN_EMULATOR_FAIL   make a call fail: alloc (out of memory), load
//                        (CUDA_ERROR_UNSUPPORTED_PTX_VERSION), launch
//                        (CUDA_ERROR_LAUNCH_FAILED), sync
//                        (CUDA_ERROR_ILLEGAL_ADDRESS)
//
//===----------------------------------------------------------------------===//

#include "../ModelCall.h"
#include "CudaDriver.h"
#include "kiln/model_abi.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__) && defined(__ELF__)
#define KILN_EMULATOR_FAST_SWITCH 1
#else
#define KILN_EMULATOR_FAST_SWITCH 0
#include <ucontext.h>
#endif

namespace {

using CUresult = int;
constexpr CUresult kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2,
                   kInvalidImage = 200, kUnsupportedPtx = 222, kNotFound = 500,
                   kIllegalAddress = 700, kLaunchFailed = 719;

struct Function {
  void (*run)(void *const *, const int64_t *) = nullptr;
};

struct Module {
  const char *image = nullptr;
  size_t size = 0; // bytes of the image that names may be searched in
  bool ptx = false;
  std::map<std::string, void (*)(void *const *, const int64_t *)> kernels;
  /// The handles cuModuleGetFunction gave out: valid until the module is
  /// unloaded, as the driver's are.
  std::map<std::string, std::unique_ptr<Function>> functions;
  std::mutex functionsMutex;
};

/// The emulator's device memory: each allocation's start and size.
std::mutex allocationsMutex;
std::map<uintptr_t, size_t> live;

std::atomic<int64_t> allocations{0}, frees{0}, launches{0}, uploads{0};

bool failing(const char *what) {
  const char *env = std::getenv("KILN_EMULATOR_FAIL");
  return env && std::strcmp(env, what) == 0;
}

int capability() {
  const char *env = std::getenv("KILN_EMULATOR_ARCH");
  std::string arch = env && *env ? env : "sm_90";
  if (arch.rfind("sm_", 0) != 0)
    return 90;
  return std::atoi(arch.c_str() + 3);
}

/// The extent of an ELF64 file from its header: the section header table
/// ends it (ptxas writes it last).
size_t elfSize(const char *image) {
  uint64_t shoff;
  uint16_t shentsize, shnum;
  std::memcpy(&shoff, image + 0x28, 8);
  std::memcpy(&shentsize, image + 0x3a, 2);
  std::memcpy(&shnum, image + 0x3c, 2);
  return static_cast<size_t>(shoff + uint64_t(shentsize) * shnum);
}

bool contains(const Module &m, const std::string &needle) {
  return std::search(m.image, m.image + m.size, needle.begin(), needle.end()) !=
         m.image + m.size;
}

/// One thread of a block as a coroutine: it runs the kernel's twin on a
/// stack of its own and gives the host thread back at each barrier.
struct Fiber {
  int64_t ids[8];
  bool done = true;
  void resume();
  void start();
  std::unique_ptr<char[]> stack;
#if KILN_EMULATOR_FAST_SWITCH
  void *sp = nullptr;
#else
  ucontext_t context;
#endif
};

/// The threads of the block being run (blocks run one after another).
struct Block {
  void (*run)(void *const *, const int64_t *) = nullptr;
  void **params = nullptr;
  std::vector<Fiber> fibers;
  std::vector<char> shared;
  Fiber *current = nullptr;
#if KILN_EMULATOR_FAST_SWITCH
  void *hostSp = nullptr;
#else
  ucontext_t host;
#endif

  static Block &get(size_t threads) {
    static Block block;
    if (block.fibers.size() < threads)
      block.fibers.resize(threads);
    block.shared.resize(KILN_ABI_EMULATED_SHARED_SIZE);
    return block;
  }
};

constexpr size_t kFiberStack = 256 * 1024;
Block *running = nullptr; // the launch in progress (one at a time)

#if KILN_EMULATOR_FAST_SWITCH
// kiln_emulator_switch(save, load): saves the callee-saved registers and the
// SSE/x87 control words on the current stack, stores its stack pointer in
// *save, and continues on the stack `load` with what it saved there.
extern "C" void kiln_emulator_switch(void **save, void *load);
asm(R"(
  .text
  .p2align 4
  .type kiln_emulator_switch,@function
kiln_emulator_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size kiln_emulator_switch, .-kiln_emulator_switch
)");
#endif

[[noreturn]] void fiberMain() {
  Block &block = *running;
  Fiber &fiber = *block.current;
  // The kernel's host twin is the model's code (ModelCall.h).
  kiln::runtime::callModel(block.run, block.params, fiber.ids);
  fiber.done = true;
#if KILN_EMULATOR_FAST_SWITCH
  kiln_emulator_switch(&fiber.sp, block.hostSp);
#else
  setcontext(&block.host);
#endif
  std::abort(); // never resumed
}

void Fiber::start() {
  if (!stack)
    stack.reset(new char[kFiberStack]);
  done = false;
#if KILN_EMULATOR_FAST_SWITCH
  // The frame kiln_emulator_switch pops: control words, six registers, and
  // fiberMain as the return address, above which a dummy return address
  // leaves the stack as a call would (16-byte aligned before it).
  auto top =
      reinterpret_cast<uintptr_t>(stack.get() + kFiberStack) & ~uintptr_t(15);
  auto *frame = reinterpret_cast<uint64_t *>(top) - 9;
  uint32_t control[2] = {0x1f80, 0x037f}; // MXCSR, x87 control word defaults
  std::memcpy(frame, control, sizeof control);
  for (int i = 1; i <= 6; ++i)
    frame[i] = 0;
  frame[7] = reinterpret_cast<uint64_t>(&fiberMain);
  frame[8] = 0;
  sp = frame;
#else
  getcontext(&context);
  context.uc_stack.ss_sp = stack.get();
  context.uc_stack.ss_size = kFiberStack;
  context.uc_link = nullptr;
  makecontext(&context, reinterpret_cast<void (*)()>(&fiberMain), 0);
#endif
}

void Fiber::resume() {
  Block &block = *running;
  block.current = this;
#if KILN_EMULATOR_FAST_SWITCH
  kiln_emulator_switch(&block.hostSp, sp);
#else
  swapcontext(&block.host, &context);
#endif
}

/// __syncthreads: back to the host thread until the next round.
void barrier() {
  Block &block = *running;
  Fiber &fiber = *block.current;
#if KILN_EMULATOR_FAST_SWITCH
  kiln_emulator_switch(&fiber.sp, block.hostSp);
#else
  swapcontext(&fiber.context, &block.host);
#endif
}

} // namespace

// The entry points take the driver's own handle types, as the runtime calls
// them through pointers of those types (UBSan's -fsanitize=function checks).
using kiln::runtime::cuda::CUcontext;
using kiln::runtime::cuda::CUfunction;
using kiln::runtime::cuda::CUmodule;
using kiln::runtime::cuda::CUstream;

extern "C" {

CUresult cuInit(unsigned) { return kSuccess; }
CUresult cuDriverGetVersion(int *version) {
  *version = 13000;
  return kSuccess;
}
CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return kSuccess;
}
CUresult cuDeviceGet(int *device, int ordinal) {
  if (ordinal != 0)
    return 101; // CUDA_ERROR_INVALID_DEVICE
  *device = 0;
  return kSuccess;
}
CUresult cuDeviceGetAttribute(int *value, int attribute, int) {
  if (attribute == 75)
    *value = capability() / 10;
  else if (attribute == 76)
    *value = capability() % 10;
  else
    return kInvalidValue;
  return kSuccess;
}
CUresult cuDeviceGetName(char *name, int length, int) {
  std::snprintf(name, length, "Kiln CUDA emulator");
  return kSuccess;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *context, int) {
  static int primary;
  *context = reinterpret_cast<CUcontext>(&primary);
  return kSuccess;
}
CUresult cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }
CUresult cuCtxPushCurrent_v2(CUcontext) { return kSuccess; }
CUresult cuCtxPopCurrent_v2(CUcontext *context) {
  if (context)
    *context = nullptr;
  return kSuccess;
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned,
                            int *, void **) {
  if (!image)
    return kInvalidValue;
  if (failing("load"))
    return kUnsupportedPtx;
  auto m = std::make_unique<Module>();
  m->image = static_cast<const char *>(image);
  if (std::memcmp(m->image,
                  "\x7f"
                  "ELF",
                  4) == 0) {
    uint16_t machine;
    std::memcpy(&machine, m->image + 18, 2);
    if (m->image[4] != 2 || machine != 190) // ELFCLASS64, EM_CUDA
      return kInvalidImage;
    m->size = elfSize(m->image);
  } else {
    m->size = std::strlen(m->image);
    m->ptx = true;
    if (!contains(*m, ".version") || !contains(*m, ".target sm_"))
      return kInvalidImage;
  }
  *module = reinterpret_cast<CUmodule>(m.release());
  return kSuccess;
}

CUresult cuModuleUnload(CUmodule module) {
  delete reinterpret_cast<Module *>(module);
  return kSuccess;
}

/// Kiln's own entry point: the host twins of the module's kernels.
CUresult kiln_emulator_attach(CUmodule module, const void *kernels,
                              int64_t count) {
  auto *m = reinterpret_cast<Module *>(module);
  const auto *table = static_cast<const kiln_abi_emulated_kernel *>(kernels);
  if (!m || !table || count < 0)
    return kInvalidValue;
  for (int64_t i = 0; i < count; ++i)
    m->kernels[table[i].name] = table[i].run;
  return kSuccess;
}

CUresult cuModuleGetFunction(CUfunction *function, CUmodule module,
                             const char *name) {
  auto *m = reinterpret_cast<Module *>(module);
  // The name must be an entry of the image itself, as the driver checks.
  std::string needle =
      m->ptx ? ".entry " + std::string(name) + "(" : std::string(name) + '\0';
  auto it = m->kernels.find(name);
  if (!contains(*m, needle) || it == m->kernels.end())
    return kNotFound;
  std::lock_guard<std::mutex> lock(m->functionsMutex);
  std::unique_ptr<Function> &handle = m->functions[name];
  if (!handle)
    handle = std::make_unique<Function>(Function{it->second});
  *function = reinterpret_cast<CUfunction>(handle.get());
  return kSuccess;
}

CUresult cuMemAlloc_v2(unsigned long long *pointer, size_t bytes) {
  if (failing("alloc"))
    return kOutOfMemory;
  void *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p)
    return kOutOfMemory;
  ++allocations;
  *pointer = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(allocationsMutex);
  live[*pointer] = bytes;
  return kSuccess;
}
CUresult cuMemFree_v2(unsigned long long pointer) {
  ++frees;
  {
    std::lock_guard<std::mutex> lock(allocationsMutex);
    live.erase(pointer);
  }
  std::free(reinterpret_cast<void *>(pointer));
  return kSuccess;
}
CUresult cuMemcpyHtoD_v2(unsigned long long to, const void *from,
                         size_t bytes) {
  ++uploads;
  std::memcpy(reinterpret_cast<void *>(to), from, bytes);
  return kSuccess;
}
CUresult cuMemcpyHtoDAsync_v2(unsigned long long to, const void *from,
                              size_t bytes, CUstream) {
  std::memcpy(reinterpret_cast<void *>(to), from, bytes);
  return kSuccess;
}
CUresult cuMemcpyDtoHAsync_v2(void *to, unsigned long long from, size_t bytes,
                              CUstream) {
  std::memcpy(to, reinterpret_cast<void *>(from), bytes);
  return kSuccess;
}
CUresult cuPointerGetAttribute(void *data, int attribute,
                               unsigned long long pointer) {
  std::lock_guard<std::mutex> lock(allocationsMutex);
  auto it = live.upper_bound(pointer);
  if (it == live.begin())
    return kInvalidValue;
  --it;
  if (pointer >= it->first + std::max<size_t>(it->second, 1))
    return kInvalidValue; // not device memory
  CUcontext context = nullptr;
  cuDevicePrimaryCtxRetain(&context, 0);
  switch (attribute) {
  case 1: // CU_POINTER_ATTRIBUTE_CONTEXT
    *static_cast<CUcontext *>(data) = context;
    return kSuccess;
  case 2:                               // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
    *static_cast<unsigned *>(data) = 2; // CU_MEMORYTYPE_DEVICE
    return kSuccess;
  case 11: // CU_POINTER_ATTRIBUTE_RANGE_START_ADDR
    *static_cast<unsigned long long *>(data) = it->first;
    return kSuccess;
  case 12: // CU_POINTER_ATTRIBUTE_RANGE_SIZE
    *static_cast<size_t *>(data) = it->second;
    return kSuccess;
  default:
    return kInvalidValue;
  }
}

CUresult cuStreamCreate(CUstream *stream, unsigned) {
  static int streams;
  *stream = reinterpret_cast<CUstream>(&streams);
  return kSuccess;
}
CUresult cuStreamDestroy_v2(CUstream) { return kSuccess; }
CUresult cuStreamSynchronize(CUstream) {
  return failing("sync") ? kIllegalAddress : kSuccess;
}

CUresult cuLaunchKernel(CUfunction function, unsigned gx, unsigned gy,
                        unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned, CUstream, void **params, void **) {
  if (failing("launch"))
    return kLaunchFailed;
  auto *f = reinterpret_cast<Function *>(function);
  if (!f || !f->run)
    return kInvalidValue;
  ++launches;
  const char *env = std::getenv("KILN_EMULATOR_ORDER");
  std::string order = env ? env : "forward";
  size_t threads = size_t(bx) * by * bz;
  if (threads == 0 || threads > 1024)
    return kInvalidValue;
  std::vector<size_t> sequence(threads);
  std::iota(sequence.begin(), sequence.end(), size_t(0));
  if (order == "reverse")
    std::reverse(sequence.begin(), sequence.end());
  std::mt19937_64 random(launches.load());
  Block &block = Block::get(threads);
  running = &block;
  block.run = f->run;
  block.params = params;
  for (unsigned z = 0; z < gz; ++z)
    for (unsigned y = 0; y < gy; ++y)
      for (unsigned x = 0; x < gx; ++x) {
        // Shared memory starts as a pattern no kernel computes (NaN as
        // float), so that reading what no thread wrote shows.
        std::memset(block.shared.data(), 0xff, block.shared.size());
        for (size_t t = 0; t < threads; ++t) {
          int64_t *ids = block.fibers[t].ids;
          ids[0] = x, ids[1] = y, ids[2] = z;
          ids[3] = int64_t(t % bx);
          ids[4] = int64_t(t / bx % by);
          ids[5] = int64_t(t / (size_t(bx) * by));
          ids[6] = int64_t(reinterpret_cast<uintptr_t>(block.shared.data()));
          ids[7] = int64_t(reinterpret_cast<uintptr_t>(&barrier));
          block.fibers[t].start();
        }
        // Each round runs every thread that has not finished up to its next
        // barrier (or its end), in the order asked for: a kernel that
        // misses a barrier reads what another thread has not yet written.
        for (size_t live = threads; live > 0;) {
          if (order == "shuffle")
            std::shuffle(sequence.begin(), sequence.end(), random);
          size_t finished = 0, waiting = 0;
          for (size_t t : sequence) {
            Fiber &fiber = block.fibers[t];
            if (fiber.done)
              continue;
            fiber.resume();
            (fiber.done ? finished : waiting) += 1;
          }
          // A barrier that some threads of the block reach and others
          // finish without: undefined on a GPU, an error here.
          if (finished && waiting)
            return kLaunchFailed;
          live = waiting;
        }
      }
  return kSuccess;
}

/// What the emulator has seen in this process: for tests that a run
/// allocates nothing and that constants go up once per handle.
void kiln_emulator_stats(int64_t *allocs, int64_t *freed, int64_t *launched,
                         int64_t *uploaded) {
  *allocs = allocations.load();
  *freed = frees.load();
  *launched = launches.load();
  *uploaded = uploads.load();
}

} // extern "C"
