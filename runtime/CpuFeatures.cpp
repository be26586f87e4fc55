//===- CpuFeatures.cpp - What the running CPU can do ----------------------===//
//
// x86-64: CPUID, with XGETBV to check that the OS saves the AVX and AVX-512
// register state (a CPU bit alone is not enough). AArch64 (Linux):
// getauxval(AT_HWCAP / AT_HWCAP2). Names follow LLVM's target features, which
// is what the compiler records in a model's descriptor.
//
// To add a feature: append a row to the table of its architecture; the list
// returned by kiln_runtime_known_cpu_features is built from these tables.
//
//===----------------------------------------------------------------------===//

#include "CpuFeatures.h"

#include <cstdint>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#include <sys/prctl.h>
#endif

using namespace kiln::runtime;

namespace {

// Where a feature's bit lives. For x86: CPUID leaf/subleaf and register; for
// AArch64: AT_HWCAP (word 0) or AT_HWCAP2 (word 1).
enum class Reg { Eax, Ebx, Ecx, Edx, Hwcap, Hwcap2 };

// The register state the OS must save for a feature to be usable (x86).
enum class OsState { None, Avx, Avx512 };

struct FeatureBit {
  const char *name;
  uint32_t leaf;
  uint32_t subleaf;
  Reg reg;
  unsigned bit;
  OsState os;
};

constexpr FeatureBit x86Features[] = {
    {"sse", 1, 0, Reg::Edx, 25, OsState::None},
    {"sse2", 1, 0, Reg::Edx, 26, OsState::None},
    {"sse3", 1, 0, Reg::Ecx, 0, OsState::None},
    {"pclmul", 1, 0, Reg::Ecx, 1, OsState::None},
    {"ssse3", 1, 0, Reg::Ecx, 9, OsState::None},
    {"fma", 1, 0, Reg::Ecx, 12, OsState::Avx},
    {"cx16", 1, 0, Reg::Ecx, 13, OsState::None},
    {"sse4.1", 1, 0, Reg::Ecx, 19, OsState::None},
    {"sse4.2", 1, 0, Reg::Ecx, 20, OsState::None},
    {"movbe", 1, 0, Reg::Ecx, 22, OsState::None},
    {"popcnt", 1, 0, Reg::Ecx, 23, OsState::None},
    {"aes", 1, 0, Reg::Ecx, 25, OsState::None},
    {"xsave", 1, 0, Reg::Ecx, 26, OsState::None},
    {"avx", 1, 0, Reg::Ecx, 28, OsState::Avx},
    {"f16c", 1, 0, Reg::Ecx, 29, OsState::Avx},
    {"rdrnd", 1, 0, Reg::Ecx, 30, OsState::None},
    {"bmi", 7, 0, Reg::Ebx, 3, OsState::None},
    {"avx2", 7, 0, Reg::Ebx, 5, OsState::Avx},
    {"bmi2", 7, 0, Reg::Ebx, 8, OsState::None},
    {"avx512f", 7, 0, Reg::Ebx, 16, OsState::Avx512},
    {"avx512dq", 7, 0, Reg::Ebx, 17, OsState::Avx512},
    {"rdseed", 7, 0, Reg::Ebx, 18, OsState::None},
    {"adx", 7, 0, Reg::Ebx, 19, OsState::None},
    {"avx512ifma", 7, 0, Reg::Ebx, 21, OsState::Avx512},
    {"avx512cd", 7, 0, Reg::Ebx, 28, OsState::Avx512},
    {"sha", 7, 0, Reg::Ebx, 29, OsState::None},
    {"avx512bw", 7, 0, Reg::Ebx, 30, OsState::Avx512},
    {"avx512vl", 7, 0, Reg::Ebx, 31, OsState::Avx512},
    {"avx512vbmi", 7, 0, Reg::Ecx, 1, OsState::Avx512},
    {"avx512vbmi2", 7, 0, Reg::Ecx, 6, OsState::Avx512},
    {"gfni", 7, 0, Reg::Ecx, 8, OsState::None},
    {"vaes", 7, 0, Reg::Ecx, 9, OsState::Avx},
    {"vpclmulqdq", 7, 0, Reg::Ecx, 10, OsState::Avx},
    {"avx512vnni", 7, 0, Reg::Ecx, 11, OsState::Avx512},
    {"avx512bitalg", 7, 0, Reg::Ecx, 12, OsState::Avx512},
    {"avx512vpopcntdq", 7, 0, Reg::Ecx, 14, OsState::Avx512},
    {"avx512fp16", 7, 0, Reg::Edx, 23, OsState::Avx512},
    {"avxvnni", 7, 1, Reg::Eax, 4, OsState::Avx},
    {"avx512bf16", 7, 1, Reg::Eax, 5, OsState::Avx512},
    {"sahf", 0x80000001u, 0, Reg::Ecx, 0, OsState::None},
    {"lzcnt", 0x80000001u, 0, Reg::Ecx, 5, OsState::None},
    {"prfchw", 0x80000001u, 0, Reg::Ecx, 8, OsState::None},
};

// Linux AArch64 HWCAP bits (arch/arm64/include/uapi/asm/hwcap.h). "asimd" and
// "fp16" are accepted as other spellings of "neon" and "fullfp16".
constexpr FeatureBit aarch64Features[] = {
    {"fp-armv8", 0, 0, Reg::Hwcap, 0, OsState::None},
    {"neon", 0, 0, Reg::Hwcap, 1, OsState::None},
    {"asimd", 0, 0, Reg::Hwcap, 1, OsState::None},
    {"aes", 0, 0, Reg::Hwcap, 3, OsState::None},
    {"sha2", 0, 0, Reg::Hwcap, 6, OsState::None},
    {"crc", 0, 0, Reg::Hwcap, 7, OsState::None},
    {"lse", 0, 0, Reg::Hwcap, 8, OsState::None},
    {"fullfp16", 0, 0, Reg::Hwcap, 10, OsState::None}, // HWCAP_ASIMDHP
    {"fp16", 0, 0, Reg::Hwcap, 10, OsState::None},
    {"rdm", 0, 0, Reg::Hwcap, 12, OsState::None},
    {"dotprod", 0, 0, Reg::Hwcap, 20, OsState::None},
    {"sve", 0, 0, Reg::Hwcap, 22, OsState::None},
    {"sve2", 0, 0, Reg::Hwcap2, 1, OsState::None},
    {"i8mm", 0, 0, Reg::Hwcap2, 13, OsState::None},
    {"bf16", 0, 0, Reg::Hwcap2, 14, OsState::None},
};

template <size_t N> std::string joinNames(const FeatureBit (&table)[N]) {
  std::string list;
  for (const FeatureBit &f : table) {
    if (!list.empty())
      list += ',';
    list += f.name;
  }
  return list;
}

// Built once; static storage so that the C API can return a pointer to it.
const std::string &x86List() {
  static const std::string list = joinNames(x86Features);
  return list;
}
const std::string &aarch64List() {
  static const std::string list = joinNames(aarch64Features);
  return list;
}

#if defined(__x86_64__)
bool cpuSupports(const FeatureBit &f) {
  unsigned maxLeaf = __get_cpuid_max(f.leaf & 0x80000000u, nullptr);
  if (maxLeaf < f.leaf)
    return false;
  unsigned regs[4] = {0, 0, 0, 0};
  __cpuid_count(f.leaf, f.subleaf, regs[0], regs[1], regs[2], regs[3]);
  unsigned value = regs[static_cast<int>(f.reg)];
  if (!((value >> f.bit) & 1u))
    return false;
  if (f.os == OsState::None)
    return true;
  // The OS must have enabled XSAVE and save the registers (XCR0).
  unsigned a, b, c, d;
  __cpuid(1, a, b, c, d);
  if (!((c >> 27) & 1u)) // OSXSAVE
    return false;
  uint32_t xcr0Low, xcr0High;
  __asm__ volatile("xgetbv" : "=a"(xcr0Low), "=d"(xcr0High) : "c"(0));
  const uint32_t avxState = 0x6;     // XMM and YMM
  const uint32_t avx512State = 0xe0; // opmask, ZMM0-15 upper, ZMM16-31
  if ((xcr0Low & avxState) != avxState)
    return false;
  if (f.os == OsState::Avx512 && (xcr0Low & avx512State) != avx512State)
    return false;
  return true;
}
#elif defined(__aarch64__) && defined(__linux__)
bool cpuSupports(const FeatureBit &f) {
  unsigned long word = getauxval(f.reg == Reg::Hwcap2 ? AT_HWCAP2 : AT_HWCAP);
  return (word >> f.bit) & 1ul;
}
#else
bool cpuSupports(const FeatureBit &) { return false; }
#endif

// A model compiled with `--sve-vector-bits=N` runs only where the SVE vector
// length of this thread is N bits: its fixed-length SVE code uses N-bit
// registers. Returns -1 when `feature` is not of that form.
constexpr std::string_view kSveBits = "sve-vector-bits=";

int sveVectorBitsSupported(std::string_view feature) {
  if (feature.substr(0, kSveBits.size()) != kSveBits)
    return -1;
  std::string_view digits = feature.substr(kSveBits.size());
  if (digits.empty() || digits.size() > 5)
    return -1;
  long bits = 0;
  for (char c : digits) {
    if (c < '0' || c > '9')
      return -1;
    bits = bits * 10 + (c - '0');
  }
#if defined(__aarch64__) && defined(__linux__) && defined(PR_SVE_GET_VL)
  int vl = prctl(PR_SVE_GET_VL);
  if (vl < 0)
    return 0; // no SVE
  return (vl & PR_SVE_VL_LEN_MASK) * 8 == bits ? 1 : 0;
#else
  (void)bits;
  return 0;
#endif
}

template <size_t N>
int lookup(const FeatureBit (&table)[N], std::string_view feature) {
  for (const FeatureBit &f : table)
    if (feature == f.name)
      return cpuSupports(f) ? 1 : 0;
  return -1;
}

} // namespace

