"""Every convolution algorithm against onnxruntime, on many shapes.

kiln-compile --conv-algorithm forces one algorithm (im2col, direct, or
Winograd F(2,3), F(4,3), F(6,3)); the cost model's own choice (auto) is
checked as well, and --report must name the algorithm that ran. Each runs in
both layouts: NCHW (im2col, direct as a loop nest, Winograd) and the
blocked NCHWc default (direct as register-blocked output tiles over the
whole window, Winograd).
"""

import re
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from kiln_testing import (KILN_COMPILE, KilnError, assert_matches_onnxruntime,
                          compile_model, run_onnxruntime)

ALGORITHMS = {
    "nchw": ["im2col", "direct", "winograd-2x3", "winograd-4x3", "winograd-6x3"],
    "blocked": ["direct", "winograd-2x3", "winograd-4x3", "winograd-6x3"],
}
LAYOUT_ALGORITHMS = [(layout, algorithm) for layout, names in ALGORITHMS.items()
                     for algorithm in names]


def conv_model(n, c, k, h, w, kernel=3, pads=(1, 1, 1, 1), strides=(1, 1),
               dilations=(1, 1), group=1, bias=True, seed=0):
    """One Conv node with He-scaled weights, as a trained network has."""
    rng = np.random.default_rng(seed)
    fan_in = c // group * kernel * kernel
    weights = rng.normal(0, np.sqrt(2 / fan_in), (k, c // group, kernel, kernel))
    inits = [numpy_helper.from_array(weights.astype(np.float32), "w")]
    inputs = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(
            rng.normal(0, 0.1, (k,)).astype(np.float32), "b"))
        inputs.append("b")
    node = helper.make_node("Conv", inputs, ["y"], name="layer", pads=list(pads),
                            strides=list(strides), dilations=list(dilations),
                            group=group, kernel_shape=[kernel, kernel])
    graph = helper.make_graph(
        [node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                       [n, c, h, w])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, k, None, None])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    onnx.checker.check_model(model)
    x = np.random.default_rng(seed + 1).standard_normal((n, c, h, w)).astype(np.float32)
    return model, {"x": x}


# (n, c, k, h, w, pads): odd sizes, sizes that are and are not multiples of
# the Winograd tiles, no padding, asymmetric padding, a batch of 2.
SHAPES_3X3 = [
    (1, 8, 16, 12, 12, (1, 1, 1, 1)),
    (1, 3, 5, 7, 9, (1, 1, 1, 1)),
    (2, 16, 8, 13, 11, (1, 1, 1, 1)),
    (1, 4, 4, 10, 10, (0, 0, 0, 0)),
    (1, 6, 7, 9, 8, (0, 1, 2, 1)),
    (1, 32, 32, 24, 24, (1, 1, 1, 1)),
]


@pytest.mark.parametrize("layout, algorithm", LAYOUT_ALGORITHMS,
                         ids=[f"{layout}-{alg}" for layout, alg in LAYOUT_ALGORITHMS])
@pytest.mark.parametrize("shape", SHAPES_3X3,
                         ids=["x".join(map(str, s[:5])) + "p" + "".join(map(str, s[5]))
                              for s in SHAPES_3X3])
def test_3x3_stride1_every_algorithm(tmp_path, layout, algorithm, shape):
    n, c, k, h, w, pads = shape
    model, feeds = conv_model(n, c, k, h, w, pads=pads, bias=(c % 2 == 0))
    assert_matches_onnxruntime(model, feeds, tmp_path,
                               compile_args=[f"--layout={layout}",
                                             f"--conv-algorithm={algorithm}"])


OTHER_ALGORITHMS = [("nchw", "im2col"), ("nchw", "direct"), ("nchw", "auto"),
                    ("blocked", "direct"), ("blocked", "auto")]


@pytest.mark.parametrize("layout, algorithm", OTHER_ALGORITHMS,
                         ids=[f"{layout}-{alg}" for layout, alg in OTHER_ALGORITHMS])
