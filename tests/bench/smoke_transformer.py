# Smoke benchmark: a small transformer language model trained for 30 steps on `neuron`.
import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("neuron")
VOCAB, WIDTH, LENGTH, BATCH = 512, 64, 32, 16


class TinyLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.position = nn.Parameter(torch.zeros(LENGTH, WIDTH))
        layer = nn.TransformerEncoderLayer(WIDTH, 4, 4 * WIDTH, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        mask = nn.Transformer.generate_square_subsequent_mask(LENGTH, device=tokens.device)
        hidden = self.encoder(self.embed(tokens) + self.position, mask=mask, is_causal=True)
        return self.head(hidden)


model = TinyLM().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()
data = torch.randint(0, VOCAB, (BATCH, LENGTH + 1))
for step in range(30):
    batch = data.to(device)
    logits = model(batch[:, :-1])
    loss = loss_fn(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f}")
