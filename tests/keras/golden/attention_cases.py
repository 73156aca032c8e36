"""The attention layers of the tf-keras golden file tf_attention.npz, evaluated by both sides
(make_tf_attention.py with tf-keras, test_attention.py with mixprec) with ``L`` = layers.
Data only: no imports. name -> (layer source, call source over the layer ``lay`` and the
arrays of ``data``): the layer is called once, its weights set from the shared generator in
``layer.weights`` order, then called again; outputs and gradients (with respect to Q and
every weight) are recorded."""

CASES = {
    "att_dot": ("L.Attention()", "lay([Q, V])"),
    "att_scale_scores": ("L.Attention(use_scale=True)",
                         "lay([Q, V, K], return_attention_scores=True)"),
    "att_concat_masks": ("L.Attention(use_scale=True, score_mode='concat')",
                         "lay([Q, V], mask=[QM, VM])"),
    "att_causal": ("L.Attention()", "lay([Q, Q], use_causal_mask=True)"),
    "add_att": ("L.AdditiveAttention()", "lay([Q, V, K], mask=[QM, VM])"),
    "add_att_noscale": ("L.AdditiveAttention(use_scale=False)",
                        "lay([Q, V], return_attention_scores=True)"),
    "mha_self": ("L.MultiHeadAttention(num_heads=2, key_dim=3)", "lay(Q, Q)"),
    "mha_cross_key": ("L.MultiHeadAttention(num_heads=3, key_dim=2, value_dim=4)",
                      "lay(Q, V, K, return_attention_scores=True)"),
    "mha_mask": ("L.MultiHeadAttention(num_heads=2, key_dim=2)",
                 "lay(Q, V, attention_mask=AM)"),
    "mha_causal": ("L.MultiHeadAttention(num_heads=2, key_dim=4, use_bias=False)",
                   "lay(Q, Q, use_causal_mask=True)"),
    "mha_output_shape": ("L.MultiHeadAttention(num_heads=2, key_dim=2, output_shape=(3, 2))",
                         "lay(Q, V)"),
    "mha_axes": ("L.MultiHeadAttention(num_heads=2, key_dim=2, attention_axes=(2,))",
                 "lay(Q4, Q4)"),
}


def data(rng):
    import numpy as np

    qm = np.ones((2, 4), bool)
    qm[0, 3] = False
    vm = np.ones((2, 5), bool)
    vm[1, 3:] = False
    am = rng.random((2, 4, 5)) > 0.3
    am[:, :, 0] = True
    return {"Q": rng.standard_normal((2, 4, 6)).astype("float32"),
            "V": rng.standard_normal((2, 5, 6)).astype("float32"),
            "K": rng.standard_normal((2, 5, 6)).astype("float32"),
            "Q4": rng.standard_normal((2, 3, 4, 5)).astype("float32"),
            "QM": qm, "VM": vm, "AM": am}


def weights_for(layer, rng):
    return [rng.uniform(-0.7, 0.7, tuple(w.shape)).astype("float32") for w in layer.weights]
