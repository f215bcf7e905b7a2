"""neuron-migrate: find and fix torch_xla code for the native TorchNeuron `neuron` device."""

__version__ = "0.1.0"
