//===- Options.cpp - The spellings of kiln-compile's enumerated options ---===//
//
// One table per enumerated option of include/kiln/compiler.h: kiln-compile
// parses its flags with it, the Python package its keywords, and the tuner
// lists its choices from it (optionValues). The convolution algorithms are
// the code generator's own list.
//
//===----------------------------------------------------------------------===//

#include "kiln/compiler.h"

#include "codegen/Utils/Utils.h"

#include <utility>

namespace kiln {
namespace {

template <typename Enum>
using Table = std::vector<std::pair<std::string, Enum>>;

const Table<EmitStage> &emitStages() {
  static const Table<EmitStage> table = {
      {"imported", EmitStage::Imported}, {"graph", EmitStage::Graph},
      {"linalg", EmitStage::Linalg},     {"kernels", EmitStage::Kernels},
      {"llvm", EmitStage::LLVM},         {"llvm-ir", EmitStage::LLVMIR},
      {"asm", EmitStage::Assembly},      {"obj", EmitStage::Object},
      {"so", EmitStage::SharedObject},   {"ptx", EmitStage::PTX}};
  return table;
}

const Table<Layout> &layouts() {
  static const Table<Layout> table = {{"auto", Layout::Auto},
                                      {"blocked", Layout::Blocked},
                                      {"nc1hwc0", Layout::NC1HWC0},
                                      {"nchw", Layout::NCHW}};
  return table;
}

const Table<BatchSplit> &batchSplits() {
  static const Table<BatchSplit> table = {{"auto", BatchSplit::Auto},
                                          {"on", BatchSplit::On},
                                          {"off", BatchSplit::Off}};
  return table;
}

template <typename Enum>
std::optional<Enum> parse(const Table<Enum> &table, const std::string &name) {
  for (const auto &[spelling, value] : table)
    if (spelling == name)
      return value;
  return std::nullopt;
}

template <typename Enum>
std::string spellIn(const Table<Enum> &table, Enum value) {
  for (const auto &[spelling, entry] : table)
    if (entry == value)
      return spelling;
  return "?";
}

template <typename Enum>
std::vector<std::string> names(const Table<Enum> &table) {
  std::vector<std::string> result;
  for (const auto &entry : table)
    result.push_back(entry.first);
  return result;
}

} // namespace

std::vector<std::string> optionValues(const std::string &option) {
  if (option == "emit")
    return names(emitStages());
  if (option == "layout")
    return names(layouts());
  if (option == "batch-split")
    return names(batchSplits());
  if (option == "conv-algorithm") {
    std::vector<std::string> result = {"auto"};
    for (llvm::StringRef name : codegen::convAlgorithmNames())
      result.push_back(name.str());
    return result;
  }
  return {};
}

std::optional<EmitStage> parseEmitStage(const std::string &name) {
  return parse(emitStages(), name);
}
std::optional<Layout> parseLayout(const std::string &name) {
  return parse(layouts(), name);
}
std::optional<BatchSplit> parseBatchSplit(const std::string &name) {
  return parse(batchSplits(), name);
}
std::string spell(EmitStage stage) { return spellIn(emitStages(), stage); }
std::string spell(Layout layout) { return spellIn(layouts(), layout); }
std::string spell(BatchSplit split) { return spellIn(batchSplits(), split); }

} // namespace kiln
