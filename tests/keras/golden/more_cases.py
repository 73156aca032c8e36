"""The layers of the second tf-keras golden file (tf_more_layers.npz), as source text
evaluated by both sides (make_tf_more_layers.py with tf-keras, test_more_layers_tf.py with
mixprec) with ``L`` = layers and ``keras`` in scope. Data only: no imports."""

# name -> (layer factory source, input name or list of input names)
CASES = {
    "conv2dT_s2_same": ("L.Conv2DTranspose(3, 3, strides=2, padding='same')", "x4"),
    "conv2dT_valid_op": ("L.Conv2DTranspose(4, (3, 2), strides=(2, 3), output_padding=(1, 2), "
                         "activation='relu', kernel_regularizer='l2')", "x4"),
    "conv2dT_s1": ("L.Conv2DTranspose(2, 3)", "x4"),
    "conv1dT_same": ("L.Conv1DTranspose(3, 4, strides=3, padding='same')", "x3"),
    "conv1dT_op": ("L.Conv1DTranspose(2, 3, strides=2, output_padding=1)", "x3"),
    "sep2d_same": ("L.SeparableConv2D(5, 3, depth_multiplier=2, padding='same', strides=2)",
                   "x4"),
    "sep2d_dil": ("L.SeparableConv2D(4, (2, 3), dilation_rate=2, pointwise_regularizer='l2')",
                  "x4"),
    "sep1d_causal": ("L.SeparableConv1D(4, 3, padding='causal', depth_multiplier=2, "
                     "dilation_rate=2)", "x3"),
    "sep1d_s2": ("L.SeparableConv1D(3, 2, strides=2, activation='relu')", "x3"),
    "dw1d_same": ("L.DepthwiseConv1D(3, depth_multiplier=2, padding='same')", "x3"),
    "dw1d_s2": ("L.DepthwiseConv1D(2, strides=2)", "x3"),
    "crop1d": ("L.Cropping1D((2, 3))", "x3"),
    "crop2d": ("L.Cropping2D(((1, 2), (3, 1)))", "x4"),
    "crop2d_cf": ("L.Cropping2D(1, data_format='channels_first')", "x4"),
    "zpad1d": ("L.ZeroPadding1D((1, 3))", "x3"),
    "up1d": ("L.UpSampling1D(3)", "x3"),
    "up2d": ("L.UpSampling2D((2, 3))", "x4"),
    "up2d_bilinear": ("L.UpSampling2D(2, interpolation='bilinear')", "x4"),
    "up2d_bilinear_cf": ("L.UpSampling2D((3, 2), data_format='channels_first', "
                         "interpolation='bilinear')", "x4"),
    "prelu": ("L.PReLU()", "x4"),
    "prelu_shared": ("L.PReLU(shared_axes=[1, 2])", "x4"),
    "thresholded_relu": ("L.ThresholdedReLU(0.5)", "x4"),
    "activity_reg": ("L.ActivityRegularization(l1=0.01, l2=0.02)", "x2"),
    "unit_norm": ("L.UnitNormalization()", "x3"),
    "unit_norm_axes": ("L.UnitNormalization(axis=[1, 2])", "x3"),
    "group_norm": ("L.GroupNormalization(groups=3)", "x3"),
    "group_norm_axis1": ("L.GroupNormalization(groups=3, axis=1, gamma_regularizer='l2')", "x4"),
    "instance_norm": ("L.GroupNormalization(groups=-1, center=False)", "x4"),
    "spatial_dropout1d": ("L.SpatialDropout1D(0.5)", "x3"),
    "spatial_dropout2d": ("L.SpatialDropout2D(0.3, data_format='channels_first')", "x4"),
    "gaussian_noise": ("L.GaussianNoise(0.2, seed=3)", "x2"),
    "gaussian_dropout": ("L.GaussianDropout(0.2)", "x2"),
    "alpha_dropout": ("L.AlphaDropout(0.2, seed=1)", "x2"),
    "dot_1": ("L.Dot(axes=1)", ["x2a", "x2b"]),
    "dot_norm": ("L.Dot(axes=(2, 2), normalize=True)", ["x3a", "x3b"]),
    "dot_11": ("L.Dot(axes=(1, 1))", ["x3a", "x3c"]),
    "dot_neg": ("L.Dot(axes=-1)", ["x2a", "x2b"]),
    "time_dense": ("L.TimeDistributed(L.Dense(4, activation='tanh'))", "x3"),
    "time_conv": ("L.TimeDistributed(L.Conv2D(2, 3))", "x5"),
    "einsum_ab": ("L.EinsumDense('ab,bc->ac', output_shape=4, bias_axes='c')", "x2"),
    "einsum_abc": ("L.EinsumDense('abc,cd->abd', output_shape=(None, 3), bias_axes='d')", "x3"),
    "einsum_left": ("L.EinsumDense('...b,bc->...c', output_shape=3, bias_axes='c')", "x3"),
    "einsum_heads": ("L.EinsumDense('abc,cde->abde', output_shape=(None, 2, 3), "
                     "bias_axes='de', activation='relu')", "x3"),
    "einsum_right": ("L.EinsumDense('ab...,bc->ac...', output_shape=3, bias_axes='c')", "x3"),
    "masking": ("L.Masking(0.0)", "x3m"),
}
