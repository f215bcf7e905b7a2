"""A deterministic, torch_xla-heavy corpus of training scripts and model files.

Every file imports torch_xla, so every file passes the prefilter and is parsed. Files mix the
spellings users write (module aliases, `from ... import`, `try/except ImportError` fallbacks,
plain `torch_xla.sync()`), the environment variables and process-group calls of real Trainium
scripts, and ordinary PyTorch model code around them, so the analysis sees realistic trees.
"""

from __future__ import annotations

import random
from pathlib import Path

_IMPORT_STYLES = (
    (
        "import torch_xla\nimport torch_xla.core.xla_model as xm\nimport torch_xla.runtime as xr\n"
        "import torch_xla.distributed.parallel_loader as pl\n"
        "import torch_xla.distributed.xla_multiprocessing as xmp\n"
    ),
    (
        "import torch_xla\nfrom torch_xla.core import xla_model as xm\nfrom torch_xla import runtime as xr\n"
        "from torch_xla.distributed import parallel_loader as pl\n"
        "from torch_xla.distributed import xla_multiprocessing as xmp\n"
    ),
    (
        "import torch_xla\ntry:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    xm = None\n"
        "import torch_xla.runtime as xr\nimport torch_xla.distributed.parallel_loader as pl\n"
        "import torch_xla.distributed.xla_multiprocessing as xmp\n"
    ),
)

_HEADER = '''"""{title}."""

import argparse
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
{imports}
os.environ["PJRT_DEVICE"] = "TPU"
os.environ.setdefault("XLA_USE_BF16", "1")
os.environ["NEURON_CC_FLAGS"] = "--model-type=transformer"
'''

_MODEL = '''

class {name}Block(nn.Module):
    """A pre-norm transformer block."""

    def __init__(self, dim: int, heads: int = {heads}, dropout: float = 0.{drop}) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, dropout=dropout, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(
            nn.Linear(dim, {mult} * dim),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear({mult} * dim, dim),
        )

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        h = self.norm1(x)
        attn, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
        x = x + attn
        return x + self.mlp(self.norm2(x))


class {name}Model(nn.Module):
    def __init__(self, vocab: int = {vocab}, dim: int = {dim}, depth: int = {depth}) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(1, 512, dim))
        self.blocks = nn.ModuleList([{name}Block(dim) for _ in range(depth)])
        self.head = nn.Linear(dim, vocab, bias=False)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) + self.pos[:, : tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class {name}Dataset(Dataset):
    def __init__(self, size: int = {size}, length: int = 128) -> None:
        self.size = size
        self.length = length

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(index)
        tokens = torch.randint(0, {vocab}, (self.length + 1,), generator=g)
        return tokens[:-1], tokens[1:]
'''

_HELPERS = (
    """

def get_device():
    return xm.xla_device()


def world():
    return xr.world_size(), xr.global_ordinal()
""",
    """

def log(*args):
    xm.master_print(*args)


def is_main() -> bool:
    return xm.is_master_ordinal()
""",
    """

def reduce_mean(value: torch.Tensor) -> torch.Tensor:
    total = xm.all_reduce(xm.REDUCE_SUM, value)
    return total / xr.world_size()


def barrier(tag: str) -> None:
    xm.rendezvous(tag)
""",
    """

def save_checkpoint(model: nn.Module, path: str) -> None:
    xm.save(model.state_dict(), path)
    xm.rendezvous("saved")


def rank() -> int:
    return xm.get_ordinal()
""",
)

