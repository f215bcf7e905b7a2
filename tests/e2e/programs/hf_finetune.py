# HF-style fine-tune loop under torchrun: master_print, rendezvous, mesh_reduce and xm.save.
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_backend  # noqa: F401
import torch_xla.runtime as xr
from torch.nn.parallel import DistributedDataParallel as DDP


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
    dist.init_process_group("xla", init_method="xla://")
    device = xm.xla_device()
    rank = xr.global_ordinal()
    torch.manual_seed(0)
    model = DDP(TinyClassifier().to(device))
    xm.rendezvous("model_ready")
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    output_dir = tempfile.mkdtemp(prefix="hf_finetune_")
    model.train()
    for step, batch in enumerate(synthetic_batches(rank)):
        batch = {k: v.to(device) for k, v in batch.items()}
        outputs = model(**batch)
        outputs["loss"].backward()
        optimizer.step()
        optimizer.zero_grad()
        xm.master_print(f"step {step} loss {outputs['loss'].item():.4f}")
        xm.save(model.module.state_dict(), os.path.join(output_dir, "checkpoint.pt"))
    correct = (outputs["logits"].argmax(-1) == batch["labels"]).sum().item()
    total = xm.mesh_reduce("eval_correct", correct, sum)
    xm.master_print(f"correct {total}")


if __name__ == "__main__":
    main()
