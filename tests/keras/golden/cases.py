"""The layers of the tf-keras golden file, as source text evaluated by both sides
(make_tf_layers.py with tf-keras, test_golden_tf.py with mixprec) with ``L`` = layers and
``keras`` in scope. Data only: no imports."""

# name -> (layer factory source, input name)
CASES = {
    "conv_g2_same_s2": ("L.Conv2D(4, 3, strides=2, padding='same', groups=2, "
                        "activation='relu')", "x4"),
    "conv_dil2": ("L.Conv2D(5, 3, dilation_rate=2, "
                  "kernel_regularizer=keras.regularizers.L1L2(0.01, 0.02))", "x4"),
    "conv_cf": ("L.Conv2D(3, (2, 3), data_format='channels_first', bias_regularizer='l2')",
                "x4"),
    "dw": ("L.DepthwiseConv2D(3, depth_multiplier=2, padding='same')", "x4"),
    "conv1d_causal": ("L.Conv1D(4, 3, padding='causal', dilation_rate=2)", "x3"),
    "conv1d_s2": ("L.Conv1D(4, 3, strides=2, padding='same', activation='tanh')", "x3"),
    "maxpool_same": ("L.MaxPooling2D(3, 2, padding='same')", "x4"),
    "avgpool_same": ("L.AveragePooling2D(3, 2, padding='same')", "x4"),
    "avgpool1d": ("L.AveragePooling1D(3, 2, padding='same')", "x3"),
    "maxpool1d": ("L.MaxPooling1D()", "x3"),
    "gap_keep": ("L.GlobalAveragePooling2D(keepdims=True)", "x4"),
    "gmp1d": ("L.GlobalMaxPooling1D()", "x3"),
    "zpad": ("L.ZeroPadding2D(((1, 2), (0, 1)))", "x4"),
    "relu": ("L.ReLU(max_value=2.0, negative_slope=0.3, threshold=0.5)", "x4"),
    "dense_act": ("L.Dense(3, activity_regularizer='l2', kernel_regularizer='l1')", "x2"),
}
