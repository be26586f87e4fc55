//===- ImportRunTimeShapes.h - Shape operands read at run time --*- C++ -*-===//
//
// Operators whose shape operand is a run-time value (a graph input, or data
// computed from one): AffineGrid, Reshape, Squeeze, Unsqueeze, Expand, Tile,
// ConstantOfShape and Range, a Pad's pads and axes, CenterCropPad's shape,
// OneHot's depth, a window function's size, Resize's scales and sizes, and a
// Slice's axes and steps. Each
// result dimension that the operand decides is a size the run decides
// (NodeImporter::setDataDependent), within a bound known when compiling;
// ImportShape.cpp calls these where the operand is neither a constant nor sizes
// of symbolic dimensions.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_IMPORT_IMPORTRUNTIMESHAPES_H
#define KILN_LIB_IMPORT_IMPORTRUNTIMESHAPES_H

#include "lib/Import/NodeImporter.h"

#include <string>

namespace kiln {

/// Whether input `i` of `node` is present and read at run time: not a
/// constant, and not sizes of symbolic dimensions (which the importer
/// follows to static shapes, ImportShapeValues.cpp).
bool isRunTimeShapeOperand(NodeImporter &node, unsigned i);

mlir::LogicalResult importReshapeAtRunTime(NodeImporter &node,
                                           mlir::Value input, bool allowZero);
/// Squeeze (`drop`) or Unsqueeze by axes read at run time.
mlir::LogicalResult importSqueezeOrUnsqueezeAtRunTime(NodeImporter &node,
                                                      mlir::Value input,
                                                      bool drop);
mlir::LogicalResult importExpandAtRunTime(NodeImporter &node,
                                          mlir::Value input);
mlir::LogicalResult importTileAtRunTime(NodeImporter &node, mlir::Value input);
mlir::LogicalResult importConstantOfShapeAtRunTime(NodeImporter &node,
                                                   mlir::Attribute value);
mlir::LogicalResult importRangeAtRunTime(NodeImporter &node);
/// A Pad whose pads or axes are read at run time (modes constant, edge,
/// reflect, wrap).
mlir::LogicalResult importPadAtRunTime(NodeImporter &node, mlir::Value input,
                                       llvm::StringRef mode);
/// An AffineGrid whose size is read at run time: each spatial size is one
/// the run decides.
mlir::LogicalResult importAffineGridAtRunTime(NodeImporter &node,
                                              bool alignCorners);
/// A CenterCropPad whose shape input is read at run time; `axes` are
/// counted from the front.
mlir::LogicalResult importCenterCropPadAtRunTime(NodeImporter &node,
                                                 mlir::Value input,
                                                 llvm::ArrayRef<int64_t> axes);
/// A OneHot whose depth is read at run time; `indices` are integers and
/// `axis` is counted from the front.
mlir::LogicalResult importOneHotAtRunTime(NodeImporter &node,
                                          mlir::Value indices,
                                          mlir::Value values, int64_t axis);
/// A window function (HannWindow, HammingWindow, BlackmanWindow) whose size
/// is read at run time: sum_k terms[k] cos(2 pi k i / N) in `element`.
mlir::LogicalResult importWindowAtRunTime(NodeImporter &node,
                                          llvm::ArrayRef<double> terms,
                                          bool periodic, mlir::Type element);
/// A Resize (or Upsample) by scales or sizes read at run time: what the
/// node says, its operands resolved to these.
struct RunTimeResize {
  /// The scales' or the sizes' operand, and the roi's (tf_crop_and_resize).
  unsigned operand = 2, roi = 1;
  bool bySizes = false;
  /// The resized dimensions, counted from the front.
  llvm::SmallVector<int64_t> axes;
  std::string mode, transform, nearestMode, policy = "stretch";
  double cubicCoeffA = -0.75, extrapolationValue = 0.0;
  bool excludeOutside = false, antialias = false;
  /// Upsample before opset 10: nearest rounds up where a scale shrinks.
  bool nearestByShrink = false;
};
/// Each resized dimension's size is one the run decides; the result is the
/// input times, along each resized dimension, a matrix of weights computed
/// at run time (so its cost grows with the input's and result's sizes).
mlir::LogicalResult importResizeAtRunTime(NodeImporter &node, mlir::Value input,
                                          const RunTimeResize &resize);
/// Operand `operand`'s one entry, an axis of a tensor of `rank`
/// dimensions, counted from the front and checked when the model runs to
/// lie in [0, last] and not to be one of `excluded`.
mlir::Value runTimeAxis(NodeImporter &node, unsigned operand, int64_t rank,
                        int64_t last, llvm::ArrayRef<int64_t> excluded = {});
/// Binds the node's result to candidate `index` (a 0-D i64 read at run
/// time, within range), each candidate padded to the largest shape; the
/// sizes that differ between them are ones the run decides. (An operator
/// whose axis is read at run time: DFT.)
mlir::LogicalResult selectAtRunTime(NodeImporter &node, mlir::Value index,
                                    llvm::ArrayRef<mlir::Value> candidates);
/// A Slice whose axes or steps are read at run time: every dimension of
/// the input may be sliced, so each is a size the run decides.
mlir::LogicalResult importSliceWithRunTimeAxes(NodeImporter &node,
                                               mlir::Value input);

} // namespace kiln

#endif // KILN_LIB_IMPORT_IMPORTRUNTIMESHAPES_H
