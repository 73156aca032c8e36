"""The metrics and losses of the tf-keras golden file tf_metrics.npz, as source text evaluated
by both sides (make_tf_metrics.py with tf-keras, test_golden_metrics.py with mixprec) with
``M`` = keras.metrics and ``Lo`` = keras.losses in scope. Data only: no imports.

METRICS: name -> (factory source, [(y_true, y_pred, sample_weight or None), ...]): the
updates in order; the file holds the result after each. LOSSES: name -> (factory source,
y_true, y_pred, sample_weight or None): the loss value."""

_B = [("yb", "pb", None), ("yb2", "pb2", "swb")]
_ML = [("ym", "pm", None), ("ym", "pm2", "swm")]
_C = [("yc", "pc", None), ("yc", "pc2", "swc")]
_OH = [("yoh", "pc", None), ("yoh", "pc2", "swc")]
_R = [("yr", "pr", None), ("yr", "pr2", "swr")]

METRICS = {
    "tp": ("M.TruePositives()", _B),
    "fp_list": ("M.FalsePositives(thresholds=[0.0, 0.3, 0.5, 1.0])", _B),
    "tn_even": ("M.TrueNegatives(thresholds=[0.0, 0.25, 0.5, 0.75, 1.0])", _B),
    "fn": ("M.FalseNegatives(thresholds=0.7)", _B),
    "precision_topk": ("M.Precision(top_k=2)", _OH),
    "recall_class": ("M.Recall(class_id=1)", _OH),
    "precision_topk_class": ("M.Precision(top_k=2, class_id=2, thresholds=[0.1, 0.4])", _OH),
    "auc": ("M.AUC()", _B),
    "auc_pr": ("M.AUC(curve='PR')", _B),
    "auc_pr_minoring": ("M.AUC(curve='PR', summation_method='minoring', num_thresholds=50)", _B),
    "auc_majoring": ("M.AUC(summation_method='majoring', num_thresholds=7)", _B),
    "auc_gain": ("M.AUC(curve='PR_GAIN', num_thresholds=30)", _B),
    "auc_thresholds": ("M.AUC(thresholds=[0.2, 0.45, 0.5, 0.9])", _B),
    "auc_logits": ("M.AUC(from_logits=True, num_thresholds=40)", [("yb", "lb", None)]),
    "auc_multi": ("M.AUC(multi_label=True)", _ML),
    "auc_multi_lw": ("M.AUC(multi_label=True, label_weights=[0.2, 1.0, 0.5], curve='PR')", _ML),
    "auc_flat_lw": ("M.AUC(label_weights=[0.2, 1.0, 0.5])", _ML),
    "auc_2d": ("M.AUC(num_thresholds=20)", _ML),
    "p_at_r": ("M.PrecisionAtRecall(0.6)", _B),
    "r_at_p": ("M.RecallAtPrecision(0.7, num_thresholds=100)", _B),
    "sens_at_spec": ("M.SensitivityAtSpecificity(0.5)", _B),
    "spec_at_sens": ("M.SpecificityAtSensitivity(0.8, num_thresholds=1)", _B),
    "spec_at_sens_class": ("M.SpecificityAtSensitivity(0.4, class_id=0)", _OH),
    "f1": ("M.F1Score()", _OH),
    "f1_micro": ("M.F1Score(average='micro', threshold=0.3)", _OH),
    "f1_macro": ("M.F1Score(average='macro')", _OH),
    "fbeta_weighted": ("M.FBetaScore(average='weighted', beta=2.0, threshold=0.25)", _OH),
    "r2": ("M.R2Score()", _R),
    "r2_none": ("M.R2Score(class_aggregation=None)", _R),
    "r2_var": ("M.R2Score(class_aggregation='variance_weighted_average', num_regressors=3)", _R),
    "iou": ("M.IoU(num_classes=4, target_class_ids=[0, 2])", [("yc", "ac", None), ("yc", "ac2", "swc")]),
    "mean_iou": ("M.MeanIoU(num_classes=4)", [("yc", "ac", None), ("yc", "ac2", "swc")]),
    "mean_iou_ignore": ("M.MeanIoU(num_classes=4, ignore_class=0)", [("yc", "ac", None)]),
    "binary_iou": ("M.BinaryIoU(target_class_ids=[1], threshold=0.4)", _B),
    "one_hot_iou": ("M.OneHotIoU(num_classes=4, target_class_ids=[1, 3])", _OH),
    "one_hot_mean_iou": ("M.OneHotMeanIoU(num_classes=4)", _OH),
    "mre": ("M.MeanRelativeError(normalizer=[[1.0, 2.0]])", _R),
    "mean_tensor": ("M.MeanTensor()", [("pr", None, None), ("pr2", None, "swr_full")]),
    "squared_hinge_m": ("M.SquaredHinge()", _OH),
    "categorical_hinge_m": ("M.CategoricalHinge()", _OH),
}

