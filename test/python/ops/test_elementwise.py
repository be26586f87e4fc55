"""End-to-end tests of the elementwise operators against onnxruntime.

Each test builds a small ONNX model holding several nodes (one output each),
compiles it with kiln-compile, runs it with kiln-run and compares every output
with onnxruntime (dtype, shape, values). Where onnxruntime has no kernel for a
type (float16 math, integer Relu), ONNX's reference evaluator is the oracle.
"""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from kiln_testing import assert_matches_onnxruntime, compile_model, run_compiled

RNG = np.random.default_rng(7)

NP_TO_ONNX = {np.dtype(k): v for k, v in {
    np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16,
    np.float64: TensorProto.DOUBLE, np.int8: TensorProto.INT8,
    np.int16: TensorProto.INT16, np.int32: TensorProto.INT32,
    np.int64: TensorProto.INT64, np.uint8: TensorProto.UINT8,
    np.uint16: TensorProto.UINT16, np.uint32: TensorProto.UINT32,
    np.uint64: TensorProto.UINT64, np.bool_: TensorProto.BOOL}.items()}


def node(op, inputs, output, **attrs):
    return helper.make_node(op, inputs, [output], **attrs)


def model(nodes, inputs, consts=None, opset=17):
    """A model with graph inputs `inputs` ({name: array}), initializers
    `consts` and one graph output per node."""
    consts = consts or {}
    graph_inputs = [helper.make_tensor_value_info(n, NP_TO_ONNX[v.dtype], v.shape)
                    for n, v in inputs.items()]
    outputs = [helper.make_tensor_value_info(n.output[0], TensorProto.UNDEFINED, None)
               for n in nodes]
    inits = [numpy_helper.from_array(np.asarray(v), n) for n, v in consts.items()]
    graph = helper.make_graph(nodes, "elementwise", graph_inputs, outputs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m, strict_mode=True)


def assert_matches_reference(m, feeds, tmp_path, rtol=1e-3, atol=1e-4):
    """Like assert_matches_onnxruntime, with ONNX's reference evaluator."""
    got = run_compiled(compile_model(m, tmp_path), feeds, tmp_path)
    names = [o.name for o in m.graph.output]
    expected = dict(zip(names, ReferenceEvaluator(m).run(None, feeds)))
    for name, want in expected.items():
        have = got[name]
        assert have.dtype == want.dtype, f"{name}: dtype {have.dtype}, expected {want.dtype}"
        assert have.shape == want.shape, f"{name}: shape {have.shape}, expected {want.shape}"
        np.testing.assert_allclose(have.astype(np.float64), want.astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=name)


