"""End-to-end tests of the NN operators (convolutions, matrix products, pooling,
normalizations) against onnxruntime.

Each test builds a one-node ONNX model, compiles it with kiln-compile, runs it
with kiln-run and compares every output with onnxruntime (dtype, shape, values).
"""

import re
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from kiln_testing import KilnError, assert_matches_onnxruntime, compile_model

RNG = np.random.default_rng(0)

NP_TO_ONNX = {
    np.float32: TensorProto.FLOAT,
    np.float16: TensorProto.FLOAT16,
    np.int32: TensorProto.INT32,
    np.int64: TensorProto.INT64,
    np.uint8: TensorProto.UINT8,
}


def data(shape, dtype=np.float32):
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(0 if dtype == np.uint8 else -10, 10, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def model(op, inputs, attrs=None, consts=None, opset=17, names=None, outputs=("y",)):
    """A one-node model: `inputs` are fed at run time, `consts` are
    initializers; `names` lists the node's inputs in order when some are
    left empty."""
    consts = consts or {}
    names = names if names is not None else list(inputs) + list(consts)
    node = helper.make_node(op, names, list(outputs), **(attrs or {}))
    graph_inputs = [helper.make_tensor_value_info(n, NP_TO_ONNX[v.dtype.type], v.shape)
                    for n, v in inputs.items()]
    graph_outputs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None)
                     for o in outputs]
    inits = [numpy_helper.from_array(v, n) for n, v in consts.items()]
    graph = helper.make_graph([node], op.lower(), graph_inputs, graph_outputs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m, strict_mode=True)


def check(m, feeds, tmp_path, **kw):
    return assert_matches_onnxruntime(m, feeds, tmp_path, **kw)


# --- Conv -------------------------------------------------------------------

