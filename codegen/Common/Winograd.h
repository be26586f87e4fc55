//===- Winograd.h - Winograd minimal filtering transforms -------*- C++ -*-===//
//
// The matrices of Winograd's minimal filtering algorithm F(m, r) (S.
// Winograd, "Arithmetic Complexity of Computations", 1980; for convolutional
// networks, A. Lavin and S. Gray, "Fast Algorithms for Convolutional Neural
// Networks", CVPR 2016): for a tile d of alpha = m + r - 1 inputs and a filter
// g of r taps, the m outputs of the correlation y[t] = sum_k g[k] d[t + k] are
//
//   y = AT * ((G * g) .* (BT * d))
//
// and in two dimensions Y = AT * ((G g G^T) .* (BT d B)) * A.
//
// Kiln builds the matrices from interpolation points by the Toom-Cook
// construction instead of keeping tables: with finite points p_0..p_{alpha-2}
// and the point at infinity,
// clang-format off
//   G[i][k]   = p_i^k / f_i,  f_i = prod_{l != i} (p_i - p_l);  G[last] = e_{r-1}
//   BT[i][j]  = coefficient of x^j in prod_{l != i} (x - p_l)
//   BT[last][j] = coefficient of x^j in prod_l (x - p_l)
//   AT[t][i]  = p_i^t;  AT[t][last] = (t == m - 1)
// clang-format on
// that is, evaluation of the filter and the tile polynomials, and Lagrange
// interpolation transposed (a correlation is the transpose of a linear
// convolution).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_COMMON_WINOGRAD_H
#define KILN_CODEGEN_COMMON_WINOGRAD_H

#include <vector>

namespace kiln::codegen {

/// F(m, r): row-major matrices in double precision.
struct WinogradTransform {
  int m = 0;
  int r = 0;
  int alpha = 0;          ///< m + r - 1, the input tile size
  std::vector<double> bt; ///< alpha x alpha: input transform
  std::vector<double> g;  ///< alpha x r: filter transform
  std::vector<double> at; ///< m x alpha: output transform
};

/// The transform for an m-output tile and an r-tap filter. The points are 0,
/// 1, -1, 2, -2, 1/2, -1/2, ... (the first alpha - 1 of them), which keep the
/// matrices' entries small; alpha may be at most 8.
WinogradTransform winogradTransform(int m, int r);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_COMMON_WINOGRAD_H