def normal(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def ints(shape, dtype, low=-20, high=20):
    return RNG.integers(low, high, size=shape).astype(dtype)


# --- binary ops ------------------------------------------------------------

def test_binary_float_broadcast(tmp_path):
    # Odd sizes, three-way broadcast, variadic ops with three inputs.
    a, b, c = normal((2, 1, 5)), normal((3, 5)), normal((5,))
    nodes = [node("Add", ["a", "b"], "add"), node("Sub", ["a", "c"], "sub"),
             node("Mul", ["b", "a"], "mul"), node("Div", ["a", "b"], "div"),
             node("Max", ["a", "b", "c"], "max"), node("Min", ["c", "a"], "min"),
             node("Sum", ["a", "b", "c"], "sum"), node("Mean", ["a", "b", "c"], "mean"),
             node("Mean", ["c"], "mean1"), node("Mod", ["a", "b"], "fmod", fmod=1),
             node("PRelu", ["b", "slope"], "prelu")]
    m = model(nodes, {"a": a, "b": b, "c": c}, {"slope": normal((5,))})
    assert_matches_onnxruntime(m, {"a": a, "b": b, "c": c}, tmp_path)


def test_max_min_propagate_nan(tmp_path):
    a = np.array([1.0, np.nan, -np.inf, 3.0, np.nan], np.float32)
    b = np.array([np.nan, 2.0, 0.0, np.inf, np.nan], np.float32)
    m = model([node("Max", ["a", "b"], "max"), node("Min", ["a", "b"], "min")],
              {"a": a, "b": b})
    got = assert_matches_onnxruntime(m, {"a": a, "b": b}, tmp_path)
    assert np.isnan(got["max"][[0, 1, 4]]).all()


def test_pow(tmp_path):
    # Float base with float, int64 and float16 exponents; integer base with
    # integer and float exponents.
    x = np.abs(normal((3, 4))) + 0.1
    e = normal((4,))
    i = ints((3, 4), np.int32, -6, 7)
    k = ints((4,), np.int64, 0, 4)
    nodes = [node("Pow", ["x", "e"], "pf"), node("Pow", ["x", "k"], "pi"),
             node("Pow", ["i", "k"], "ii"), node("Pow", ["i", "two"], "if")]
    feeds = {"x": x, "e": e, "i": i, "k": k}
    m = model(nodes, feeds, {"two": np.array(2.0, np.float32)}, opset=15)
    assert_matches_onnxruntime(m, feeds, tmp_path)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_binary_int(dtype, tmp_path):
    a = ints((4, 6), dtype)
    b = ints((6,), dtype, 1, 9) * np.where(np.arange(6) % 2, -1, 1).astype(dtype)
    nodes = [node("Add", ["a", "b"], "add"), node("Sub", ["a", "b"], "sub"),
             node("Mul", ["a", "b"], "mul"), node("Div", ["a", "b"], "div"),
             node("Max", ["a", "b"], "max"), node("Min", ["a", "b"], "min"),
             node("Mod", ["a", "b"], "mod"), node("Mod", ["a", "b"], "fmod", fmod=1),
             node("BitwiseAnd", ["a", "b"], "band"), node("BitwiseOr", ["a", "b"], "bor"),
             node("BitwiseXor", ["a", "b"], "bxor"), node("BitwiseNot", ["a"], "bnot"),
             node("Abs", ["a"], "abs"), node("Neg", ["a"], "neg"), node("Sign", ["a"], "sign")]
    m = model(nodes, {"a": a, "b": b}, opset=18)
    assert_matches_onnxruntime(m, {"a": a, "b": b}, tmp_path)


def test_unsigned(tmp_path):
    # Division, remainder, comparisons and shifts must use unsigned ops.
    a = ints((3, 5), np.uint32, 0, 2**32 - 1)
    b = ints((5,), np.uint32, 1, 2**31)
    s = ints((5,), np.uint8, 0, 200)
    n = np.array([1, 3, 7, 0, 2], np.uint8)
    nodes = [node("Div", ["a", "b"], "div"), node("Mod", ["a", "b"], "mod"),
             node("Max", ["a", "b"], "max"), node("Less", ["a", "b"], "less"),
             node("Cast", ["a"], "tofloat", to=TensorProto.DOUBLE),
             node("BitShift", ["s", "n"], "left", direction="LEFT"),
             node("BitShift", ["s", "n"], "right", direction="RIGHT")]
    feeds = {"a": a, "b": b, "s": s, "n": n}
    assert_matches_onnxruntime(model(nodes, feeds), feeds, tmp_path)


def test_logic_and_comparisons(tmp_path):
    a = np.array([[1.0, np.nan, -2.0, 0.0, 5.0]], np.float32)
    b = np.array([[1.0], [np.nan], [3.0]], np.float32)
    p = RNG.integers(0, 2, (3, 5)).astype(bool)
    q = RNG.integers(0, 2, (5,)).astype(bool)
    nodes = [node("Equal", ["a", "b"], "eq"), node("Less", ["a", "b"], "lt"),
             node("LessOrEqual", ["a", "b"], "le"), node("Greater", ["a", "b"], "gt"),
             node("GreaterOrEqual", ["a", "b"], "ge"), node("And", ["p", "q"], "and"),
             node("Or", ["p", "q"], "or"), node("Xor", ["p", "q"], "xor"),
             node("Not", ["p"], "not"), node("Equal", ["p", "q"], "beq"),
             node("Where", ["q", "a", "b"], "where")]
    feeds = {"a": a, "b": b, "p": p, "q": q}
    assert_matches_onnxruntime(model(nodes, feeds), feeds, tmp_path)


def test_int_comparisons(tmp_path):
    a, b = ints((2, 3), np.int64), ints((3,), np.int64)
    c = np.array([True, False, True])
    nodes = [node("Less", ["a", "b"], "lt"), node("GreaterOrEqual", ["a", "b"], "ge"),
             node("Equal", ["a", "b"], "eq"), node("Where", ["c", "a", "b"], "where")]
    feeds = {"a": a, "b": b, "c": c}
    assert_matches_onnxruntime(model(nodes, feeds), feeds, tmp_path)


# --- unary ops -------------------------------------------------------------

UNIT = ["Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh",
        "Atanh", "Erf", "Tanh", "Sigmoid", "Exp", "Abs", "Neg", "Floor", "Ceil",
        "Sign", "Softplus", "Softsign", "HardSwish", "Mish", "Relu"]
POSITIVE = ["Log", "Sqrt", "Reciprocal", "Acosh"]


def test_unary_float(tmp_path):
    u = RNG.uniform(-0.95, 0.95, (3, 7)).astype(np.float32) * 1
    u[0, :3] = [0.0, -0.0, 0.5]
    p = RNG.uniform(1.05, 6.0, (3, 7)).astype(np.float32)
    nodes = [node(op, ["u"], op.lower()) for op in UNIT]
    nodes += [node(op, ["p"], op.lower()) for op in POSITIVE]
    m = model(nodes, {"u": u, "p": p}, opset=18)
    assert_matches_onnxruntime(m, {"u": u, "p": p}, tmp_path, rtol=1e-5, atol=1e-6)


def test_unary_wide_range(tmp_path):
    # Large magnitudes: overflow-safe Softplus/Sigmoid/Mish, Exp to inf.
    x = np.array([-100.0, -30.0, -5.5, -0.5, 0.5, 2.5, 30.0, 100.0, np.inf, -np.inf],
                 np.float32)
    ops = ["Exp", "Sigmoid", "Softplus", "Softsign", "Tanh", "Mish", "Round", "Floor"]
    m = model([node(op, ["x"], op.lower()) for op in ops], {"x": x}, opset=18)
    assert_matches_onnxruntime(m, {"x": x}, tmp_path, rtol=1e-5, atol=1e-6)


def test_round_half_to_even(tmp_path):
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 2.4, -2.6, 0.0], np.float32)
    got = assert_matches_onnxruntime(model([node("Round", ["x"], "y")], {"x": x}),
                                     {"x": x}, tmp_path)
    np.testing.assert_array_equal(got["y"], np.round(x))


