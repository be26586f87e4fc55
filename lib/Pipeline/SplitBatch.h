//===- SplitBatch.h - Run a batch as one sample at a time -------*- C++ -*-===//

#ifndef KILN_LIB_PIPELINE_SPLITBATCH_H
#define KILN_LIB_PIPELINE_SPLITBATCH_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

enum class BatchSplitMode { Auto, On, Off };

struct BatchSplit {
  /// How many times the model's entry runs per call, each on the next
  /// sample of every input and output: the batch where the function now
  /// takes one sample, else 1.
  int64_t repeat = 1;
  /// Why, for kiln-compile --report.
  std::string reason;
  /// Where split: the bytes of one sample of each of the entry's arguments
  /// and results, in order.
  std::vector<uint64_t> argumentBytes, resultBytes;
};

/// Makes `main`, a graph-dialect function whose inputs and outputs all
/// lead with the same batch N > 1, take one sample instead (every value
/// that depends on an input gets batch 1), where each of its ops treats the
/// samples of a batch apart: convolutions, pools, elementwise ops, concats
/// and softmaxes away from the batch, matmuls with the batch in their
/// rows, reshapes that keep it. The caller then runs it N times. Auto
/// does so where the activations of the whole batch outgrow the cache and
/// outweigh the weights (see the definition); On wherever the ops allow;
/// Off never. `main` is left as it was where the result's repeat is 1.
BatchSplit splitBatch(mlir::func::FuncOp main, BatchSplitMode mode);

} // namespace kiln

#endif // KILN_LIB_PIPELINE_SPLITBATCH_H