CONV_CASES = {
    # name: (x shape, w shape, attrs)
    "2d": ((1, 3, 9, 9), (4, 3, 3, 3), {}),
    "2d_stride_pad": ((2, 3, 10, 10), (8, 3, 3, 3),
                      {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "2d_asym_pad_dilation": ((1, 2, 11, 9), (3, 2, 3, 2),
                             {"pads": [0, 1, 2, 1], "dilations": [2, 1]}),
    "2d_grouped": ((1, 4, 8, 8), (6, 2, 3, 3), {"group": 2, "pads": [1, 1, 1, 1]}),
    "2d_depthwise": ((1, 5, 8, 8), (5, 1, 3, 3),
                     {"group": 5, "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "2d_depthwise_multiplier": ((1, 3, 7, 7), (6, 1, 3, 3), {"group": 3}),
    "2d_same_upper": ((1, 2, 7, 7), (3, 2, 4, 4),
                      {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    "2d_same_lower": ((1, 2, 7, 7), (3, 2, 4, 4), {"auto_pad": "SAME_LOWER"}),
    "1d": ((2, 3, 12), (4, 3, 3), {"strides": [2], "pads": [1, 2]}),
    "1d_grouped": ((1, 4, 10), (4, 2, 3), {"group": 2}),
    "1d_depthwise": ((1, 4, 10), (4, 1, 3), {"group": 4, "dilations": [2]}),
    "3d": ((1, 2, 5, 6, 7), (3, 2, 2, 3, 3), {"pads": [1, 0, 1, 0, 1, 1]}),
    "3d_grouped": ((1, 4, 4, 5, 5), (2, 2, 2, 2, 2), {"group": 2}),
    "3d_depthwise": ((1, 3, 4, 5, 5), (3, 1, 2, 2, 2), {"group": 3}),
    # 3-D convolutions run as 2-D ones over stacked depth taps
    # (kiln-graph-stack-depth-taps): strides, dilations and padding along
    # every dimension, R(2+1)D's temporal and spatial factors, and a filter
    # deeper than the pass takes (left to im2col).
    "3d_stride_dilation": ((2, 3, 7, 9, 9), (4, 3, 3, 3, 3),
                           {"strides": [2, 1, 2], "dilations": [2, 1, 1],
                            "pads": [2, 1, 1, 1, 1, 0]}),
    "3d_temporal": ((1, 8, 6, 5, 5), (4, 8, 3, 1, 1), {"pads": [1, 0, 0, 1, 0, 0]}),
    "3d_spatial": ((1, 4, 3, 6, 6), (5, 4, 1, 3, 3), {"pads": [0, 1, 1, 0, 1, 1]}),
    "3d_deep_filter": ((1, 2, 10, 4, 4), (2, 2, 9, 1, 1), {}),
}


@pytest.mark.parametrize("case", sorted(CONV_CASES))
@pytest.mark.parametrize("bias", [False, True])
def test_conv(case, bias, tmp_path):
    x_shape, w_shape, attrs = CONV_CASES[case]
    x = data(x_shape)
    consts = {"w": data(w_shape)}
    if bias:
        consts["b"] = data((w_shape[0],))
    check(model("Conv", {"x": x}, attrs, consts), {"x": x}, tmp_path)


def test_conv_weight_as_input(tmp_path):
    x, w = data((1, 3, 6, 6)), data((2, 3, 3, 3))
    check(model("Conv", {"x": x, "w": w}), {"x": x, "w": w}, tmp_path)


def test_conv3d_weight_as_input(tmp_path):
    x, w = data((1, 4, 5, 6, 6)), data((6, 2, 3, 3, 3))
    check(model("Conv", {"x": x, "w": w}, {"group": 2, "pads": [1] * 6}),
          {"x": x, "w": w}, tmp_path)


def test_conv_f16(tmp_path):
    x = data((1, 4, 8, 8), np.float16)
    consts = {"w": data((4, 4, 3, 3), np.float16), "b": data((4,), np.float16)}
    check(model("Conv", {"x": x}, {"pads": [1, 1, 1, 1]}, consts), {"x": x}, tmp_path,
          rtol=1e-2, atol=1e-2)


# --- ConvTranspose ----------------------------------------------------------

CONV_TRANSPOSE_CASES = {
    "2d": ((1, 3, 4, 4), (3, 2, 3, 3), {}),
    "2d_stride_pad": ((1, 4, 5, 5), (4, 3, 3, 3),
                      {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}),
    "2d_grouped_dilated": ((1, 4, 4, 5), (4, 2, 2, 3),
                           {"group": 2, "dilations": [2, 1], "strides": [1, 2]}),
    "2d_large_pads": ((1, 2, 6, 6), (2, 2, 2, 2), {"pads": [2, 1, 2, 3]}),
    "2d_output_shape": ((1, 2, 3, 3), (2, 3, 3, 3),
                        {"strides": [3, 2], "output_shape": [10, 8]}),
    "2d_output_shape_odd": ((1, 2, 4, 4), (2, 3, 3, 3),
                            {"strides": [2, 2], "output_shape": [8, 7]}),
    "2d_same_upper": ((1, 2, 3, 3), (2, 3, 3, 3),
                      {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    "2d_same_lower": ((1, 2, 3, 3), (2, 3, 3, 3),
                      {"strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    "1d": ((2, 3, 5), (3, 4, 3), {"strides": [2]}),
    "3d": ((1, 2, 3, 3, 3), (2, 2, 2, 2, 2), {"strides": [2, 1, 2]}),
}


@pytest.mark.parametrize("case", sorted(CONV_TRANSPOSE_CASES))
@pytest.mark.parametrize("bias", [False, True])
def test_conv_transpose(case, bias, tmp_path):
    x_shape, w_shape, attrs = CONV_TRANSPOSE_CASES[case]
    x = data(x_shape)
    consts = {"w": data(w_shape)}
    if bias:
        consts["b"] = data((w_shape[1] * attrs.get("group", 1),))
    check(model("ConvTranspose", {"x": x}, attrs, consts), {"x": x}, tmp_path)


# --- MatMul and Gemm --------------------------------------------------------

MATMUL_CASES = [
    ((3, 4), (4, 5)),
    ((2, 3, 4), (4, 5)),
    ((2, 1, 3, 4), (5, 4, 6)),
    ((2, 3, 4), (2, 4, 5)),
    ((4,), (4, 5)),
    ((2, 3, 4), (4,)),
    ((4,), (4,)),
    ((1, 4), (3, 4, 2)),
]


@pytest.mark.parametrize("shapes", MATMUL_CASES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_matmul(shapes, tmp_path):
    a, b = data(shapes[0]), data(shapes[1])
    check(model("MatMul", {"a": a, "b": b}), {"a": a, "b": b}, tmp_path)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float16])
def test_matmul_types(dtype, tmp_path):
    a, b = data((2, 3, 4), dtype), data((4, 5), dtype)
    tol = {"rtol": 1e-2, "atol": 1e-2} if dtype == np.float16 else {}
    check(model("MatMul", {"a": a, "b": b}), {"a": a, "b": b}, tmp_path, **tol)


GEMM_CASES = {
    "plain": ({}, (3, 4), (4, 5), None),
    "trans_b_bias": ({"transB": 1}, (2, 8), (6, 8), (6,)),
    "trans_a": ({"transA": 1}, (4, 3), (4, 5), (3, 5)),
    "alpha_beta": ({"alpha": 0.5, "beta": 2.0, "transA": 1, "transB": 1}, (4, 3), (5, 4), (1, 5)),
    "beta_only": ({"beta": -1.5}, (3, 4), (4, 5), (3, 1)),
    "scalar_c": ({}, (3, 4), (4, 5), ()),
}


@pytest.mark.parametrize("case", sorted(GEMM_CASES))
def test_gemm(case, tmp_path):
    attrs, a_shape, b_shape, c_shape = GEMM_CASES[case]
    a = data(a_shape)
    consts = {"b": data(b_shape)}
    if c_shape is not None:
        consts["c"] = data(c_shape)
    check(model("Gemm", {"a": a}, attrs, consts), {"a": a}, tmp_path)


# --- Pooling ----------------------------------------------------------------

POOL_CASES = {
    "2d": ((1, 3, 8, 8), {"kernel_shape": [2, 2], "strides": [2, 2]}),
    "2d_pads": ((2, 2, 7, 7), {"kernel_shape": [3, 3], "strides": [2, 2],
                               "pads": [1, 1, 1, 1]}),
    "2d_ceil": ((1, 2, 7, 8), {"kernel_shape": [3, 2], "strides": [2, 2],
                               "ceil_mode": 1}),
    "2d_ceil_pads": ((1, 1, 6, 6), {"kernel_shape": [3, 3], "strides": [2, 2],
                                    "pads": [1, 1, 1, 1], "ceil_mode": 1}),
    "2d_same_upper": ((1, 2, 7, 7), {"kernel_shape": [3, 3], "strides": [2, 2],
                                     "auto_pad": "SAME_UPPER"}),
    "2d_dilated": ((1, 2, 9, 9), {"kernel_shape": [2, 2], "dilations": [2, 2]}),
    "1d": ((1, 3, 11), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    # Windows of more than 16 positions pool by rows, then by columns
    # (YOLO's SPPF: 5x5, stride 1, pads 2), or with a side over 16 by
    # reduction loops.
    "2d_5x5": ((1, 20, 13, 13), {"kernel_shape": [5, 5], "pads": [2, 2, 2, 2]}),
    "2d_7x3_dilated_ceil": ((1, 3, 17, 16), {"kernel_shape": [7, 3], "strides": [2, 3],
                                             "dilations": [1, 2], "ceil_mode": 1,
                                             "pads": [3, 0, 2, 1]}),
    "2d_17x2": ((1, 2, 18, 5), {"kernel_shape": [17, 2]}),
    "3d": ((1, 2, 5, 6, 6), {"kernel_shape": [2, 3, 3], "strides": [1, 2, 2],
                             "pads": [0, 1, 1, 1, 1, 1]}),
}


@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_max_pool(case, tmp_path):
    shape, attrs = POOL_CASES[case]
    x = data(shape)
    check(model("MaxPool", {"x": x}, attrs, opset=19), {"x": x}, tmp_path)


@pytest.mark.parametrize("case", sorted(POOL_CASES))
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool(case, count_include_pad, tmp_path):
    shape, attrs = POOL_CASES[case]
    x = data(shape)
    attrs = dict(attrs, count_include_pad=count_include_pad)
    check(model("AveragePool", {"x": x}, attrs, opset=19), {"x": x}, tmp_path)


@pytest.mark.parametrize("kernel,strides,pads", [
    ([5, 5], [1, 1], [2, 2, 2, 2]), ([7, 3], [2, 1], [3, 1, 3, 1]), ([3, 3], [1, 1], [1, 1, 1, 1])])
def test_blocked_pools_after_a_convolution(kernel, strides, pads, tmp_path):
    # After a convolution, max and average pools take the blocked layout
    # (the one-node tests above reach the average pool's NCHW lowering).
    x = data((1, 8, 15, 15))
    w = (data((32, 8, 1, 1)) * 0.3).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("MaxPool", ["c"], ["m"], kernel_shape=kernel,
                              strides=strides, pads=pads),
             helper.make_node("AveragePool", ["c"], ["a"], kernel_shape=kernel,
                              strides=strides, pads=pads, count_include_pad=0),
             helper.make_node("Add", ["m", "a"], ["y"])]
    graph = helper.make_graph(
        nodes, "pools", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    check(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_pool(p, tmp_path):
    """LpPool as an average pool of |x|^p counting the zero padding, scaled
    by the window, then the p-th root: padded, strided, one 1-D case."""
    x = data((1, 3, 7, 6))
    attrs = {"kernel_shape": [3, 2], "pads": [1, 0, 1, 1], "strides": [2, 1], "p": p}
    check(model("LpPool", {"x": x}, attrs, opset=18), {"x": x}, tmp_path / "2d")
    x = data((2, 2, 9))
    attrs = {"kernel_shape": [4], "auto_pad": "SAME_UPPER", "p": p}
    check(model("LpPool", {"x": x}, attrs, opset=18), {"x": x}, tmp_path / "1d")


@pytest.mark.parametrize("dtype", [np.uint8, np.float16])
def test_max_pool_types(dtype, tmp_path):
    x = data((1, 2, 6, 6), dtype)
    attrs = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]}
    check(model("MaxPool", {"x": x}, attrs, opset=12), {"x": x}, tmp_path)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (1, 4, 6), (1, 2, 3, 4, 5)])
def test_global_pool(op, shape, tmp_path):
    x = data(shape)
    check(model(op, {"x": x}), {"x": x}, tmp_path)


@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_max_pool_indices(case, tmp_path):
    """The Indices output: the flat index of each window's first maximum,
    padded, strided, dilated, ceil_mode, 1-D to 3-D."""
    shape, attrs = POOL_CASES[case]
    x = data(shape)
    m = model("MaxPool", {"x": x}, attrs, opset=12, outputs=("y", "i"))
    check(m, {"x": x}, tmp_path)


def test_max_pool_indices_column_major_and_unpool(tmp_path):
    """storage_order 1 (the spatial dimensions column-major), and the
    row-major indices through MaxUnpool, as a segmentation decoder uses
    them."""
    x = data((2, 3, 6, 5))
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2], "storage_order": 1}
    m = model("MaxPool", {"x": x}, attrs, opset=12, outputs=("y", "i"))
    check(m, {"x": x}, tmp_path / "column_major")
    x = data((2, 3, 6, 6))
    nodes = [helper.make_node("MaxPool", ["x"], ["p", "i"], kernel_shape=[2, 2],
                              strides=[2, 2]),
             helper.make_node("MaxUnpool", ["p", "i"], ["y"], kernel_shape=[2, 2],
                              strides=[2, 2])]
    graph = helper.make_graph(
        nodes, "unpool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    m.ir_version = 8
    check(m, {"x": x}, tmp_path / "unpool")


# --- Normalization ----------------------------------------------------------

@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3), (1, 4, 6)])
def test_batch_norm(shape, tmp_path):
    x = data(shape)
    c = shape[1]
    consts = {"scale": data((c,)), "bias": data((c,)), "mean": data((c,)),
              "var": RNG.uniform(0.5, 2.0, c).astype(np.float32)}
    check(model("BatchNormalization", {"x": x}, {"epsilon": 1e-3}, consts), {"x": x},
          tmp_path)


def test_batch_norm_training_refuses_what_has_no_channels(tmp_path):
    """Training mode (test_sequences.py checks its statistics) needs an
    input [N, C, ...] and per-channel parameters."""
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"],
                            ["y", "running_mean", "running_var"], training_mode=1)
    graph = helper.make_graph(
        [node], "bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3])
         for n in ("y", "running_mean", "running_var")],
        [numpy_helper.from_array(data((3,)), n) for n in "sbmv"])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    with pytest.raises(KilnError, match="training mode needs a static float "
                       "input of rank >= 2"):
        compile_model(m, tmp_path)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 4, 7)])