def test_activations_with_attributes(tmp_path):
    x = normal((2, 9)) * 3
    nodes = [node("LeakyRelu", ["x"], "leaky", alpha=0.2),
             node("LeakyRelu", ["x"], "leaky_default"),
             node("Elu", ["x"], "elu", alpha=0.7), node("Selu", ["x"], "selu"),
             node("Selu", ["x"], "selu2", alpha=1.2, gamma=2.0),
             node("Celu", ["x"], "celu", alpha=2.0),
             node("ThresholdedRelu", ["x"], "thr", alpha=0.4),
             node("HardSigmoid", ["x"], "hsig", alpha=0.3, beta=0.4),
             node("HardSigmoid", ["x"], "hsig_default"),
             node("Gelu", ["x"], "gelu"), node("Gelu", ["x"], "gelu_tanh", approximate="tanh")]
    m = model(nodes, {"x": x}, opset=20)
    assert_matches_onnxruntime(m, {"x": x}, tmp_path, rtol=1e-5, atol=1e-5)


def test_float16_math_in_f32(tmp_path):
    x = (RNG.uniform(-0.9, 0.9, (4, 5))).astype(np.float16)
    p = (RNG.uniform(1.1, 4.0, (4, 5))).astype(np.float16)
    ops = ["Exp", "Tanh", "Sigmoid", "Erf", "Asin", "Softplus", "Abs", "Neg", "Relu"]
    nodes = [node(op, ["x"], op.lower()) for op in ops]
    nodes += [node("Log", ["p"], "log"), node("Sqrt", ["p"], "sqrt"),
              node("Pow", ["p", "x"], "pow"), node("Add", ["x", "p"], "add"),
              node("Max", ["x", "p"], "max"), node("Gelu", ["x"], "gelu")]
    m = model(nodes, {"x": x, "p": p}, opset=20)
    assert_matches_reference(m, {"x": x, "p": p}, tmp_path, rtol=2e-3, atol=2e-3)


def test_int_relu_abs_sign(tmp_path):
    x = ints((11,), np.int8, -128, 127)
    x[:3] = [-128, 0, 127]
    nodes = [node("Relu", ["x"], "relu"), node("Abs", ["x"], "abs"),
             node("Sign", ["x"], "sign"), node("Neg", ["x"], "neg")]
    assert_matches_reference(model(nodes, {"x": x}, opset=14), {"x": x}, tmp_path)