@pytest.mark.parametrize("case", [
    dict(kernel=3, strides=(2, 2)),
    dict(kernel=3, dilations=(2, 2), pads=(2, 2, 2, 2)),
    dict(kernel=5, pads=(2, 2, 2, 2)),
    dict(kernel=1, pads=(0, 0, 0, 0)),
    dict(kernel=1, pads=(0, 0, 0, 0), strides=(2, 2)),
], ids=["stride2", "dilation2", "5x5", "1x1", "1x1-stride2"])
def test_other_convolutions(tmp_path, layout, algorithm, case):
    model, feeds = conv_model(1, 8, 12, 15, 13, **case)
    assert_matches_onnxruntime(model, feeds, tmp_path,
                               compile_args=[f"--layout={layout}",
                                             f"--conv-algorithm={algorithm}"])


def report_text(model, tmp_path, *args):
    """What `kiln-compile --report` prints for `model`."""
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    proc = subprocess.run([str(KILN_COMPILE), str(path), "-o", str(tmp_path / "r.so"),
                           "--report", *args], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def report(model, tmp_path, *args):
    return re.findall(r"^conv (\S+): (\S+) \((\w[\w ]*);",
                      report_text(model, tmp_path, *args), re.M)


def test_report_lists_choice_and_reason(tmp_path):
    nchw = "--layout=nchw"
    # 256 channels on a 14x14 map: Winograd F(2,3) by the model. F(4,3)
    # does fewer multiply-adds, but its transformed filter, 4x the layer's,
    # is read from memory at every run.
    model, _ = conv_model(1, 256, 256, 14, 14)
    (layer, algorithm, why), = report(model, tmp_path, nchw)
    assert (layer, algorithm, why) == ("layer", "winograd-2x3", "cost model")
    # A wide map: im2col's contraction runs on whole vectors.
    wide, _ = conv_model(1, 32, 32, 56, 56)
    assert report(wide, tmp_path, nchw) == [("layer", "im2col", "cost model")]
    assert report(model, tmp_path, nchw, "--conv-algorithm=layer=im2col") == \
        [("layer", "im2col", "override")]
    assert report(model, tmp_path, nchw, "--conv-algorithm=direct") == \
        [("layer", "direct", "default")]
    # Blocked (the default): F(4,3), whose transforms run along the channel
    # block at the contractions' speed (F(2,3)'s output transform does not);
    # F(4,3) on a 64-channel 56x56 map too; a 512-channel 7x7 map and a
    # strided layer run direct; an im2col default gives way to the cost model.
    assert report(model, tmp_path) == [("layer", "winograd-4x3", "cost model")]
    early, _ = conv_model(1, 64, 64, 56, 56)
    assert report(early, tmp_path) == [("layer", "winograd-4x3", "cost model")]
    # The same layer at batch 8: its transformed tensors (29 MB) leave the
    # cache, and direct is faster (measured 10.9 against 13.2 ms).
    batched, _ = conv_model(8, 64, 64, 56, 56)
    assert report(batched, tmp_path) == [("layer", "direct", "cost model")]
    late, _ = conv_model(1, 512, 512, 7, 7)
    assert report(late, tmp_path) == [("layer", "direct", "cost model")]
    strided, _ = conv_model(1, 32, 32, 28, 28, strides=(2, 2))
    assert report(strided, tmp_path) == [("layer", "direct", "cost model")]
    assert report(model, tmp_path, "--conv-algorithm=im2col") == \
        [("layer", "winograd-4x3", "cost model")]
    assert report(model, tmp_path, "--conv-algorithm=layer=winograd-4x3") == \
        [("layer", "winograd-4x3", "override")]


def test_winograd_default_skips_layers_it_cannot_do(tmp_path):
    """A Winograd default applies where it can; a strided layer falls back to
    the cost model's choice among the others."""
    model, _ = conv_model(1, 8, 8, 16, 16, strides=(2, 2))
    (layer, algorithm, why), = report(model, tmp_path, "--conv-algorithm=winograd-4x3")
    assert algorithm in ("im2col", "direct") and why == "cost model"


@pytest.mark.parametrize("flag, message", [
    ("--conv-algorithm=layer=winograd-4x3", "cannot use winograd-4x3"),
    ("--conv-algorithm=nosuchlayer=im2col", "no convolution named 'nosuchlayer'"),
    ("--conv-algorithm=fastest", "unknown convolution algorithm 'fastest'"),
    ("--conv-algorithm=layer=fastest", "bad convolution algorithm 'layer=fastest'"),
    ("--conv-algorithm=layer=im2col",
     "layer 'layer' cannot use im2col: a convolution in the blocked layout runs direct or "
     "Winograd (--layout=nchw for im2col)"),
])
def test_bad_choices_are_errors(tmp_path, flag, message):
    model, _ = conv_model(1, 8, 8, 16, 16, strides=(2, 2))
    with pytest.raises(KilnError, match=re.escape(message)):
        compile_model(model, tmp_path, [flag])


def with_epilogue(model, residual):
    """`model` (one Conv into y) with Relu after it, and before that the sum
    with a second input of y's shape where `residual` is given."""
    graph = model.graph
    conv = graph.node[0]
    conv.output[0] = "conv"
    nodes = [conv]
    value = "conv"
    if residual is not None:
        graph.input.append(helper.make_tensor_value_info("r", TensorProto.FLOAT,
                                                         list(residual.shape)))
        nodes.append(helper.make_node("Add", [value, "r"], ["sum"], name="residual"))
        value = "sum"
    nodes.append(helper.make_node("Relu", [value], ["y"], name="relu"))
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.checker.check_model(model)
    return model


# Direct blocked convolutions whose tiles of two output channel blocks need
# the layer split (kiln-cpu-tile-and-vectorize): an odd count of 16-channel
# blocks (3) on 13 columns, a prime count (13 of SqueezeNet's last layer, 11
# here, and 111 of its first), each with its epilogue split along.
@pytest.mark.parametrize("case", [
    dict(c=16, k=48, h=13, w=13, kernel=1, pads=(0, 0, 0, 0)),
    dict(c=8, k=32, h=11, w=11, kernel=3, pads=(1, 1, 1, 1)),
    dict(c=3, k=32, h=223, w=223, kernel=3, pads=(0, 0, 0, 0), strides=(2, 2)),
], ids=["odd-blocks-13", "11-columns", "111-columns-stride2"])
@pytest.mark.parametrize("residual", [False, True], ids=["relu", "residual-relu"])
def test_direct_tiles_split_ragged_layers(tmp_path, case, residual):
    assert_direct_matches(tmp_path, case, residual)


def assert_direct_matches(tmp_path, case, residual):
    """One direct convolution of `case` (c, k, h, w and conv_model's
    options) with a Relu, and a residual sum before it with `residual`,
    against onnxruntime."""
    case = dict(case)
    c, k, h, w = case.pop("c"), case.pop("k"), case.pop("h"), case.pop("w")
    model, feeds = conv_model(1, c, k, h, w, **case)
    shape = run_onnxruntime(model, feeds)["y"].shape
    r = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    model = with_epilogue(model, r if residual else None)
    if residual:
        feeds["r"] = r
    assert_matches_onnxruntime(model, feeds, tmp_path,
                               compile_args=["--conv-algorithm=direct"])


@pytest.mark.parametrize("case", [
    # DeepLabV3's ASPP: dilation 12 on a 14x14 map, most taps on padding.
    dict(c=32, k=32, h=14, w=14, pads=(12, 12, 12, 12), dilations=(12, 12)),
    dict(c=16, k=32, h=14, w=14, pads=(6, 6, 6, 6), dilations=(6, 6)),
    # Asymmetric padding, strided, a 5x5 window, columns split in tiles.
    dict(c=16, k=16, h=13, w=29, kernel=5, pads=(5, 0, 0, 7), dilations=(3, 4),
         strides=(2, 1)),
    dict(c=8, k=48, h=9, w=40, pads=(8, 1, 8, 1), dilations=(8, 1)),
], ids=["aspp-d12", "d6", "5x5-asymmetric-strided", "rows-only"])
@pytest.mark.parametrize("residual", [False, True], ids=["relu", "residual-relu"])
def test_dilated_tiles_skip_padding_taps(tmp_path, case, residual):
    """Direct convolutions whose tiles skip the taps that read only padding
    (kiln-cpu-tile-and-vectorize's liveTaps) match onnxruntime, with the
    bias, a residual sum and a Relu fused into the tiles."""
    assert_direct_matches(tmp_path, case, residual)


# Grouped convolutions in the blocked layout (kiln-graph-blocked-layout):
# groups of whole 16-channel blocks (one, two), groups narrower than a block
# merged four or two at a time (ResNeXt's 4 and 8 channels, RegNet's 8 and
# 24), an odd count of groups of 8 (RegNet's 13: the last merged group
# completed by padding), filters per group unlike channels per group, a
# stride, a dilation, 1x1 grouped layers; and through im2col, groups that
# no merge of four makes whole blocks (2 channels; 5 groups of 24 = 7.5
# blocks), 1x1 groups that would need merging (no copy to save: merging
# only multiplies the work) and groups of more than four filter blocks
# (AlexNet's: full-width matrix products).
GROUPED = [
    dict(c=64, k=64, h=14, w=14, group=4),
    dict(c=64, k=64, h=7, w=7, group=2),
    dict(c=128, k=128, h=11, w=11, group=32),
    dict(c=64, k=64, h=9, w=13, group=8, strides=(2, 2)),
    dict(c=48, k=48, h=10, w=10, group=2),
    dict(c=32, k=64, h=8, w=8, group=2),
    dict(c=64, k=32, h=12, w=12, group=4, dilations=(2, 2), pads=(2, 2, 2, 2)),
    dict(c=64, k=128, h=10, w=10, group=8, kernel=1, pads=(0, 0, 0, 0)),
    dict(c=32, k=32, h=8, w=8, group=16),
    dict(c=104, k=104, h=14, w=14, group=13),
    dict(c=120, k=120, h=6, w=6, group=5),
    dict(c=64, k=192, h=13, w=13, group=2),
    dict(c=64, k=64, h=10, w=10, group=4, kernel=1, pads=(0, 0, 0, 0)),
]


@pytest.mark.parametrize("case", GROUPED, ids=[
    "width16", "width32", "width4", "width8-stride2", "width24", "2x-filters",
    "fewer-filters-dilated", "1x1-narrow-im2col", "width2-im2col", "13-groups-of-8",
    "5-groups-of-24-im2col", "wide-groups-im2col", "1x1-whole-blocks"])
@pytest.mark.parametrize("residual", [False, True], ids=["relu", "residual-relu"])
def test_grouped_convolutions(tmp_path, case, residual):
    """Grouped convolutions, with the bias, a residual sum and a Relu fused,
    against onnxruntime; those whose groups make whole blocks run as one
    direct blocked convolution."""
    assert_direct_matches(tmp_path, case, residual)
    case = dict(case)
    c, k, h, w = case.pop("c"), case.pop("k"), case.pop("h"), case.pop("w")
    model, _ = conv_model(1, c, k, h, w, **case)
    text = report_text(model, tmp_path, "--layout=blocked", "--layout-block=16")
    # Groups merged m at a time into whole blocks, the last merged group
    # completed by the padding channels of the blocked tensors.
    group = case["group"]
    blocks = lambda channels: -(-channels // 16)
    merged = next((m for m in (1, 2, 3, 4)
                   if m <= group and m * c // group % 16 == 0
                   and m * k // group % 16 == 0
                   and -(-group // m) * (m * c // group // 16) == blocks(c)
                   and -(-group // m) * (m * k // group // 16) == blocks(k)),
                  None)
    if merged and ((merged > 1 and case.get("kernel", 3) == 1)
                   or merged * k // group > 4 * 16):
        merged = None
    graph_ops = text.split("graph:")[1].splitlines()[0]
    if merged:
        # Merged into one group, it is an ungrouped convolution.
        if -(-group // merged) > 1:
            assert f"{-(-group // merged)} groups of whole blocks" in text
        assert "graph.conv" not in graph_ops, text
    else:
        assert "groups of whole blocks" not in text
        assert "graph.conv: 1" in graph_ops, text


@pytest.mark.parametrize("case", [
    # 128 channel blocks at 14x14: 1.9 MB of input and weights per column
    # of output tiles (four columns), in chunks of 32 blocks.
    dict(c=2048, k=128, h=14, w=14, kernel=1, pads=(0, 0, 0, 0)),
    # A 3x3 layer over 32 blocks at 28x28, chunks of 4.
    dict(c=512, k=128, h=28, w=28),
], ids=["1x1-2048", "3x3-512"])
@pytest.mark.parametrize("residual", [False, True], ids=["relu", "residual-relu"])
def test_direct_reduction_in_chunks(tmp_path, case, residual):
    """Direct convolutions whose reduction does not stay in cache for a
    column of output tiles run it in chunks
    (kiln-cpu-tile-and-vectorize's reductionChunk), the epilogue after the
    last chunk: they match onnxruntime."""
    assert_direct_matches(tmp_path, case, residual)
