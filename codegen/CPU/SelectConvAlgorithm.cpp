//===- SelectConvAlgorithm.cpp - One algorithm per convolution ------------===//
//
// Every 2-D convolution gets `kiln.conv_algorithm`: "im2col" (a copy and one
// large contraction, kiln-codegen-conv-to-im2col), "winograd-2x3",
// "winograd-4x3" or "winograd-6x3" (kiln-codegen-conv-to-winograd, 3x3 stride-1
// layers with constant weights), or "direct" (the convolution's own loop
// nest; in the blocked layout, register-blocked output tiles that keep
// their accumulators for the whole window, kiln-cpu-tile-and-vectorize). A
// blocked convolution runs direct or Winograd. A layer named in the
// overrides gets what they say; the others get the default, or with "auto"
// the cheapest by a cost model of the target.
//
// The cost model counts, per algorithm, the multiply-adds of the
// contractions, which run register-blocked at the target's vector speed, the
// work of the copies and transforms, which run as plain loops at a fraction
// of it (transform-cost, measured: docs/performance.md), and the reading of
// the (transformed) filter from memory (weight-cost), and Winograd's
// transformed tensors where they outgrow the cache (spill-cost). The
// constants are the target's (TargetInfo::convCosts), given as options. A
// contraction pays for whole vectors along its vector dimension, which is
// what keeps Winograd off maps with few tiles, and im2col off 7x7 maps.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Passes.h"

#include "codegen/Common/BlockedConv.h"
#include "codegen/Common/KernelConfig.h"

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

namespace {

/// The target's cost model (TargetInfo::convCosts, through the pass's
/// options; the values and where they come from are documented there), in
/// multiply-adds of a register-blocked contraction.
struct CostModel {
  /// One multiply-add in a copy or transform loop (NCHW).
  double transform;
  /// One multiply-add of the loop path of a convolution ("direct", NCHW).
  double direct;
  /// Loading and storing one output element's accumulators once (the
  /// blocked direct convolution's pass over the output).
  double pass;
  /// Winograd's transforms in the blocked layout, per multiply-add: F(2,3),
  /// and F(4,3) and F(6,3).
  double blockedTransformF2, blockedTransform;
  /// Reading one float of a filter from memory.
  double weight;
  /// Winograd's transformed tensors stay in cache up to this many floats;
  /// each float beyond costs `spill`.
  double winogradCachedFloats;
  double spill;

  double blockedTransformCost(int64_t m) const {
    return m == 2 ? blockedTransformF2 : blockedTransform;
  }
};

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

/// A convolution as the selection sees it, in either layout.
struct Candidate {
  Operation *op;
  bool blocked;
  bool winograd; ///< whether Winograd applies
  SmallVector<Estimate> estimates;
  std::string shape; ///< "C->K channels, khxkw, OHxOW output"
};

/// The Winograd estimates of a 3x3 layer of `c` to `k` channels with an
/// output of n x h x w, whose products have their vectors along `width`
/// elements of `products(tiles)`.
void addWinogradEstimates(SmallVector<Estimate> &estimates,
                          const CostModel &costs, double n, double c, double k,
                          int64_t h, int64_t w,
                          function_ref<double(double, int64_t)> products,
                          function_ref<double(int64_t)> transformCost) {
  for (int64_t m : {2, 4, 6}) {
    double a = m + 2;
    int64_t tiles = llvm::divideCeil(h, m) * llvm::divideCeil(w, m);
    double p = n * tiles;
    double inputTransform = 2 * a * a * a * c * p;
    double outputTransform = (m * a * a + m * m * a) * k * p;
    // The transformed input and output, written by one loop nest and read
    // by the next, leave the cache on a large map or batch.
    double transformed = a * a * p * (c + k);
    double spilled = std::max(0.0, transformed - costs.winogradCachedFloats);
    estimates.push_back(
        {"winograd-" + std::to_string(m) + "x3",
         products(a * a * k * c * p, tiles) +
             transformCost(m) * (inputTransform + outputTransform) +
             costs.weight * a * a * k * c + costs.spill * spilled});
  }
}

std::string describeShape(int64_t c, int64_t k, int64_t kh, int64_t kw,
                          int64_t h, int64_t w) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << c << "->" << k << " channels, " << kh << "x" << kw << ", " << h << "x"
     << w << " output";
  return text;
}

Candidate estimate(linalg::Conv2DNchwFchwOp conv, int64_t vectorWidth,
                   const CostModel &costs) {
  auto input = cast<RankedTensorType>(conv.getInputs()[0].getType());
  auto filter = cast<RankedTensorType>(conv.getInputs()[1].getType());
  auto output = cast<RankedTensorType>(conv.getOutputs()[0].getType());
  double n = input.getDimSize(0), c = input.getDimSize(1);
  double k = filter.getDimSize(0);
  double taps = filter.getDimSize(2) * filter.getDimSize(3);
  int64_t h = output.getDimSize(2), w = output.getDimSize(3);
  double pixels = n * h * w;

  Candidate candidate{conv,
                      /*blocked=*/false,
                      isWinogradCandidate(conv),
                      {},
                      describeShape(input.getDimSize(1), filter.getDimSize(0),
                                    filter.getDimSize(2), filter.getDimSize(3),
                                    h, w)};
  SmallVector<Estimate> &estimates = candidate.estimates;
  double weights = costs.weight * k * c * taps;
  double im2col =
      contractionCost(k * c * taps * pixels, h * w, vectorWidth) + weights;
  if (taps != 1)
    im2col += costs.transform * c * taps * pixels / 4; // a copy, no arithmetic
  estimates.push_back({"im2col", im2col});
  estimates.push_back(
      {"direct", costs.direct * k * c * taps * pixels + weights});
  if (candidate.winograd)
    addWinogradEstimates(
        estimates, costs, n, c, k, h, w,
        [&](double macs, int64_t tiles) {
          return contractionCost(macs, tiles, vectorWidth);
        },
        [&](int64_t) { return costs.transform; });
  return candidate;
}

