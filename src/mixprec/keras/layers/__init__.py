"""``tf.keras.layers``."""

from mixprec.keras.engine.base_layer import Layer  # noqa: F401
from mixprec.keras.engine.input_layer import Input, InputLayer  # noqa: F401
from mixprec.keras.engine.input_spec import InputSpec  # noqa: F401
from mixprec.keras.layers.activation import ReLU  # noqa: F401
from mixprec.keras.layers.activation_layers import ELU, LeakyReLU, Softmax  # noqa: F401
from mixprec.keras.layers.rescaling import Rescaling  # noqa: F401
from mixprec.keras.layers.structure import Identity, Permute, RepeatVector  # noqa: F401
from mixprec.keras.layers.convolutional import (  # noqa: F401
    Conv1D, Conv2D, Convolution1D, Convolution2D, DepthwiseConv2D)
from mixprec.keras.layers.core import (  # noqa: F401
    Activation, Dense, Dropout, Flatten, Lambda, Reshape)
from mixprec.keras.layers.merging import (  # noqa: F401
    Add, Average, Concatenate, Maximum, Minimum, Multiply, Subtract, add, average, concatenate,
    maximum, minimum, multiply, subtract)
from mixprec.keras.layers.embedding import Embedding  # noqa: F401
from mixprec.keras.layers.layer_normalization import LayerNormalization  # noqa: F401
from mixprec.keras.layers.normalization import BatchNormalization  # noqa: F401
from mixprec.keras.layers.pooling import (  # noqa: F401
    AveragePooling1D, AveragePooling2D, AvgPool1D, AvgPool2D, GlobalAveragePooling1D,
    GlobalAveragePooling2D, GlobalAvgPool1D, GlobalAvgPool2D, GlobalMaxPool1D, GlobalMaxPool2D,
    GlobalMaxPooling1D, GlobalMaxPooling2D, MaxPool1D, MaxPool2D, MaxPooling1D, MaxPooling2D)
from mixprec.keras.layers.reshaping import ZeroPadding2D  # noqa: F401
from mixprec.keras.layers.masking import Masking  # noqa: F401
from mixprec.keras.layers.convolutional_more import (  # noqa: F401
    Conv1DTranspose, Conv2DTranspose, Conv3DTranspose, Convolution1DTranspose,
    Convolution2DTranspose, Convolution3DTranspose,
    DepthwiseConv1D, SeparableConv1D, SeparableConv2D, SeparableConvolution1D,
    SeparableConvolution2D)
from mixprec.keras.layers.conv3d import Conv3D, Convolution3D  # noqa: F401
from mixprec.keras.layers.layers3d import (  # noqa: F401
    Cropping3D, GlobalAveragePooling3D, GlobalAvgPool3D, GlobalMaxPool3D, GlobalMaxPooling3D,
    UpSampling3D, ZeroPadding3D)
from mixprec.keras.layers.pooling3d import (  # noqa: F401
    AveragePooling3D, AvgPool3D, MaxPool3D, MaxPooling3D)
from mixprec.keras.layers.resampling import (  # noqa: F401
    Cropping1D, Cropping2D, UpSampling1D, UpSampling2D, ZeroPadding1D)
from mixprec.keras.layers.dot import Dot, dot  # noqa: F401
from mixprec.keras.layers.activation_more import PReLU, ThresholdedReLU  # noqa: F401
from mixprec.keras.layers.regularization import (  # noqa: F401
    ActivityRegularization, AlphaDropout, GaussianDropout, GaussianNoise, SpatialDropout1D,
    SpatialDropout2D, SpatialDropout3D)
from mixprec.keras.layers.wrappers import SpectralNormalization, Wrapper  # noqa: F401
from mixprec.keras.layers.normalization_more import (  # noqa: F401
    GroupNormalization, UnitNormalization)
from mixprec.keras.layers.time_distributed import TimeDistributed  # noqa: F401
from mixprec.keras.layers.einsum_dense import EinsumDense  # noqa: F401
from mixprec.keras.layers.recurrent import (  # noqa: F401
    GRU, LSTM, RNN, AbstractRNNCell, Bidirectional, GRUCell, LSTMCell, SimpleRNN, SimpleRNNCell,
    StackedRNNCells)
from mixprec.keras.layers.attention import (  # noqa: F401
    AdditiveAttention, Attention, MultiHeadAttention)
from mixprec.keras.layers.preprocessing import (  # noqa: F401
    CategoryEncoding, CenterCrop, Discretization, Normalization, RandomBrightness, RandomContrast,
    RandomCrop, RandomFlip, Resizing)
from mixprec.keras.layers.serialization import deserialize, serialize  # noqa: F401
from mixprec.keras.layers import experimental  # noqa: F401,E402  (SyncBatchNormalization)

__all__ = ["Layer", "Input", "InputLayer", "InputSpec", "Dense", "Activation", "Dropout",
           "Flatten", "Reshape", "Lambda", "ReLU", "Conv1D", "Conv2D", "Convolution1D",
           "Convolution2D", "DepthwiseConv2D", "BatchNormalization", "AveragePooling1D",
           "AveragePooling2D", "AvgPool1D", "AvgPool2D", "GlobalAveragePooling1D",
           "GlobalAveragePooling2D", "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalMaxPool1D",
           "GlobalMaxPool2D", "GlobalMaxPooling1D", "GlobalMaxPooling2D", "MaxPool1D",
           "MaxPool2D", "MaxPooling1D", "MaxPooling2D", "ZeroPadding2D", "Add", "Subtract",
           "Multiply", "Average", "Maximum", "Minimum", "Concatenate", "add", "subtract",
           "multiply", "average", "maximum", "minimum", "concatenate", "serialize", "deserialize",
           "Softmax", "LeakyReLU", "ELU", "Identity", "Permute", "RepeatVector", "Rescaling",
           "LayerNormalization", "Embedding", "Masking", "Conv1DTranspose", "Conv2DTranspose",
           "Convolution1DTranspose", "Convolution2DTranspose", "DepthwiseConv1D",
           "SeparableConv1D", "SeparableConv2D", "SeparableConvolution1D",
           "SeparableConvolution2D", "Cropping1D", "Cropping2D", "UpSampling1D", "UpSampling2D",
           "ZeroPadding1D", "Dot", "dot", "PReLU", "ThresholdedReLU", "ActivityRegularization",
           "AlphaDropout", "GaussianDropout", "GaussianNoise", "SpatialDropout1D",
           "SpatialDropout2D", "SpatialDropout3D", "Wrapper", "SpectralNormalization",
           "GroupNormalization", "UnitNormalization", "TimeDistributed",
           "EinsumDense", "Conv3D", "Convolution3D", "Cropping3D", "GlobalAveragePooling3D",
           "GlobalAvgPool3D", "GlobalMaxPool3D", "GlobalMaxPooling3D", "UpSampling3D",
           "ZeroPadding3D", "MaxPooling3D", "AveragePooling3D", "MaxPool3D", "AvgPool3D",
           "Conv3DTranspose", "Convolution3DTranspose",
           "AbstractRNNCell", "SimpleRNNCell",
           "LSTMCell", "GRUCell", "StackedRNNCells", "RNN", "SimpleRNN", "LSTM", "GRU",
           "Bidirectional", "Attention", "AdditiveAttention", "MultiHeadAttention",
           "CategoryEncoding", "CenterCrop", "Discretization", "Normalization",
           "RandomBrightness", "RandomContrast", "RandomCrop", "RandomFlip", "Resizing"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
