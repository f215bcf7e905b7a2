# HF-style fine-tune loop under torchrun: master_print, rendezvous, mesh_reduce and xm.save.
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def _mesh_reduce(data, reduce_fn):
    """Gather `data` from every rank and reduce the list (what `xm.mesh_reduce` did)."""
    if isinstance(data, torch.Tensor):
        data = data.cpu()
    if not torch.distributed.is_available() or not torch.distributed.is_initialized():
        return reduce_fn([data])
    values = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(values, data)
    return reduce_fn(values)


def _to_cpu(data):
    """Copy the tensors in `data` to the CPU, as torch_xla's save did before writing."""
    if isinstance(data, torch.Tensor):
        return data.cpu()
    if isinstance(data, dict):
        return type(data)((k, _to_cpu(v)) for k, v in data.items())
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_to_cpu(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_to_cpu(v) for v in data)
    return data


class TinyClassifier(nn.Module):
    def __init__(self, vocab=100, width=16, labels=2):
        super().__init__()
        self.embeddings = nn.EmbeddingBag(vocab, width)
        self.classifier = nn.Linear(width, labels)

    def forward(self, input_ids, labels=None):
        logits = self.classifier(self.embeddings(input_ids))
        loss = nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return {"loss": loss, "logits": logits}


def synthetic_batches(rank, count=4, batch=4, length=12):
    generator = torch.Generator().manual_seed(rank)
    batches = []
    for _ in range(count):
        ids = torch.randint(0, 100, (batch, length), generator=generator)
        batches.append({"input_ids": ids, "labels": (ids[:, 0] > 50).long()})
    return batches


def main():
    dist.init_process_group("neuron")
    device = torch.device("neuron")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(TinyClassifier().to(device))
    dist.barrier()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    output_dir = tempfile.mkdtemp(prefix="hf_finetune_")
    model.train()
    for step, batch in enumerate(synthetic_batches(rank)):
        batch = {k: v.to(device) for k, v in batch.items()}
        outputs = model(**batch)
        outputs["loss"].backward()
        optimizer.step()
        optimizer.zero_grad()
        if rank == 0:
            print(f"step {step} loss {outputs['loss'].item():.4f}")
        if int(os.environ.get("LOCAL_RANK", 0)) == 0:
            torch.save(_to_cpu(model.module.state_dict()), os.path.join(output_dir, "checkpoint.pt"))
        dist.barrier()
    correct = (outputs["logits"].argmax(-1) == batch["labels"]).sum().item()
    total = _mesh_reduce(correct, sum)
    if rank == 0:
        print(f"correct {total}")


if __name__ == "__main__":
    main()
