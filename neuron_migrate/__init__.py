"""neuron-migrate: find and fix torch_xla code for the native TorchNeuron `neuron` device."""

__version__ = "0.1.0"

# Whether this process ends when its command does: the console script and `python -m` say so
# (`neuron_migrate.__main__.run`), and then nothing is tidied up for code that would run after
# the command (the garbage collector's thresholds, see `run.parallel.fewer_collections`).
ENDS_WITH_COMMAND = False
