"""`layout_of`: the scan gives tokenize's layout exactly, or leaves the text to tokenize.

`tokenized_layout` is the reference. Each snippet below says whether the scan must answer it
(`FAST`) or must fall back (`FALLBACK`); either way `layout_of` must equal the reference. A seeded
generator of lines built from the same pieces covers the combinations.
"""

from __future__ import annotations

import itertools
import random

import pytest

from neuron_migrate.analysis.source import SourceText
from neuron_migrate.engine.directives import FAST_PATH, layout_of, scanned_layout, tokenized_layout

FAST, FALLBACK = True, False
scan_only = pytest.mark.skipif(not FAST_PATH, reason="from Python 3.12 layout_of is tokenize alone")

CASES: list[tuple[str, bool]] = [
    ("", FAST),
    ("\n", FAST),
    ("\n\n  \n", FAST),
    ("x = 1  # c\n", FAST),
    ('x = "a # b"  # c\n', FAST),
    ("x = 'a # b'\n", FAST),
    ('s = "# noqa: NM101"\n', FAST),
    ('def f():\n    """Docstring.\n\n    # noqa: NM101\n    """\n    return 1  # noqa\n', FAST),
    ("x = '''a\n# noqa\nb'''  # real\n", FAST),
    ("x = 1 + \\\n    2  # noqa: NM101\n", FAST),
    ("x = 1 + \\\n    2 + \\\n    3\n", FAST),
    ("x = 1 + \\\r\n    2  # c\r\n", FAST),
    ("x = 1 + \\\n  # c\n", FAST),
    ("if x:\n    y = 1 \\\n        + 2\n", FAST),
    ("x = foo(\n    [1, {2: (3,\n 4)}],  # c\n)\n", FAST),
    ("x = (  # c\n  1)\n", FAST),
    ("x = (\n\n  1)\n", FAST),
    ("x = (1 \\\n  , 2)\n", FAST),
    ('f"{x:>10} {{literal}} {y!r:{w}}"  # c\n', FAST),
    ("f\"{x['a']}\"  # c\n", FAST),
    ('f"{x["a"]}"  # c\n', FAST),  # before 3.12: three tokens, the same comments and lines
    ('f"{x["#"]}"\n', FAST),  # before 3.12 the `#` starts a comment
    ('f"""{x}\n{{y}}\n"""  # c\n', FAST),
    ("b'\\x00#'  # c\nrb\"\\d#\"\n", FAST),
    ('r"\\\\"  # c\n', FAST),
    ("r'\\''  # c\n", FAST),
    ('r"\\"#"  # c\n', FAST),
    ('r"a\\\\" # c\n', FAST),
    ('"a\\\\"  # c\n', FAST),
    ("'\\\\\\''  # c\n", FAST),
    ("u\"x\"  # c\nU'y'\n", FAST),
    ("x = '' ''  # c\n", FAST),
    ("x = ''''''  # c\n", FAST),
    ("x = '''a''''  # c\n", FALLBACK),  # the fourth quote opens a string never closed
    ("x = '''a'''''  # c\n", FAST),
    ('x = """ " "" """  # c\n', FAST),
    ('x = """a\\"""" + "b"  # c\n', FAST),
    ('x = """a\\"""" b"""  # c\n', FALLBACK),  # the last triple quote opens a string
    ('x = """a\\\nb"""  # c\n', FAST),
    ('x = """a\r\nb"""  # c\r\n', FAST),
    ('x = """\\\\"""  # c\n', FAST),
    ("def f():\n    '''\n    # not a comment\n    '''\n", FAST),
    ('# it\'s "here"\nx = 1\n', FAST),
    ("x = 1  # c \\\ny = 2\n", FAST),
    ("x = 0xfb'a' 1if x else\"#\"\n", FAST),
    ("if x:\n\ty = 1  # c\n\tz = 2\n", FAST),
    ("if x:\n        y = 1\n\tz = 2\n", FAST),  # a tab is 8 columns to tokenize
    ("if x:\n    if y:\n\tz = 1\n    w = 2\n", FAST),
    ("if x:\n  \ty = 1\nz = 2\n", FAST),
    ("π = 3  # ≈ π\nΔ = 'é'  # é\n", FAST),
    ("x = 1\r\n# c\r\ny = (1,\r\n 2)\r\n", FAST),
    ("x = 1\r\n\r\n  \r\n", FAST),
    ("x = 1", FAST),
    ("x = 1  # c", FAST),
    ("# c", FAST),
    ("x\n   # c", FAST),
    ("x\n   ", FAST),
    ("x\n\t", FAST),
    ("if x:\n  y\n  ", FAST),
    ('"""doc"""', FAST),
    ('x = """a\n# b"""', FAST),  # tokenize's implicit NEWLINE skips a last line that starts with `#`
    ('x = """a\nb"""', FAST),
    ("x = \\\n   ", FAST),
    ("x = \\\n# c", FAST),
    ("x\n\x0b# c", FAST),
    ("x\n\xa0y", FAST),
    ("x = (1]\n", FAST),  # tokenize counts brackets, never matches them
    ("x = )(\n", FAST),
    ("if x:\n  y\n z\n", FALLBACK),  # IndentationError
    ("if x:\n    y\n  \\\nz\n", FALLBACK),  # a line of only a join still has its indent read
    ("if x:\n    y\n  # c\nz\n", FAST),
    ("x = 1\\", FALLBACK),
    ("x = 1 \\\n", FALLBACK),
    ("x = 1 \\ \ny = 2\n", FALLBACK),
    ("x = (1,\n", FALLBACK),
    ("x = (1,\n  2", FALLBACK),
    ("x = 1)\ny = (2\n", FALLBACK),
    ('x = """abc\n', FALLBACK),
    ("x = '''abc", FALLBACK),
    ('x = "abc\ny = 1  # c\n', FALLBACK),  # 3.11: an ERRORTOKEN, and tokenizing goes on
    ("x = 'abc  # c", FALLBACK),
    ('x = "abc\\\ndef"  # c\n', FALLBACK),  # a one-line string continued by a backslash
    ("x = 1\fy = 2\n", FALLBACK),
    ("\fx = 1\n", FALLBACK),
    ("x = 1\ry = 2  # c\n", FALLBACK),
    ("x = 1  # c\r", FALLBACK),
    ("x = '\r'\n", FALLBACK),
    ("x = 1\0\n", FALLBACK),
]