def test_instance_norm(shape, tmp_path):
    x = data(shape)
    consts = {"scale": data((shape[1],)), "bias": data((shape[1],))}
    check(model("InstanceNormalization", {"x": x}, {"epsilon": 1e-4}, consts), {"x": x},
          tmp_path)


@pytest.mark.parametrize("axis,scale_shape,bias", [
    (-1, (16,), True),
    (-1, (16,), False),
    (1, (6, 16), True),
    (1, (16,), True),
    (0, (2, 6, 16), True),
])
def test_layer_norm(axis, scale_shape, bias, tmp_path):
    x = data((2, 6, 16))
    consts = {"scale": data(scale_shape)}
    if bias:
        consts["bias"] = data(scale_shape)
    check(model("LayerNormalization", {"x": x}, {"axis": axis, "epsilon": 1e-5}, consts),
          {"x": x}, tmp_path)


def test_layer_norm_f16(tmp_path):
    x = data((2, 8, 32), np.float16)
    consts = {"scale": data((32,), np.float16), "bias": data((32,), np.float16)}
    check(model("LayerNormalization", {"x": x}, {}, consts), {"x": x}, tmp_path,
          rtol=1e-2, atol=1e-2)


# beta 0.75 takes square roots, another beta exp(-beta * log(base)).
@pytest.mark.parametrize("beta", [0.75, 0.6], ids=["sqrt", "exp-log"])
@pytest.mark.parametrize("size", [1, 3, 5])
def test_lrn(size, beta, tmp_path):
    x = data((2, 6, 5, 5))
    attrs = {"size": size, "alpha": 1e-2, "beta": beta, "bias": 2.0}
    check(model("LRN", {"x": x}, attrs), {"x": x}, tmp_path)


