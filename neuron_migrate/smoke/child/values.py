"""Values the smoke hooks read from the script, as whole tensors. Child process only.

A DTensor (a tensor-parallel output, a `loss_parallel` loss) is gathered
into its whole value first, so the N-rank run and the 1-rank run compare like for like.
"""

from __future__ import annotations

import torch

try:
    from torch.distributed.tensor import DTensor as _DTensor
except ImportError:  # torch built without distributed
    _DTensor = None


def full_tensor(tensor: torch.Tensor) -> torch.Tensor:
    """The whole value of a DTensor, else `tensor` itself.

    Every rank of the DTensor's mesh reaches this point at the same call (the forward call,
    backward or optimizer step that made the value ran collectives on all of them), so the
    all-gather inside cannot wait for a rank that never comes.
    """
    if _DTensor is not None and isinstance(tensor, _DTensor):
        return tensor.full_tensor()
    return tensor