LOSSES = {
    "squared_hinge": ("Lo.SquaredHinge()", "yoh", "lc", None),
    "squared_hinge_pm": ("Lo.SquaredHinge()", "ypm", "lc", "swc"),
    "categorical_hinge": ("Lo.CategoricalHinge()", "yoh", "lc", "swc"),
    "bfce": ("Lo.BinaryFocalCrossentropy()", "ym", "pm", None),
    "bfce_balanced": ("Lo.BinaryFocalCrossentropy(apply_class_balancing=True, alpha=0.4, "
                      "gamma=1.5, label_smoothing=0.1)", "ym", "pm", "swm"),
    "bfce_logits": ("Lo.BinaryFocalCrossentropy(from_logits=True, gamma=3.0)", "ym", "lm", None),
    "cfce": ("Lo.CategoricalFocalCrossentropy()", "yoh", "pc", None),
    "cfce_logits": ("Lo.CategoricalFocalCrossentropy(from_logits=True, alpha=0.5, "
                    "label_smoothing=0.2)", "yoh", "lc", "swc"),
    "cfce_none": ("Lo.CategoricalFocalCrossentropy(reduction='none', gamma=0.5)", "yoh", "pc",
                  None),
}


def data(rng):
    """The arrays the cases name, from a numpy Generator (same seed on both sides)."""
    import numpy as np  # the caller's numpy

    d = {}
    d["yb"] = (rng.random(40) > 0.45).astype("float32")
    pb = rng.random(40).astype("float32")
    pb[:6] = [0.0, 0.5, 1.0, 0.25, 0.75, 0.3]  # exactly on thresholds
    d["pb"] = pb
    d["yb2"] = (rng.random(40) > 0.6).astype("float32")
    pb2 = rng.random(40).astype("float32") * 1.3 - 0.15  # a few outside [0, 1]
    d["pb2"] = pb2
    d["swb"] = rng.random(40).astype("float32")
    d["lb"] = (rng.standard_normal(40) * 3).astype("float32")
    d["ym"] = (rng.random((20, 3)) > 0.5).astype("float32")
    d["pm"] = rng.random((20, 3)).astype("float32")
    d["pm2"] = rng.random((20, 3)).astype("float32")
    d["swm"] = rng.random(20).astype("float32")
    d["lm"] = (rng.standard_normal((20, 3)) * 2).astype("float32")
    d["yc"] = rng.integers(0, 4, 30)
    pc = rng.random((30, 4)).astype("float32")
    d["pc"] = pc / pc.sum(1, keepdims=True)
    pc2 = rng.random((30, 4)).astype("float32")
    d["pc2"] = pc2 / pc2.sum(1, keepdims=True)
    d["yoh"] = np.eye(4, dtype="float32")[d["yc"]]
    d["ac"] = rng.integers(0, 4, 30)
    d["ac2"] = rng.integers(0, 4, 30)
    d["swc"] = rng.random(30).astype("float32")
    d["lc"] = (rng.standard_normal((30, 4)) * 2).astype("float32")
    d["ypm"] = np.where(rng.random((30, 4)) > 0.5, 1.0, -1.0).astype("float32")
    d["yr"] = rng.standard_normal((25, 2)).astype("float32")
    d["pr"] = (d["yr"] + rng.standard_normal((25, 2)) * 0.5).astype("float32")
    d["pr2"] = (d["yr"] * 0.8 + rng.standard_normal((25, 2)) * 0.3).astype("float32")
    d["swr"] = rng.random(25).astype("float32")
    d["swr_full"] = rng.random((25, 2)).astype("float32")
    return d
