//===- SelectConvAlgorithm.cpp - One algorithm per convolution ------------===//
//
// Every 2-D convolution gets `kiln.conv_algorithm`: "im2col" (a copy and one
// large contraction, kiln-cpu-conv-to-im2col), "winograd-2x3",
// "winograd-4x3" or "winograd-6x3" (kiln-cpu-conv-to-winograd, 3x3 stride-1
// layers with constant weights), or "direct" (the convolution's own loop
// nest). A layer named in the overrides gets what they say; the others get
// the default, or with "auto" the cheapest by a cost model of the target.
//
// The cost model counts, per algorithm, the multiply-adds of the
// contractions, which run register-blocked at the target's vector speed, and
// the work of the copies and transforms, which run as plain loops at a
// fraction of it (kTransformCost, measured: docs/performance.md). A
// contraction pays for whole vectors along its vector dimension, which is
// what keeps Winograd off maps with few tiles, and im2col off 7x7 maps.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Passes.h"

#include "codegen/CPU/KernelConfig.h"

#include "mlir/IR/Location.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_CPUSELECTCONVALGORITHM
#include "codegen/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace kiln::cpu {

std::string convLayerName(Operation *op, unsigned index) {
  std::string name;
  op->getLoc()->walk([&](Location loc) {
    if (auto named = dyn_cast<NameLoc>(loc)) {
      // The importer names nodes "NAME (OpType)".
      name = named.getName().getValue().split(" (").first.str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name.empty() ? "conv#" + std::to_string(index) : name;
}

ArrayRef<StringLiteral> convAlgorithmNames() {
  static constexpr StringLiteral names[] = {"im2col", "direct", "winograd-2x3",
                                            "winograd-4x3", "winograd-6x3"};
  return names;
}

bool isConvAlgorithmName(StringRef name) {
  return llvm::is_contained(convAlgorithmNames(), name);
}

namespace {

// Relative cost of one multiply-add in a copy or transform loop, against one
// in a register-blocked contraction: fitted by least squares to 16 measured
// layers and algorithms (docs/performance.md, "Convolution algorithms").
constexpr double kTransformCost = 20.0;
// The loop path of a convolution ("direct") against a blocked contraction.
constexpr double kDirectCost = 6.0;

/// Multiply-add time of a contraction whose vector dimension is `width`
/// elements wide, as kiln-cpu-tile-and-vectorize blocks it: every vector
/// costs the same whether all its lanes are used or not.
double contractionCost(double macs, int64_t width, int64_t vectorWidth) {
  double vectors = static_cast<double>(llvm::divideCeil(width, vectorWidth));
  return macs / static_cast<double>(width) * vectors *
         static_cast<double>(vectorWidth);
}

struct Estimate {
  std::string algorithm;
  double cost;
};

SmallVector<Estimate> estimate(linalg::Conv2DNchwFchwOp conv,
                               int64_t vectorWidth) {
  auto input = cast<RankedTensorType>(conv.getInputs()[0].getType());
  auto filter = cast<RankedTensorType>(conv.getInputs()[1].getType());
  auto output = cast<RankedTensorType>(conv.getOutputs()[0].getType());
  double n = input.getDimSize(0), c = input.getDimSize(1);
  double k = filter.getDimSize(0);
  double taps = filter.getDimSize(2) * filter.getDimSize(3);
  int64_t h = output.getDimSize(2), w = output.getDimSize(3);
  double pixels = n * h * w;

  SmallVector<Estimate> estimates;
  double im2col = contractionCost(k * c * taps * pixels, h * w, vectorWidth);
  if (taps != 1)
    im2col += kTransformCost * c * taps * pixels / 4; // a copy, no arithmetic
  estimates.push_back({"im2col", im2col});
  estimates.push_back({"direct", kDirectCost * k * c * taps * pixels});
  if (!isWinogradCandidate(conv))
    return estimates;
  for (int64_t m : {2, 4, 6}) {
    double a = m + 2;
    int64_t tiles = llvm::divideCeil(h, m) * llvm::divideCeil(w, m);
    double p = n * tiles;
    double products = contractionCost(a * a * k * c * p, tiles, vectorWidth);
    double inputTransform = 2 * a * a * a * c * p;
    double outputTransform = (m * a * a + m * m * a) * k * p;
    estimates.push_back(
        {"winograd-" + std::to_string(m) + "x3",
         products + kTransformCost * (inputTransform + outputTransform)});
  }
  return estimates;
}

struct CPUSelectConvAlgorithmPass
    : impl::CPUSelectConvAlgorithmBase<CPUSelectConvAlgorithmPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (algorithm != "auto" && !isConvAlgorithmName(algorithm)) {
      func.emitError("unknown convolution algorithm '")
          << algorithm.getValue() << "' (expected auto, im2col, direct, "
          << "winograd-2x3, winograd-4x3 or winograd-6x3)";
      return signalPassFailure();
    }
    llvm::StringMap<std::string> perLayer;
    for (const std::string &entry : overrides) {
      auto [layer, choice] = StringRef(entry).rsplit('=');
      if (layer.empty() || choice.empty() || !isConvAlgorithmName(choice)) {
        func.emitError("bad convolution algorithm override '")
            << entry << "' (expected LAYER=ALGORITHM with im2col, direct, "
            << "winograd-2x3, winograd-4x3 or winograd-6x3)";
        return signalPassFailure();
      }
      perLayer[layer] = choice.str();
    }

    llvm::StringSet<> used;
    SmallVector<Attribute> report;
    unsigned index = 0;
    bool failedLayer = false;
    func.walk([&](linalg::Conv2DNchwFchwOp conv) {
      std::string layer = convLayerName(conv, index++);
      SmallVector<Estimate> estimates = estimate(conv, vectorWidth);
      std::string chosen;
      std::string why;
      std::optional<std::string> tuned = KernelConfig::get(conv).algorithm;
      if (auto it = perLayer.find(layer); it != perLayer.end()) {
        used.insert(layer);
        chosen = it->second;
        why = "override";
      } else if (tuned) {
        chosen = *tuned;
        why = "tuning db";
      } else if (algorithm != "auto") {
        chosen = algorithm;
        why = "default";
        // A default that cannot apply to this layer falls back to auto.
        if (winogradTileOf(chosen) && !isWinogradCandidate(conv))
          chosen.clear();
      }
      if (chosen.empty()) {
        const Estimate *best = &estimates.front();
        for (const Estimate &e : estimates)
          if (e.cost < best->cost)
            best = &e;
        chosen = best->algorithm;
        why = "cost model";
      }
      if (winogradTileOf(chosen) && !isWinogradCandidate(conv)) {
        conv.emitOpError("layer '")
            << layer << "' cannot use " << chosen
            << ": Winograd needs a 3x3, stride-1, undilated f32 convolution "
               "with static shapes and constant weights";
        failedLayer = true;
        return;
      }
      conv->setAttr(kConvAlgorithmAttr,
                    StringAttr::get(conv.getContext(), chosen));

      std::string line;
      llvm::raw_string_ostream os(line);
      auto input = cast<RankedTensorType>(conv.getInputs()[0].getType());
      auto filter = cast<RankedTensorType>(conv.getInputs()[1].getType());
      auto output = cast<RankedTensorType>(conv.getOutputs()[0].getType());
      os << layer << ": " << chosen << " (" << why << "; "
         << input.getDimSize(1) << "->" << output.getDimSize(1) << " channels, "
         << filter.getDimSize(2) << "x" << filter.getDimSize(3) << ", "
         << output.getDimSize(2) << "x" << output.getDimSize(3)
         << " output; estimates";
      for (const Estimate &e : estimates)
        os << " " << e.algorithm << "=" << llvm::format("%.3g", e.cost * 1e-6);
      os << ")";
      report.push_back(StringAttr::get(conv.getContext(), line));
    });
    if (failedLayer)
      return signalPassFailure();
    for (const auto &entry : perLayer)
      if (!used.contains(entry.getKey())) {
        func.emitError("no convolution named '")
            << entry.getKey() << "' for the algorithm override (--report "
            << "lists the layers)";
        return signalPassFailure();
      }
    if (!report.empty())
      func->setAttr(kConvReportAttr, ArrayAttr::get(func.getContext(), report));
  }
};

} // namespace
} // namespace kiln::cpu
