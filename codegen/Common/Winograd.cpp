//===- Winograd.cpp - Winograd minimal filtering transforms ---------------===//

#include "codegen/Common/Winograd.h"

#include <cassert>
#include <cstddef>

namespace kiln::codegen {

namespace {

/// Coefficients, lowest power first, of prod (x - p) over `points` except
/// the one at `skip` (none when skip < 0).
std::vector<double> productPolynomial(const std::vector<double> &points,
                                      int skip) {
  std::vector<double> poly = {1.0};
  for (int l = 0; l < static_cast<int>(points.size()); ++l) {
    if (l == skip)
      continue;
    std::vector<double> next(poly.size() + 1, 0.0);
    for (std::size_t j = 0; j < poly.size(); ++j) {
      next[j + 1] += poly[j];
      next[j] -= points[l] * poly[j];
    }
    poly = std::move(next);
  }
  return poly;
}

double power(double x, int n) {
  double result = 1.0;
  for (int i = 0; i < n; ++i)
    result *= x;
  return result;
}

} // namespace

WinogradTransform winogradTransform(int m, int r) {
  static const double allPoints[] = {0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5};
  WinogradTransform t;
  t.m = m;
  t.r = r;
  t.alpha = m + r - 1;
  int finite = t.alpha - 1;
  assert(m >= 1 && r >= 1 && finite <= 7 && "alpha must be at most 8");
  std::vector<double> points(allPoints, allPoints + finite);
  int alpha = t.alpha;

  t.g.assign(alpha * r, 0.0);
  t.bt.assign(alpha * alpha, 0.0);
  t.at.assign(m * alpha, 0.0);
  for (int i = 0; i < finite; ++i) {
    double f = 1.0;
    for (int l = 0; l < finite; ++l)
      if (l != i)
        f *= points[i] - points[l];
    for (int k = 0; k < r; ++k)
      t.g[i * r + k] = power(points[i], k) / f;
    std::vector<double> poly = productPolynomial(points, i);
    for (std::size_t j = 0; j < poly.size(); ++j)
      t.bt[i * alpha + j] = poly[j];
    for (int row = 0; row < m; ++row)
      t.at[row * alpha + i] = power(points[i], row);
  }
  // The point at infinity: the leading coefficients.
  t.g[finite * r + (r - 1)] = 1.0;
  std::vector<double> full = productPolynomial(points, -1);
  for (std::size_t j = 0; j < full.size(); ++j)
    t.bt[finite * alpha + j] = full[j];
  t.at[(m - 1) * alpha + finite] = 1.0;
  return t;
}

} // namespace kiln::codegen
