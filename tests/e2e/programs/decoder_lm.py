# Decoder-only LM trained with torch_xla.compile and torch_xla.step(), as in the torch_xla examples.
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

VOCAB, WIDTH, CONTEXT = 64, 32, 16


class DecoderBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(WIDTH)
        self.attn = nn.MultiheadAttention(WIDTH, 4, batch_first=True)
        self.norm2 = nn.LayerNorm(WIDTH)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH))

    def forward(self, x, mask):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyDecoder(nn.Module):
    def __init__(self, layers=2):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.pos = nn.Parameter(torch.zeros(CONTEXT, WIDTH))
        self.blocks = nn.ModuleList(DecoderBlock() for _ in range(layers))
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens):
        length = tokens.shape[1]
        mask = torch.triu(torch.full((length, length), float("-inf"), device=tokens.device), diagonal=1)
        x = self.embed(tokens) + self.pos[:length]
        for block in self.blocks:
            x = block(x, mask)
        return self.head(x)


def synthetic_tokens(batches=4, batch=4):
    generator = torch.Generator().manual_seed(0)
    return [torch.randint(0, VOCAB, (batch, CONTEXT + 1), generator=generator) for _ in range(batches)]


def main():
    device = torch_xla.device()
    torch.manual_seed(0)
    model = TinyDecoder().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

    def train_step(tokens):
        optimizer.zero_grad()
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        return loss

    compiled_step = torch_xla.compile(train_step, full_graph=True, name="decoder_train_step")
    for step, tokens in enumerate(synthetic_tokens()):
        with torch_xla.step():
            loss = compiled_step(tokens.to(device))
        xm.add_step_closure(lambda s, l: print(f"step {s} loss {l.item():.3f}"), args=(step, loss))


if __name__ == "__main__":
    main()
