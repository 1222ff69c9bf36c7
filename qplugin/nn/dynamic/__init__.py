"""qplugin.nn.dynamic: dynamically quantized modules (≙ torch.ao.nn.quantized.dynamic): float
input and output, weights quantized once, activations quantized per call."""
from .conv import (Conv1d, Conv2d, Conv3d, ConvTranspose1d,  # noqa: F401
                   ConvTranspose2d, ConvTranspose3d)
from .linear import Linear, LinearPackedParams, LinearPackedParamsFp16, LinearReLU  # noqa: F401
from .rnn import GRU, LSTM, GRUCell, LSTMCell, RNNCell  # noqa: F401

__all__ = ["Linear", "LinearPackedParams", "LinearPackedParamsFp16", "LinearReLU", "LSTM", "GRU",
           "LSTMCell", "GRUCell", "RNNCell", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
           "ConvTranspose2d", "ConvTranspose3d"]