@pytest.mark.parametrize(("text", "fast"), CASES, ids=[repr(t)[:40] for t, _ in CASES])
def test_layout_of_is_tokenize_layout(text: str, fast: bool) -> None:
    src = SourceText(text)
    assert layout_of(src) == tokenized_layout(SourceText(text))


@scan_only
@pytest.mark.parametrize(("text", "fast"), CASES, ids=[repr(t)[:40] for t, _ in CASES])
def test_scan_answers_exactly_or_falls_back(text: str, fast: bool) -> None:
    scanned = scanned_layout(SourceText(text))
    if fast:
        assert scanned == tokenized_layout(SourceText(text))
    else:
        assert scanned is None


def _prefixes() -> list[str]:
    """Every string prefix tokenize knows, in every order and case: `rB`, `Fr`, `U`, ..."""
    out = {""}
    for prefix in ("b", "r", "u", "f", "br", "fr"):
        for order in itertools.permutations(prefix):
            for cased in itertools.product(*((c, c.upper()) for c in order)):
                out.add("".join(cased))
    return sorted(out)


@scan_only
@pytest.mark.parametrize("prefix", _prefixes())
def test_scan_handles_every_string_prefix(prefix: str) -> None:
    text = (
        f"x = {prefix}'a # b\\'' + {prefix}\"#\\\\\"  # c\n"
        f"y = {prefix}'''\n# no\n'''  # d\n"
        f'z = ({prefix}"""{{#}}""",\n  {prefix}"\\"")  # e\n'
    )
    assert scanned_layout(SourceText(text)) == tokenized_layout(SourceText(text))


_INDENTS = ("", "", "    ", "        ", "\t", "  ", " \t")
_CODE = ("x", "x = 1", "foo", "1", "0xfb", ",", "+", "if x:", "return", "π", ":", "=", ")(", "$")
_BODIES = ("a", "#", " noqa: NM101", "\\'", '\\"', "\\\\", "{", "}", "{{", "'", '"', "é", "\t", "(", "\\")
_COMMENTS = ("# c", "# noqa: NM101", "#", "# 'q\"", "# \\", "# noqa")
_QUOTES = ("'", '"', "'''", '"""')


def _string(rng: random.Random) -> str:
    quote = rng.choice(_QUOTES)
    body = "".join(rng.choice(_BODIES) for _ in range(rng.randrange(4)))
    if len(quote) == 3 and rng.random() < 0.4:
        body += rng.choice(("\n", "\n# noqa\n", "\\\n", "\n  ")) + rng.choice(_BODIES)
    return rng.choice(("", "r", "b", "f", "Rb", "u", "F")) + quote + body + quote


def _fragment(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.3:
        return _string(rng)
    if roll < 0.4:
        return rng.choice("([{") + _fragment(rng) + rng.choice(("", "\n", "\n  ", ",\n# c\n")) + rng.choice(")]}")
    if roll < 0.43:
        return rng.choice("()[]{}")
    return rng.choice(_CODE)


def _line(rng: random.Random) -> str:
    line = rng.choice(_INDENTS) + " ".join(_fragment(rng) for _ in range(rng.randrange(4)))
    roll = rng.random()
    if roll < 0.25:
        line += "  " + rng.choice(_COMMENTS)
    elif roll < 0.32:
        line += rng.choice((" \\", "\\", " \\ "))
    return line


def _text(rng: random.Random) -> str:
    newline = rng.choice(("\n", "\n", "\r\n"))
    text = newline.join(_line(rng) for _ in range(rng.randrange(1, 8)))
    return text + rng.choice((newline, newline, "", "\n  "))


@scan_only
def test_scan_matches_tokenize_on_generated_text() -> None:
    rng = random.Random(20241207)
    fast, fallback, commented = 0, 0, 0
    for _ in range(3000):
        text = _text(rng)
        scanned = scanned_layout(SourceText(text))
        if scanned is None:
            fallback += 1
            continue
        assert scanned == tokenized_layout(SourceText(text)), repr(text)
        fast, commented = fast + 1, commented + bool(scanned.comments)
    # both paths taken, and the fast one on text with comments: not one path by chance
    assert fast > 1000 and fallback > 300 and commented > 500, (fast, fallback, commented)
