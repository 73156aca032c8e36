"""The recurrent layers of the tf-keras golden file tf_rnn.npz, as source text evaluated by both
sides (make_tf_rnn.py with tf-keras, test_recurrent.py with mixprec) with ``L`` = layers in
scope. Data only: no imports. name -> (layer source, call keyword source): the layer is
built on X (batch 3, 5 steps, 4 features), its weights set from the shared generator in
``layer.weights`` order, then called on X with the keywords (MASK: steps 3-4 of example 0
and step 0 of example 2 masked; H0/C0: initial states of 3 units)."""

CASES = {
    "lstm": ("L.LSTM(3)", "{}"),
    "lstm_seq_state": ("L.LSTM(3, return_sequences=True, return_state=True)", "{}"),
    "lstm_backwards": ("L.LSTM(3, go_backwards=True, return_sequences=True)", "{}"),
    "lstm_mask": ("L.LSTM(3)", "{'mask': MASK}"),
    "lstm_mask_seq": ("L.LSTM(3, return_sequences=True, return_state=True)", "{'mask': MASK}"),
    "lstm_init": ("L.LSTM(3, return_state=True)", "{'initial_state': [H0, C0]}"),
    "lstm_no_forget_bias": ("L.LSTM(3, unit_forget_bias=False, activation='relu')", "{}"),
    "gru": ("L.GRU(3)", "{}"),
    "gru_seq_mask": ("L.GRU(3, return_sequences=True)", "{'mask': MASK}"),
    "gru_reset_before": ("L.GRU(3, reset_after=False, return_sequences=True)", "{}"),
    "gru_no_bias": ("L.GRU(3, use_bias=False, return_state=True)", "{'initial_state': H0}"),
    "simple_rnn": ("L.SimpleRNN(3, return_sequences=True)", "{}"),
    "simple_rnn_mask_backwards": ("L.SimpleRNN(3, go_backwards=True)", "{'mask': MASK}"),
    "rnn_stacked": ("L.RNN([L.LSTMCell(3), L.GRUCell(2)], return_sequences=True, "
                    "return_state=True)", "{}"),
    "rnn_simple_cell": ("L.RNN(L.SimpleRNNCell(3, activation='sigmoid'))", "{'mask': MASK}"),
    "bidi_concat": ("L.Bidirectional(L.LSTM(3, return_sequences=True))", "{}"),
    "bidi_sum_mask": ("L.Bidirectional(L.GRU(3), merge_mode='sum')", "{'mask': MASK}"),
    "bidi_ave_state": ("L.Bidirectional(L.SimpleRNN(3, return_state=True), merge_mode='ave')",
                       "{}"),
    "bidi_none_seq": ("L.Bidirectional(L.LSTM(2, return_sequences=True), merge_mode=None)",
                      "{}"),
    "bidi_mul": ("L.Bidirectional(L.GRU(2, return_sequences=True), merge_mode='mul')",
                 "{'mask': MASK}"),
}


def data(rng):
    import numpy as np

    mask = np.ones((3, 5), bool)
    mask[0, 3:] = False
    mask[2, 0] = False
    return {"X": rng.standard_normal((3, 5, 4)).astype("float32"),
            "MASK": mask,
            "H0": rng.standard_normal((3, 3)).astype("float32") * 0.5,
            "C0": rng.standard_normal((3, 3)).astype("float32") * 0.5}


def weights_for(layer, rng):
    """Values for each of ``layer.weights`` in order, uniform in [-0.6, 0.6)."""
    return [rng.uniform(-0.6, 0.6, tuple(w.shape)).astype("float32") for w in layer.weights]