def test_isnan_isinf(tmp_path):
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0, -3.0], np.float32)
    nodes = [node("IsNaN", ["x"], "nan"), node("IsInf", ["x"], "inf"),
             node("IsInf", ["x"], "pos", detect_negative=0),
             node("IsInf", ["x"], "neg", detect_positive=0)]
    got = assert_matches_onnxruntime(model(nodes, {"x": x}), {"x": x}, tmp_path)
    np.testing.assert_array_equal(got["pos"], [False, False, True, False, False, False])


def test_clip(tmp_path):
    x = normal((3, 8)) * 4
    x[0, 0] = np.nan
    i = ints((8,), np.int32)
    nodes = [node("Clip", ["x", "lo", "hi"], "both"), node("Clip", ["x", "lo"], "min_only"),
             node("Clip", ["x", "", "hi"], "max_only"), node("Clip", ["x"], "none"),
             node("Clip", ["x", "hi", "lo"], "crossed"),
             node("Clip", ["i", "ilo", "ihi"], "int")]
    consts = {"lo": np.float32(-1.5), "hi": np.float32(2.0),
              "ilo": np.int32(-3), "ihi": np.int32(5)}
    feeds = {"x": x, "i": i}
    assert_matches_onnxruntime(model(nodes, feeds, consts, opset=13), feeds, tmp_path)


def test_clip_runtime_bounds(tmp_path):
    # Bounds as rank-0 graph inputs rather than initializers.
    x = normal((5, 3))
    feeds = {"x": x, "lo": np.array(-0.5, np.float32), "hi": np.array(0.25, np.float32)}
    m = model([node("Clip", ["x", "lo", "hi"], "y")], feeds, opset=13)
    assert_matches_onnxruntime(m, feeds, tmp_path)


def test_clip_opset6_attributes(tmp_path):
    x = normal((4, 4)) * 3
    nodes = [node("Clip", ["x"], "both", min=-1.0, max=1.5),
             node("Clip", ["x"], "max_only", max=0.5)]
    assert_matches_onnxruntime(model(nodes, {"x": x}, opset=6), {"x": x}, tmp_path)


# --- casts -----------------------------------------------------------------

def test_cast_from_float(tmp_path):
    x = np.array([-3.7, -1.5, -0.0, 0.2, 1.5, 2.9, 100.6, np.nan], np.float32)
    targets = {"i8": TensorProto.INT8, "i32": TensorProto.INT32, "i64": TensorProto.INT64,
               "f16": TensorProto.FLOAT16, "f64": TensorProto.DOUBLE,
               "bool": TensorProto.BOOL, "f32": TensorProto.FLOAT}
    nodes = [node("Cast", ["x"], name, to=to) for name, to in targets.items()]
    # Integer results of NaN are undefined: compare them on the finite part.
    m = model(nodes, {"x": x[:-1]})
    assert_matches_onnxruntime(m, {"x": x[:-1]}, tmp_path / "finite")
    keep = ["f16", "f64", "bool"]
    m = model([n for n in nodes if n.output[0] in keep], {"x": x})
    assert_matches_onnxruntime(m, {"x": x}, tmp_path / "nan")


def test_cast_to_unsigned(tmp_path):
    x = np.array([0.0, 0.7, 3.5, 200.9, 255.0], np.float32)
    nodes = [node("Cast", ["x"], "u8", to=TensorProto.UINT8),
             node("Cast", ["x"], "u16", to=TensorProto.UINT16)]
    assert_matches_onnxruntime(model(nodes, {"x": x}), {"x": x}, tmp_path)


def test_cast_integers_and_bool(tmp_path):
    i = np.array([-300, -129, -1, 0, 1, 127, 255, 70000], np.int64)
    u = np.array([0, 1, 127, 128, 200, 255, 3, 9], np.uint8)
    b = np.array([True, False, True, True, False, False, True, False])
    nodes = [node("Cast", ["i"], "i_to_i8", to=TensorProto.INT8),
             node("Cast", ["i"], "i_to_u16", to=TensorProto.UINT16),
             node("Cast", ["i"], "i_to_f32", to=TensorProto.FLOAT),
             node("Cast", ["i"], "i_to_bool", to=TensorProto.BOOL),
             node("Cast", ["u"], "u_to_i32", to=TensorProto.INT32),
             node("Cast", ["u"], "u_to_i8", to=TensorProto.INT8),
             node("Cast", ["u"], "u_to_f16", to=TensorProto.FLOAT16),
             node("Cast", ["b"], "b_to_f32", to=TensorProto.FLOAT),
             node("Cast", ["b"], "b_to_i64", to=TensorProto.INT64),
             node("Cast", ["b"], "b_to_u8", to=TensorProto.UINT8),
             node("CastLike", ["u", "likef"], "castlike_f64"),
             node("CastLike", ["b", "likei"], "castlike_i32")]
    feeds = {"i": i, "u": u, "b": b}
    consts = {"likef": np.zeros(1, np.float64), "likei": np.zeros(2, np.int32)}
    assert_matches_onnxruntime(model(nodes, feeds, consts, opset=15), feeds, tmp_path)


