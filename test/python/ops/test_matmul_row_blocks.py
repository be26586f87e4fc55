"""Matrix products whose weights do not stay in cache, in the orders of
kiln-cpu-tile-and-vectorize that keep them from streaming more than once.

With more rows than columns, the rows run in blocks (rowBlock): each
block's rows stay in cache while the weights stream once per block, the
epilogue fused, and the rows that make no whole block run as one more.
With fewer, the columns of tiles go outside, and the rows left over from
whole row tiles (a ViT's 197 tokens: 192 and 5) run inside each column
after its row tiles (rowRemainderInColumns), not as a product of their own
that streams the weights again.

Every case matches onnxruntime, with and without an epilogue (bias and a
residual sum), at one and two threads: blocks that divide the rows, a
remainder, the batched form a transformer at batch 8 has ([8, S, K] x
[K, N]); left-over rows with columns in whole tiles of two vectors, with
one-vector tiles and left-over columns, and with a leading unit batch."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from kiln_testing import assert_matches_onnxruntime

rng = np.random.default_rng(19)


def product(lhs_shape, k, n, epilogue):
    weight = numpy_helper.from_array(
        (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32), "w")
    bias = numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "b")
    out_shape = [*lhs_shape[:-1], n]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="matmul")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, lhs_shape)]
    inits = [weight]
    if epilogue:
        nodes += [helper.make_node("Add", ["m", "b"], ["biased"], name="bias"),
                  helper.make_node("Add", ["biased", "r"], ["y"], name="residual")]
        inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, out_shape))
        inits.append(bias)
    else:
        nodes.append(helper.make_node("Identity", ["m"], ["y"], name="out"))
    graph = helper.make_graph(
        nodes, "rows", inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    onnx.checker.check_model(model)
    return model, out_shape


@pytest.mark.parametrize("lhs_shape", [
    [600, 1024],     # 75 row tiles: blocks of 15 tiles divide them
    [1000, 1024],    # 125 row tiles: blocks of 16, and 13 tiles left over
    [8, 197, 1024],  # a batch of 8 sequences of 197 tokens: 1576 rows
], ids=["divides", "remainder", "batched-197"])
@pytest.mark.parametrize("epilogue", [False, True], ids=["plain", "bias-residual"])
@pytest.mark.parametrize("threads", [1, 2])
def test_row_blocks_match_onnxruntime(tmp_path, lhs_shape, epilogue, threads):
    model, out_shape = product(lhs_shape, 1024, 256, epilogue)
    feeds = {"x": rng.standard_normal(lhs_shape).astype(np.float32)}
    if epilogue:
        feeds["r"] = rng.standard_normal(out_shape).astype(np.float32)
    assert_matches_onnxruntime(model, feeds, tmp_path, rtol=1e-4, atol=1e-4,
                               threads=threads)


@pytest.mark.parametrize("lhs_shape,n", [
    ([197, 512], 1024),     # 24 tiles of 8 rows and 5 rows; 32 columns of tiles
    ([61, 512], 1050),      # 7 tiles and 5 rows; one-vector tiles, 10 columns left
    ([1, 197, 512], 1024),  # the batch of one a ViT has
], ids=["197", "61-narrow", "unit-batch"])
@pytest.mark.parametrize("epilogue", [False, True], ids=["plain", "bias-residual"])
@pytest.mark.parametrize("threads", [1, 2])
def test_row_remainder_in_columns_matches_onnxruntime(tmp_path, lhs_shape, n,
                                                      epilogue, threads):
    model, out_shape = product(lhs_shape, 512, n, epilogue)
    feeds = {"x": rng.standard_normal(lhs_shape).astype(np.float32)}
    if epilogue:
        feeds["r"] = rng.standard_normal(out_shape).astype(np.float32)
    assert_matches_onnxruntime(model, feeds, tmp_path, rtol=1e-4, atol=1e-4,
                               threads=threads)
