"""The automatic-mixed-precision lists: ops.def's column against TensorFlow's
auto_mixed_precision_lists.h, the oneDNN bfloat16 variant and the environment overrides."""

import pytest

from mixprec import _core
from mixprec._amp import lists

# TensorFlow's CUDA lists (auto_mixed_precision_lists.h), the names mixprec's ops carry
TF_ALLOW = {"MatMul", "BatchMatMul", "BatchMatMulV2", "Einsum", "Conv2D", "Conv2DBackpropInput",
            "Conv2DBackpropFilter", "Conv3D", "DepthwiseConv2dNative"}
TF_INFER = {"Add", "AddN", "AddV2", "AvgPool", "AvgPoolGrad", "BiasAdd", "BiasAddGrad", "Elu", "EluGrad", "Erf",
            "Erfc", "FloorDiv", "FusedBatchNormV3", "Inv", "LeakyRelu", "LeakyReluGrad", "Log",
            "Log1p", "LogSoftmax", "Mul", "Prod", "RealDiv", "Reciprocal", "Selu", "Sigmoid",
            "SigmoidGrad", "Softmax", "Softplus", "SoftplusGrad", "Softsign", "Sqrt", "Sub", "Tanh",
            "TanhGrad"}
TF_DENY = {"Exp", "Expm1", "L2Loss", "Mean", "Pow", "SaveV2", "SoftmaxCrossEntropyWithLogits",
           "SparseSoftmaxCrossEntropyWithLogits", "Sum"}
TF_CLEAR = {"Abs", "ArgMax", "ArgMin", "BroadcastTo", "Ceil", "ConcatV2", "Equal", "ExpandDims",
            "Fill", "Floor", "GatherNd", "GatherV2", "Greater", "GreaterEqual", "Identity", "IsFinite",
            "IsInf", "IsNan", "Less", "LessEqual", "Max", "MaxPool", "MaxPoolGrad", "MaxPoolGradGrad", "Maximum", "Min", "Minimum",
            "Neg", "NotEqual", "OneHot", "Pack", "Pad", "Relu", "Relu6", "ReluGrad", "Reshape",
            "ReverseV2", "Round", "Select", "SelectV2", "Shape", "Sign", "Slice", "Split", "Squeeze",
            "StopGradient", "StridedSlice", "StridedSliceGrad", "Tile", "TopKV2", "Transpose", "Where"}
# ops TensorFlow has no kernel of their own for: the class of what TF computes them with
# (batch statistics: what TF computes them with, Mean/SquaredDifference/Sum, deny; the fused
# Conv2D/MatMul + bias ops carry the names TF's AMP pass sees, Conv2D and MatMul)
OURS = {"Gelu": "infer", "GeluGrad": "infer", "GeluTanhGrad": "infer",
        "_BatchMoments": "deny", "_BatchMomentsGrad": "deny", "_BatchNormGradSums": "deny"}


@pytest.mark.parametrize("row", _core.op_table(), ids=lambda r: r[1])
def test_every_op_is_classified_as_tensorflow(row):
    _, tf_name, _, _, cls = row
    if tf_name in OURS:
        assert cls == OURS[tf_name]
        return
    want = ("allow" if tf_name in TF_ALLOW else "infer" if tf_name in TF_INFER else
            "deny" if tf_name in TF_DENY else "clear" if tf_name in TF_CLEAR else "none")
    assert cls == want, tf_name


def test_onednn_bfloat16_moves_five_ops_to_infer():
    ls = lists.effective_lists(bf16=True, environ={})
    for op in ("Mean", "Sum", "Rsqrt", "Square", "SquaredDifference"):
        assert op in ls["infer"]
    assert "Mean" not in ls["deny"] and "Exp" in ls["deny"]


@pytest.mark.parametrize("new,old", [("ALLOWLIST", "WHITELIST"), ("DENYLIST", "BLACKLIST")])
def test_environment_overrides(new, old):
    env = "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_"
    ls = lists.effective_lists(environ={env + new + "_ADD": "Exp, Tanh,NoSuchOp",
                                        env + "INFERLIST_REMOVE": "Sigmoid"})
    target = "allow" if new == "ALLOWLIST" else "deny"
    assert {"Exp", "Tanh"} <= ls[target] and "NoSuchOp" not in ls[target]
    assert "Sigmoid" not in ls["infer"]
    ls = lists.effective_lists(environ={env + old + "_REMOVE": "MatMul,Exp"})
    assert "MatMul" not in ls["allow"] or target == "deny"
    assert "Exp" not in ls["deny"] or target == "allow"
    ls = lists.effective_lists(environ={env + "GRAYLIST_ADD": "Square",
                                        env + "CLEARLIST_ADD": "Cast"})
    assert "Square" in ls["infer"] and "Cast" in ls["clear"]


def test_tensor_cores_only_empties_infer_deny_clear():
    env = "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_"
    ls = lists.effective_lists(environ={env + "LEVEL": "tensor_cores_only",
                                        env + "DENYLIST_ADD": "Tanh"})
    assert ls["allow"] and not ls["infer"] and not ls["deny"] and not ls["clear"]


def test_class_table_reaches_the_core(monkeypatch):
    monkeypatch.setenv("TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_ALLOWLIST_ADD", "Exp")
    lists.apply()
    codes = {r[1]: c for r, c in zip(_core.op_table(), _core.amp_classes())}
    assert codes["Exp"] == _core.AMP_ALLOW and codes["MatMul"] == _core.AMP_ALLOW
    assert codes["Sum"] == _core.AMP_DENY and codes["Cast"] == _core.AMP_NONE