def test_cast_float16_round_trip(tmp_path):
    h = normal((3, 5), np.float16) * 50
    nodes = [node("Cast", ["h"], "to_f32", to=TensorProto.FLOAT),
             node("Cast", ["h"], "to_i32", to=TensorProto.INT32),
             node("Cast", ["h"], "to_f64", to=TensorProto.DOUBLE)]
    assert_matches_onnxruntime(model(nodes, {"h": h}), {"h": h}, tmp_path)


# --- casts from and to the 8-, 4- and 2-bit types ---------------------------
# onnxruntime has no CPU kernels for most of these: ONNX's reference evaluator
# (ml_dtypes underneath) is the oracle. kiln-run passes them as uint8 arrays
# of their ABI bytes (one element per byte, the code in the low bits).

import ml_dtypes  # noqa: E402  (onnx's own dependency)

NARROW = {
    TensorProto.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn,
    TensorProto.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz,
    TensorProto.FLOAT8E5M2: ml_dtypes.float8_e5m2,
    TensorProto.FLOAT8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz,
    TensorProto.FLOAT4E2M1: ml_dtypes.float4_e2m1fn,
    TensorProto.FLOAT8E8M0: ml_dtypes.float8_e8m0fnu,
    TensorProto.INT4: ml_dtypes.int4,
    TensorProto.UINT4: ml_dtypes.uint4,
    TensorProto.INT2: ml_dtypes.int2,
    TensorProto.UINT2: ml_dtypes.uint2,
}
NARROW_FLOATS = [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ,
                 TensorProto.FLOAT8E5M2, TensorProto.FLOAT8E5M2FNUZ,
                 TensorProto.FLOAT4E2M1]


def narrow_model(nodes, inputs, opset=25):
    """Like model(), with inputs given as {name: (onnx type, shape)}."""
    graph_inputs = [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()]
    outputs = [helper.make_tensor_value_info(n.output[0], TensorProto.UNDEFINED, None)
               for n in nodes]
    graph = helper.make_graph(nodes, "narrow", graph_inputs, outputs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 11
    return onnx.shape_inference.infer_shapes(m, strict_mode=True)


def assert_narrow_matches_reference(m, feeds, tmp_path):
    """Runs `m` with Kiln and ONNX's reference; results must be identical (NaN
    codes may differ, NaN must be NaN). `feeds` hold ml_dtypes arrays."""
    kiln_feeds = {n: v.view(np.uint8) if v.dtype.type in NARROW.values() else v
                  for n, v in feeds.items()}
    got = run_compiled(compile_model(m, tmp_path), kiln_feeds, tmp_path)
    names = [o.name for o in m.graph.output]
    for name, want in zip(names, ReferenceEvaluator(m).run(None, feeds)):
        have = got[name]
        if want.dtype.type in NARROW.values():
            assert have.dtype == np.uint8, f"{name}: dtype {have.dtype}"
            have = have.view(want.dtype)
        assert have.dtype == want.dtype, f"{name}: dtype {have.dtype}, expected {want.dtype}"
        assert have.shape == want.shape, name
        if want.dtype.type in (ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2,
                               ml_dtypes.uint2) or want.dtype.kind in "iub":
            np.testing.assert_array_equal(have.view(np.uint8) if have.itemsize == 1
                                          else have,
                                          want.view(np.uint8) if want.itemsize == 1
                                          else want, err_msg=name)
        else:
            np.testing.assert_array_equal(have.astype(np.float64),
                                          want.astype(np.float64), err_msg=name)


def float_edge_cases():
    """Values around every narrow float's boundaries: halfway points, the
    largest finite values and just above, subnormals, specials."""
    base = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-7, -1e-7, 1e30, -1e30,
            448, 449, 464, 464.0001, 465, 480, 240, 247.9, 248, 256, 57344,
            61439, 61440, 61441, 65536, 6, 5, 7, 0.25, 0.75, 2.5, 0.24,
            2.0 ** -6, 2.0 ** -7, 2.0 ** -9, 2.0 ** -10, 2.0 ** -11,
            2.0 ** -14, 2.0 ** -16, 2.0 ** -17, 2.0 ** -18, 1.0625, 1.1875]
    values = np.array(base + [-v for v in base], np.float32)
    scales = np.float32(2.0) ** RNG.integers(-20, 17, size=400).astype(np.float32)
    return np.concatenate([values, (RNG.standard_normal(400) * scales).astype(np.float32)])


