"""Issue 40 item 6: whatever the codec a coding cookie names does with the bytes, the file gets
NM902 and the run goes on: `# coding: punycode` and `undefined` raise a bare `UnicodeError`,
`rot13` and `hex` are no text encodings (LookupError), `idna` refuses non-ASCII bytes. With
`--jobs 2`, `--fix` and `report` too. Before, the `UnicodeError` ended the whole run with a
traceback and nothing was reported for the other files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hostile_bounds import bounded
from hostile_helpers import XLA, cli, out

from neuron_migrate.analysis.source import Encoded, encode

pytestmark = pytest.mark.slow  # subprocesses of the installed script

BAD = {
    "puny.py": (b"# coding: punycode\n" + XLA.encode(), "decoding with 'punycode' codec failed"),
    "undefined.py": (b"# coding: undefined\n" + XLA.encode(), "undefined encoding"),
    "rot.py": (b"# coding: rot13\n" + XLA.encode(), "'rot13' is not a text encoding"),
    "hexed.py": (b"# coding: hex\n" + XLA.encode(), "'hex' is not a text encoding"),
    "idna.py": (b"# coding: idna\n" + XLA.encode() + b"# \xff\n", "cannot decode as idna"),
}
GOOD = 16  # enough files for a pool of two workers


def project(tmp_path: Path) -> Path:
    for name, (data, _) in BAD.items():
        (tmp_path / name).write_bytes(data)
    for i in range(GOOD):
        (tmp_path / f"ok{i}.py").write_text(XLA)
    return tmp_path


@pytest.mark.parametrize("mode", [[], ["--jobs", "2"], ["--fix", "--jobs", "2"], ["--fix", "--jobs", "1"]])
def test_a_file_no_codec_can_decode_is_nm902_and_the_others_are_checked(tmp_path: Path, mode: list[str]) -> None:
    folder = project(tmp_path)
    done = cli(["check", "--no-cache", *mode, "."], folder)
    text = out(done)
    assert "Traceback" not in text and done.returncode == 1, text
    for name, (data, reason) in BAD.items():
        line = next((line for line in text.splitlines() if line.startswith(f"{name}:1:1: NM902 ")), "")
        assert reason in line, (name, text)
        assert (folder / name).read_bytes() == data
    if "--fix" in mode:
        assert all('torch.device("neuron")' in (folder / f"ok{i}.py").read_text() for i in range(GOOD))
        assert f"({GOOD * 2} fixed, {len(BAD)} remaining)" in text
    else:
        assert all(f"ok{i}.py:3:10: NM101" in text for i in range(GOOD))


def test_report_lists_the_files_no_codec_can_decode(tmp_path: Path) -> None:
    folder = project(tmp_path)
    done = cli(["report", "--no-cache", "--jobs", "2", "--format", "json", "-o", "plan.json", "."], folder)
    assert done.returncode == 0, out(done)
    report = json.loads((folder / "plan.json").read_text())
    items = [item for group in report["manual"] for item in group["items"]]
    assert sorted(item["filename"] for item in items if item["code"] == "NM902") == sorted(BAD)
    assert report["check"]["found"] == len(BAD) + 2 * GOOD


def test_a_large_punycode_file_is_refused_before_its_quadratic_decoding(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_bytes(b"# coding: punycode\n" + ("\u00e9" * 600_000).encode("punycode"))
    (tmp_path / "ok.py").write_text(XLA)
    got = bounded(["check", "--no-cache", "."], tmp_path, cpu=20)
    assert "big.py:1:1: NM902 Save this file in the encoding it declares; decoding " in got.out, got.out
    assert "of punycode takes time quadratic in its size" in got.out
    assert "ok.py:3:10: NM101" in got.out
    assert got.cpu < 3, got.cpu


def test_an_encoding_error_of_any_codec_is_a_unicode_encode_error() -> None:
    """What `--fix` writes is encoded back in the file's codec; a codec's own error type (here
    the bare UnicodeError of `undefined`) becomes the UnicodeEncodeError `--fix` reports."""
    with pytest.raises(UnicodeEncodeError, match="undefined encoding"):
        encode("x = 1\n", Encoded("undefined"))
