"""The `_DeviceLoader` helper NM308 writes into files moves every batch shape torch_xla moved."""

from __future__ import annotations

import collections
import dataclasses
import types

import pytest

from neuron_migrate.checks.helpers import DEVICE_LOADER

torch = pytest.importorskip("torch")


def _helper() -> dict:
    namespace: dict = {}
    exec(compile(DEVICE_LOADER, "<helper>", "exec"), namespace)  # the helper under test
    return namespace


class BatchEncoding(collections.UserDict):
    """Like transformers' BatchEncoding: a UserDict with extra state."""

    def __init__(self, data=None, encoding=None):
        super().__init__(data)
        self.encoding = encoding


@dataclasses.dataclass(frozen=True)
class Example:
    ids: object
    label: int


class Plain:
    def __init__(self, x):
        self.x = x


def test_moves_every_container_kind() -> None:
    move = _helper()["_move_to_device"]
    meta = torch.device("meta")
    Pair = collections.namedtuple("Pair", "a b")  # noqa: PYI024 - the loader must rebuild a plain namedtuple
    batch = {
        "enc": BatchEncoding({"input_ids": torch.ones(2)}, encoding="kept"),
        "example": Example(torch.ones(1), 3),
        "plain": Plain([torch.ones(1), "text"]),
        "pair": Pair(torch.ones(1), (torch.ones(1),)),
        "frozen": types.MappingProxyType({"t": torch.ones(1)}),
    }
    moved = move(batch, meta)
    assert isinstance(moved["enc"], BatchEncoding) and moved["enc"].encoding == "kept"
    assert moved["enc"]["input_ids"].device == meta
    assert batch["enc"]["input_ids"].device.type == "cpu", "the input batch is not changed"
    assert isinstance(moved["example"], Example) and moved["example"].ids.device == meta and moved["example"].label == 3
    assert moved["plain"].x[0].device == meta and moved["plain"].x[1] == "text"
    assert isinstance(moved["pair"], Pair) and moved["pair"].b[0].device == meta
    assert moved["frozen"]["t"].device == meta


def test_loader_keeps_len_and_exposes_underlying_loader() -> None:
    loader_type = _helper()["_DeviceLoader"]
    data = [(torch.ones(1), torch.zeros(1))] * 3
    wrapped = loader_type(data, torch.device("meta"))
    assert len(wrapped) == 3
    assert wrapped._loader is data
    assert all(x.device.type == "meta" for x, _ in wrapped)