@pytest.mark.parametrize("saturate", [1, 0])
def test_cast_to_narrow_floats(saturate, tmp_path):
    x = float_edge_cases()
    with np.errstate(over="ignore"):
        h = x.astype(np.float16)
    nodes = []
    for to in NARROW_FLOATS:
        name = TensorProto.DataType.Name(to).lower()
        nodes.append(node("Cast", ["x"], f"x_{name}", to=to, saturate=saturate))
        nodes.append(node("Cast", ["h"], f"h_{name}", to=to, saturate=saturate))
    m = narrow_model(nodes, {"x": (TensorProto.FLOAT, x.shape),
                             "h": (TensorProto.FLOAT16, h.shape)})
    assert_narrow_matches_reference(m, {"x": x, "h": h}, tmp_path)


def test_cast_from_narrow_floats_every_code(tmp_path):
    codes = np.arange(256, dtype=np.uint8)
    inputs, feeds, nodes = {}, {}, []
    for t in NARROW_FLOATS + [TensorProto.FLOAT8E8M0]:
        name = TensorProto.DataType.Name(t).lower()
        dtype = NARROW[t]
        value = (codes[:16] if t == TensorProto.FLOAT4E2M1 else codes).view(dtype)
        inputs[name], feeds[name] = (t, value.shape), value
        nodes += [node("Cast", [name], f"{name}_f32", to=TensorProto.FLOAT),
                  node("Cast", [name], f"{name}_f16", to=TensorProto.FLOAT16),
                  node("CastLike", [name, "like"], f"{name}_f64")]
    inputs["like"], feeds["like"] = (TensorProto.DOUBLE, [1]), np.zeros(1)
    assert_narrow_matches_reference(narrow_model(nodes, inputs), feeds, tmp_path)


@pytest.mark.parametrize("saturate", [1, 0])
def test_cast_to_e8m0_round_modes(saturate, tmp_path):
    x = np.concatenate([float_edge_cases(), np.array(
        [1.5, 1.25, 1.75, 3.0, 2.0 ** 127, 1.5 * 2.0 ** 127, 3e38, 2.0 ** -127,
         2.0 ** -126, 1.5 * 2.0 ** -126], np.float32)])
    nodes = [node("Cast", ["x"], f"e8m0_{mode}", to=TensorProto.FLOAT8E8M0,
                  saturate=saturate, round_mode=mode)
             for mode in ("up", "down", "nearest")]
    m = narrow_model(nodes, {"x": (TensorProto.FLOAT, x.shape)})
    assert_narrow_matches_reference(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("types", [(TensorProto.INT4, TensorProto.INT2),
                                   (TensorProto.UINT4, TensorProto.UINT2)])
def test_cast_narrow_integers(types, tmp_path):
    # Signed and unsigned targets in separate models: their results are the
    # same bits, which the compiler computes once.
    f = np.array([-9.7, -8, -2.5, -1, -0.5, 0, 0.5, 1.9, 2.5, 3, 7, 8, 15.5, 16,
                  17, 300, -300, 1e10], np.float32)
    i8 = np.arange(-128, 128, dtype=np.int8)
    nodes, inputs, feeds = [], {"f": (TensorProto.FLOAT, f.shape),
                                "i8": (TensorProto.INT8, i8.shape)}, {"f": f, "i8": i8}
    for t in types:
        name = TensorProto.DataType.Name(t).lower()
        nodes += [node("Cast", ["f"], f"f_{name}", to=t),
                  node("Cast", ["i8"], f"i8_{name}", to=t)]
        count = 16 if t in (TensorProto.INT4, TensorProto.UINT4) else 4
        value = np.arange(count, dtype=np.uint8).view(NARROW[t])
        inputs[name], feeds[name] = (t, value.shape), value
        nodes += [node("Cast", [name], f"{name}_f32", to=TensorProto.FLOAT),
                  node("Cast", [name], f"{name}_f16", to=TensorProto.FLOAT16),
                  node("Cast", [name], f"{name}_i8", to=TensorProto.INT8),
                  node("Cast", [name], f"{name}_u8", to=TensorProto.UINT8)]
    assert_narrow_matches_reference(narrow_model(nodes, inputs), feeds, tmp_path)


def test_cast_float64_to_float16_rounds_once(tmp_path):
    # Doubles just off the halfway points between float16 neighbours: rounding
    # through float32 to nearest would land on the halfway point and round to
    # even; the result must be the nearest float16.
    h = (normal(400) * 100).astype(np.float16)
    ulp = np.spacing(h).astype(np.float64)
    half = h.astype(np.float64) + ulp / 2
    x = np.concatenate([half + ulp * 2.0 ** -20, half - ulp * 2.0 ** -20, half,
                        np.array([65519.99, 65520.0, 1e300, -1e300, np.nan, 1e-300])])
    m = model([node("Cast", ["x"], "h", to=TensorProto.FLOAT16)], {"x": x})
    got = run_compiled(compile_model(m, tmp_path), {"x": x}, tmp_path)["h"]
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, x.astype(np.float16))


