//===- ModelFile.cpp - Checking a model file before loading it ------------===//

#include "ModelFile.h"

#include "CpuFeatures.h"
#include "Status.h"

#include "kiln/model_abi.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::runtime {

namespace {

/// Reads `size` bytes at `offset`; false when the file ends before.
bool readAt(int fd, uint64_t offset, void *to, size_t size) {
  auto *bytes = static_cast<char *>(to);
  while (size > 0) {
    ssize_t n = pread(fd, bytes, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    bytes += n;
    offset += static_cast<uint64_t>(n);
    size -= static_cast<size_t>(n);
  }
  return true;
}

/// Whether [offset, offset + count * entry) lies within `fileSize`.
bool within(uint64_t offset, uint64_t count, uint64_t entry,
            uint64_t fileSize) {
  if (entry != 0 && count > fileSize / entry)
    return false;
  uint64_t bytes = count * entry;
  return offset <= fileSize && bytes <= fileSize - offset;
}

uint16_t machineOf(Arch arch) {
  switch (arch) {
  case Arch::X86_64:
    return EM_X86_64;
  case Arch::AArch64:
    return EM_AARCH64;
  default:
    return EM_NONE;
  }
}

const char *machineName(uint16_t machine) {
  switch (machine) {
  case EM_X86_64:
    return "x86-64";
  case EM_AARCH64:
    return "AArch64";
  case EM_386:
    return "x86 (32-bit)";
  case EM_ARM:
    return "32-bit Arm";
  case EM_RISCV:
    return "RISC-V";
  case EM_PPC64:
    return "POWER";
  default:
    return "another machine";
  }
}

} // namespace

kiln_status checkModelFile(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return makeStatus(KILN_STATUS_IO, "cannot open model '%s': %s", path,
                      std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  struct stat info;
  if (fstat(fd, &info) != 0)
    return makeStatus(KILN_STATUS_IO, "cannot open model '%s': %s", path,
                      std::strerror(errno));
  uint64_t size = static_cast<uint64_t>(info.st_size);
  auto damaged = [&](const char *what) {
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "model '%s' is truncated or damaged: %s (the file has "
                      "%llu bytes); copy it again or recompile it",
                      path, what, static_cast<unsigned long long>(size));
  };
  Elf64_Ehdr header;
  unsigned char ident[EI_NIDENT] = {0};
  if (!readAt(fd, 0, ident, sizeof(ident)) ||
      std::memcmp(ident, ELFMAG, SELFMAG) != 0)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "cannot load model '%s': not a shared object (no ELF "
                      "header)",
                      path);
  if (ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB)
    return makeStatus(KILN_STATUS_UNSUPPORTED_CPU,
                      "model '%s' is not a 64-bit little-endian shared "
                      "object, as Kiln models for this machine are",
                      path);
  if (!readAt(fd, 0, &header, sizeof(header)))
    return damaged("the ELF header ends early");
  if (header.e_type != ET_DYN)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "cannot load model '%s': an ELF file that is not a "
                      "shared object",
                      path);
  uint16_t host = machineOf(hostArch());
  if (header.e_machine != host)
    return makeStatus(KILN_STATUS_UNSUPPORTED_CPU,
                      "model '%s' was compiled for %s, but this machine is %s",
                      path, machineName(header.e_machine), machineName(host));
  // The seal kiln-compile appended (include/kiln/model_abi.h): its last 32
  // bytes, then the checksum of everything before them. Checked before the
  // structure, whose damage could make a sealed file look like one without
  // a seal; a file without one (cut short, or made by a Kiln before seals)
  // is refused.
  kiln_abi_seal seal;
  if (size < sizeof(Elf64_Ehdr) + sizeof(seal) ||
      !readAt(fd, size - sizeof(seal), &seal, sizeof(seal)) ||
      std::memcmp(seal.magic, KILN_ABI_SEAL_MAGIC, sizeof(seal.magic)) != 0 ||
      seal.version != KILN_ABI_SEAL_VERSION || seal.reserved != 0 ||
      seal.size != size - sizeof(seal))
    return damaged("it does not end in a whole Kiln seal (a model kiln-compile "
                   "wrote does; one of a Kiln before seals must be "
                   "recompiled)");
  // Mapped, not copied: the loader maps the same pages next.
  void *data = mmap(nullptr, seal.size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (data == MAP_FAILED)
    return makeStatus(KILN_STATUS_IO, "cannot read model '%s' to check it: %s",
                      path, std::strerror(errno));
  uint64_t checksum = kiln_abi_checksum(data, seal.size);
  munmap(data, seal.size);
  if (checksum != seal.checksum)
    return damaged("its checksum does not match what kiln-compile recorded");

  // The structure, within the sealed bytes: a file sealed by another tool
  // than kiln-compile must hold together too.
  uint64_t object = seal.size;
  if (header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum == 0)
    return damaged("its program header table is malformed");
  if (!within(header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr), object))
    return damaged("its program header table lies past the end");
  if (header.e_shnum != 0 &&
      (header.e_shentsize != sizeof(Elf64_Shdr) ||
       !within(header.e_shoff, header.e_shnum, sizeof(Elf64_Shdr), object)))
    return damaged("its section header table lies past the end");
  std::vector<Elf64_Phdr> segments(header.e_phnum);
  if (!readAt(fd, header.e_phoff, segments.data(),
              segments.size() * sizeof(Elf64_Phdr)))
    return damaged("its program header table lies past the end");
  bool loads = false;
  for (const Elf64_Phdr &segment : segments) {
    if (segment.p_type != PT_LOAD && segment.p_type != PT_DYNAMIC)
      continue;
    loads = loads || segment.p_type == PT_LOAD;
    if (!within(segment.p_offset, 1, segment.p_filesz, object) ||
        segment.p_filesz > segment.p_memsz)
      return damaged("a segment lies past the end");
  }
  if (!loads)
    return damaged("it has no loadable segment");
  return nullptr;
}

} // namespace kiln::runtime