def test_lrn_calls_no_pow(tmp_path):
    """LRN's power is vector code: a libm powf call per element made
    Inception v1's two LRNs a fifth of its time."""
    x = data((1, 16, 8, 8))
    attrs = {"size": 5, "alpha": 1e-4, "beta": 0.75, "bias": 1.0}
    so = compile_model(model("LRN", {"x": x}, attrs), tmp_path)
    imported = subprocess.run(["nm", "-D", "--undefined-only", str(so)],
                              capture_output=True, text=True, check=True).stdout
    assert "pow" not in imported, imported


# --- Einsum -----------------------------------------------------------------

EINSUM_CASES = {
    # name: (equation, operand shapes, dtype)
    "matmul": ("ij,jk->ik", [(3, 4), (4, 5)], np.float32),
    "batch_matmul_implicit": ("bij,bjk", [(2, 3, 4), (2, 4, 5)], np.float32),
    "attention_scores": ("bhqd,bhkd->bhqk", [(1, 2, 5, 8), (1, 2, 7, 8)], np.float32),
    "ellipsis_broadcast": ("...ij,...jk->...ik", [(2, 1, 3, 4), (1, 5, 4, 6)], np.float32),
    "three_operands": ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)], np.float32),
    "outer": ("i,j->ij", [(3,), (4,)], np.float32),
    "trace": ("ii", [(4, 4)], np.float32),
    "diagonal_keep": ("bii->bi", [(2, 3, 3)], np.float32),
    "sum_all": ("ijk->", [(2, 3, 4)], np.float32),
    "spaces_and_transpose": ("i j k -> k i j", [(2, 3, 4)], np.float32),
    "int32": ("ij,jk->ik", [(3, 4), (4, 2)], np.int32),
    "float16": ("bij,bjk->bik", [(2, 3, 8), (2, 8, 4)], np.float16),
    "size_one_broadcast": ("ij,ij->ij", [(1, 5), (3, 5)], np.float32),
}