/// A blocked convolution: channels count whole blocks, and every contraction
/// has the output's block as its vector dimension.
Candidate estimate(const BlockedConv &conv, int64_t vectorWidth,
                   const CostModel &costs) {
  ArrayRef<int64_t> out = conv.outputShape;
  double n = out[0], k = out[1] * out[4];
  double c = conv.inputShape[1] * conv.inputShape[4];
  // A grouped one reads its group's channels only.
  double groupChannels = c / conv.groups;
  double taps = conv.kernelHeight() * conv.kernelWidth();
  int64_t h = out[2], w = out[3];
  double pixels = n * h * w;
  int64_t block = out[4];

  Candidate candidate{
      conv.op,
      /*blocked=*/true,
      isWinogradCandidate(conv),
      {},
      describeShape(static_cast<int64_t>(c), static_cast<int64_t>(k),
                    conv.kernelHeight(), conv.kernelWidth(), h, w) +
          ", blocked c=" + std::to_string(block) +
          (conv.groups > 1
               ? ", " + std::to_string(conv.groups) + " groups of whole blocks"
               : "") +
          (conv.group == 4   ? ", int8 dot products"
           : conv.group == 2 ? ", bf16 dot products"
                             : "")};
  SmallVector<Estimate> &estimates = candidate.estimates;
  estimates.push_back(
      {"direct",
       contractionCost(k * groupChannels * taps * pixels, block, vectorWidth) +
           costs.pass * k * pixels + costs.weight * k * groupChannels * taps});
  if (candidate.winograd)
    addWinogradEstimates(
        estimates, costs, n, c, k, h, w,
        [&](double macs, int64_t) {
          return contractionCost(macs, block, vectorWidth);
        },
        [&](int64_t m) { return costs.blockedTransformCost(m); });
  return candidate;
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
    SmallVector<Candidate> candidates;
    CostModel costs{transformCost,
                    directCost,
                    passCost,
                    blockedTransformCostF2,
                    blockedTransformCost,
                    weightCost,
                    double(winogradCachedFloats),
                    spillCost};
    func.walk([&](linalg::LinalgOp op) {
      if (auto conv = dyn_cast<linalg::Conv2DNchwFchwOp>(op.getOperation()))
        candidates.push_back(estimate(conv, vectorWidth, costs));
      else if (std::optional<BlockedConv> blocked = matchBlockedConv(op))
        candidates.push_back(estimate(*blocked, vectorWidth, costs));
    });
    for (Candidate &candidate : candidates) {
      Operation *conv = candidate.op;
      std::string layer = convLayerName(conv, index++);
      SmallVector<Estimate> &estimates = candidate.estimates;
      auto applies = [&](StringRef name) {
        return llvm::any_of(
            estimates, [&](const Estimate &e) { return e.algorithm == name; });
      };
      std::string chosen;
      std::string why;
      std::optional<ConvAlgorithm> tuned =
          KernelConfigAttr::of(conv).getAlgorithm();
      if (auto it = perLayer.find(layer); it != perLayer.end()) {
        used.insert(layer);
        chosen = it->second;
        why = "override";
      } else if (tuned) {
        chosen = stringifyConvAlgorithm(*tuned);
        why = "tuning db";
      } else if (algorithm != "auto") {
        chosen = algorithm;
        why = "default";
        // A default that cannot apply to this layer falls back to auto.
        if (!applies(chosen))
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
      if (!applies(chosen)) {
        if (winogradTileOf(chosen))
          conv->emitOpError("layer '")
              << layer << "' cannot use " << chosen
              << ": Winograd needs a 3x3, stride-1, undilated f32 "
                 "convolution with static shapes and constant weights";
        else
          conv->emitOpError("layer '")
              << layer << "' cannot use " << chosen
              << ": a convolution in the blocked layout runs direct or "
                 "Winograd (--layout=nchw for im2col)";
        failedLayer = true;
        continue;
      }
      conv->setAttr(kConvAlgorithmAttr,
                    ConvAlgorithmAttr::get(conv->getContext(),
                                           *symbolizeConvAlgorithm(chosen)));

      std::string line;
      llvm::raw_string_ostream os(line);
      os << layer << ": " << chosen << " (" << why << "; " << candidate.shape
         << "; estimates";
      for (const Estimate &e : estimates)
        os << " " << e.algorithm << "=" << llvm::format("%.3g", e.cost * 1e-6);
      os << ")";
      report.push_back(StringAttr::get(conv->getContext(), line));
    }
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