_TRAIN = """

def train_{name}(args: argparse.Namespace) -> float:
    device = xm.xla_device()
    model = {name}Model(dim=args.dim).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps)
    loader = DataLoader({name}Dataset(), batch_size=args.batch_size, shuffle=True, num_workers=2)
    device_loader = pl.MpDeviceLoader(loader, device)
    if xr.world_size() > 1:
        dist.init_process_group("xla", init_method="xla://")
    model.train()
    total = 0.0
    start = time.time()
    for step, (tokens, targets) in enumerate(device_loader):
        optimizer.zero_grad()
        with torch_xla.amp.autocast(device, dtype=torch.bfloat16):
            logits = model(tokens)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_norm)
        xm.optimizer_step(optimizer)
        scheduler.step()
        xm.mark_step()
        if step % args.log_every == 0:
            xm.add_step_closure(_report, args=(step, loss))
        total += loss.detach()
        if step >= args.steps:
            break
    xm.wait_device_ops()
    elapsed = time.time() - start
    xm.master_print(f"{{args.steps}} steps in {{elapsed:.1f}}s")
    if xm.is_master_ordinal():
        xm.save(model.state_dict(), args.output)
    return float(total) / max(1, args.steps)


def _report(step: int, loss: torch.Tensor) -> None:
    print(f"step {{step}} loss {{loss.item():.4f}} ordinal {{xm.get_ordinal()}}")
"""

_EXTRAS = (
    """

def evaluate_{name}(model: nn.Module, loader: DataLoader) -> float:
    model.eval()
    device = torch_xla.device()
    losses = []
    with torch.no_grad():
        for tokens, targets in pl.ParallelLoader(loader, [device]).per_device_loader(device):
            logits = model(tokens)
            losses.append(F.cross_entropy(logits.flatten(0, 1), targets.flatten()))
            torch_xla.sync()
    mean = torch.stack(losses).mean()
    return xm.mesh_reduce("eval_loss", mean.item(), lambda xs: sum(xs) / len(xs))
""",
    """

def compiled_{name}(model: nn.Module) -> nn.Module:
    if os.environ.get("XLA_USE_SPMD") == "1":
        xr.use_spmd()
    return torch.compile(model, backend="openxla")
""",
    """

def gather_{name}(values: torch.Tensor) -> torch.Tensor:
    gathered = xm.all_gather(values, dim=0)
    xm.mark_step()
    return gathered.to("cpu")
""",
    """

def seed_{name}(seed: int) -> None:
    torch.manual_seed(seed)
    xm.set_rng_state(seed)
    print(xm.xla_device_hw(xm.xla_device()), torch_xla.device_count())
""",
)

_MAIN = """

def _mp_fn(index: int, args: argparse.Namespace) -> None:
    torch.manual_seed(args.seed + index)
    train_{name}(args)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dim", type=int, default={dim})
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-norm", type=float, default=1.0)
    parser.add_argument("--log-every", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default="model.pt")
    args = parser.parse_args()
    xmp.spawn(_mp_fn, args=(args,))


if __name__ == "__main__":
    main()
"""


def render_file(index: int, seed: int = 0) -> str:
    """The text of corpus file number `index`; the same (index, seed) always gives the same text."""
    rng = random.Random(seed * 1_000_003 + index)
    name = f"Net{index}"
    values = {
        "name": name,
        "heads": rng.choice((4, 8, 16)),
        "drop": rng.randint(0, 3),
        "mult": rng.choice((2, 4)),
        "vocab": rng.choice((1000, 32000, 50257)),
        "dim": rng.choice((128, 256, 512, 768)),
        "depth": rng.randint(2, 12),
        "size": rng.randint(100, 10000),
    }
    parts = [_HEADER.format(title=f"Train {name} on XLA devices", imports=rng.choice(_IMPORT_STYLES))]
    parts.append(_MODEL.format(**values))
    parts.extend(rng.sample(_HELPERS, k=2))
    parts.append(_TRAIN.format(**values))
    parts.extend(extra.format(**values) for extra in rng.sample(_EXTRAS, k=2))
    parts.append(_MAIN.format(**values))
    return "".join(parts)


def write_corpus(root: Path, files: int, seed: int = 0, per_folder: int = 50) -> list[Path]:
    """Write `files` generated files under `root` (in sub-folders of `per_folder` files)."""
    written = []
    for index in range(files):
        folder = root / f"pkg{index // per_folder:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"train_{index:05d}.py"
        path.write_text(render_file(index, seed), encoding="utf-8")
        written.append(path)
    return written