@pytest.mark.parametrize("name", list(EINSUM_CASES))
def test_einsum(name, tmp_path):
    equation, shapes, dtype = EINSUM_CASES[name]
    inputs = {f"x{i}": data(s, dtype) for i, s in enumerate(shapes)}
    m = model("Einsum", inputs, {"equation": equation}, opset=12)
    tolerance = dict(rtol=2e-2, atol=2e-2) if dtype == np.float16 else {}
    check(m, inputs, tmp_path, **tolerance)


@pytest.mark.parametrize("equation, message", [
    ("ij,jk,kl->il", "has 3 input term(s) for 2 input(s)"),
    ("ij,jk->iq", "output letter 'q' is not an input's"),
    ("ijk,jk->ik", "does not fit input 0 of rank 2"),
    ("ij,kj->ik", "letter 'j' has sizes 4 and 5"),
    ("i1,jk->ik", "malformed equation"),
])
def test_einsum_bad_equation(equation, message, tmp_path):
    inputs = {"x0": data((3, 4)), "x1": data((5 if "kj" in equation else 4, 5))}
    node = helper.make_node("Einsum", ["x0", "x1"], ["y"], equation=equation)
    graph = helper.make_graph(
        [node], "einsum",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, v.shape)
         for n, v in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    m.ir_version = 8
    with pytest.raises(KilnError, match=re.escape(message)):
        compile_model(m, tmp_path)