Arch kiln::runtime::archOfTriple(std::string_view triple) {
  std::string_view arch = triple.substr(0, triple.find('-'));
  if (arch == "x86_64" || arch == "amd64" || arch == "x86-64")
    return Arch::X86_64;
  if (arch == "aarch64" || arch == "arm64")
    return Arch::AArch64;
  return Arch::Unknown;
}

Arch kiln::runtime::hostArch() {
#if defined(__x86_64__)
  return Arch::X86_64;
#elif defined(__aarch64__)
  return Arch::AArch64;
#else
  return Arch::Unknown;
#endif
}

const char *kiln::runtime::archName(Arch arch) {
  switch (arch) {
  case Arch::X86_64:
    return "x86_64";
  case Arch::AArch64:
    return "aarch64";
  case Arch::Unknown:
    break;
  }
  return "unknown";
}

const char *kiln::runtime::knownCpuFeatures(Arch arch) {
  switch (arch) {
  case Arch::X86_64:
    return x86List().c_str();
  case Arch::AArch64:
    return aarch64List().c_str();
  case Arch::Unknown:
    break;
  }
  return "";
}

int kiln::runtime::hostSupportsCpuFeature(std::string_view feature) {
  switch (hostArch()) {
  case Arch::X86_64:
    return lookup(x86Features, feature);
  case Arch::AArch64:
    if (int sve = sveVectorBitsSupported(feature); sve >= 0)
      return sve;
    return lookup(aarch64Features, feature);
  case Arch::Unknown:
    break;
  }
  return -1;
}