def test_equal_outputs_get_their_own_buffers(tmp_path):
    # Two outputs that CSE makes one value (and one output that is an input).
    x = normal((3, 4))
    nodes = [node("Relu", ["x"], "a"), node("Relu", ["x"], "b"),
             node("Identity", ["x"], "c")]
    assert_matches_onnxruntime(model(nodes, {"x": x}), {"x": x}, tmp_path)


def test_narrow_input_with_high_bits_is_refused(tmp_path):
    # An int4 element's byte keeps bits 4-7 zero (the ABI's layout): the
    # runtime refuses anything else instead of computing with it.
    from kiln_testing import KilnError
    m = narrow_model([node("Cast", ["x"], "y", to=TensorProto.FLOAT)],
                     {"x": (TensorProto.INT4, [3])})
    so = compile_model(m, tmp_path)
    good = np.array([0x0F, 0x08, 0x07], np.uint8)
    np.testing.assert_array_equal(run_compiled(so, {"x": good}, tmp_path)["y"],
                                  np.array([-1, -8, 7], np.float32))
    with pytest.raises(KilnError, match="element 0 is 0xff"):
        run_compiled(so, {"x": np.array([0xFF, 0, 0], np.uint8)}, tmp_path)


@pytest.mark.parametrize("source,target", [
    (np.float32, np.int32), (np.int32, np.float32), (np.float64, np.int64),
    (np.uint16, np.int16), (np.int8, np.uint8), (np.float16, np.uint16),
    (np.uint32, np.float32)])
def test_bitcast(source, target, tmp_path):
    """The bits kept, the type changed: numpy's view is the reference."""
    x = (normal((2, 5)) * 100).astype(source)
    m = model([node("BitCast", ["x"], "y", to=NP_TO_ONNX[np.dtype(target)])], {"x": x},
              opset=26)
    got = run_compiled(compile_model(m, tmp_path), {"x": x}, tmp_path)["y"]
    assert got.dtype == target
    np.testing.assert_array_equal(got.view(np.uint8), x.view(np.uint8))


def test_bitcast_bool(tmp_path):
    x = np.array([[True, False, True]])
    m = model([node("BitCast", ["x"], "y", to=TensorProto.UINT8)], {"x": x}, opset=26)
    got = run_compiled(compile_model(m, tmp_path / "to"), {"x": x}, tmp_path / "to")["y"]
    np.testing.assert_array_equal(got, np.array([[1, 0, 1]], np.uint8))
    # A width mismatch (which onnx's own inference refuses too) is an error
    # naming the node.
    graph = helper.make_graph(
        [helper.make_node("BitCast", ["x"], ["y"], name="wide", to=TensorProto.INT32)],
        "bitcast", [helper.make_tensor_value_info("x", TensorProto.BOOL, [1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 3])])
    wide = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 26)])
    wide.ir_version = 8
    with pytest.raises(Exception) as error:
        compile_model(wide, tmp_path / "wide")
    assert ("node 'wide' (BitCast): cannot bit-cast 'i1' to INT32: they differ in width"
            in str(error.value))