@pytest.mark.parametrize("name, as_matmul", [
    ("attention_scores", True), ("batch_matmul_implicit", True), ("outer", True),
    ("trace", False), ("three_operands", False), ("ellipsis_broadcast", False),
])
def test_einsum_matrix_products_become_matmul(name, as_matmul, tmp_path):
    """A two-operand Einsum that is a matrix product up to transposes takes
    graph.matmul (and code generation's register-blocked path); any other
    stays a graph.einsum."""
    import kiln
    equation, shapes, dtype = EINSUM_CASES[name]
    inputs = {f"x{i}": data(s, dtype) for i, s in enumerate(shapes)}
    m = model("Einsum", inputs, {"equation": equation}, opset=12)
    text = open(kiln.compile(m, emit="imported")).read()
    assert ("graph.matmul" in text) == as_matmul, text
    assert ("graph.einsum" in text) != as_matmul, text


def test_deform_conv_against_reference(tmp_path):
    """DeformConv with groups, offset groups, a stride, a dilation, padding,
    a mask and a bias, against ONNX's reference (onnxruntime has no CPU
    kernel for it): samples fall inside, between and outside X."""
    from onnx.reference import ReferenceEvaluator
    x = data((2, 4, 7, 6))
    w = data((6, 2, 3, 2))
    attrs = {"group": 2, "offset_group": 2, "strides": [2, 1], "dilations": [1, 2],
             "pads": [1, 0, 1, 1], "kernel_shape": [3, 2]}
    out_h = (7 + 2 - 3) // 2 + 1
    out_w = (6 + 1 - 3) // 1 + 1
    offset = (RNG.standard_normal((2, 2 * 6 * 2, out_h, out_w)) * 1.5).astype(np.float32)
    mask = RNG.uniform(0, 1, (2, 2 * 6, out_h, out_w)).astype(np.float32)
    bias = data((6,))
    m = model("DeformConv", {"x": x, "offset": offset, "mask": mask},
              attrs, consts={"w": w, "b": bias}, opset=19,
              names=["x", "w", "offset", "b", "mask"])
    feeds = {"x": x, "offset": offset, "mask": mask}
    want = ReferenceEvaluator(m).run(None, feeds)[0]
    so = compile_model(m, tmp_path)
    import kiln
    got = next(iter(kiln.load(so).run(feeds).values()))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("transform", ["half_pixel", "output_half_pixel"])
def test_roi_align(mode, transform, tmp_path):
    """RoiAlign on regions inside, across and beyond the border of X, the
    regions and batch indices fed at run time; against ONNX's reference."""
    from onnx.reference import ReferenceEvaluator
    x = data((2, 3, 12, 10))
    rois = np.array([[1, 1, 8, 9], [-3, 2, 5, 14], [6.5, 0.2, 14, 3], [0, 0, 1, 1]],
                    np.float32)
    indices = np.array([0, 1, 1, 0], np.int64)
    attrs = {"mode": mode, "coordinate_transformation_mode": transform,
             "output_height": 3, "output_width": 4, "sampling_ratio": 2,
             "spatial_scale": 0.9}
    m = model("RoiAlign", {"x": x, "rois": rois, "batch_indices": indices}, attrs, opset=16)
    feeds = {"x": x, "rois": rois, "batch_indices": indices}
    want = ReferenceEvaluator(m).run(None, feeds)[0]
    so = compile_model(m, tmp_path)
    import kiln
    got = next(iter(kiln.load(so).run(feeds).values()))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
