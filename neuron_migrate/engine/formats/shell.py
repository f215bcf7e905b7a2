"""Shell scripts: split `*.sh` text into simple commands, then find environment settings and
launcher invocations in them.

The tokenizer knows quotes, backslash escapes and line continuations, comments, command
separators and here-documents (whose bodies are skipped), so `echo "export PJRT_DEVICE=x"` and
a commented-out line are not mistaken for settings. It is not a full shell parser: it does not
expand variables, aliases or functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

_OPERATORS = ";&|()<>"
_SEPARATORS = frozenset({";", ";;", "&", "&&", "|", "||", "|&", "(", ")", "\n"})
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
_DECLARE = frozenset({"export", "declare", "typeset", "local", "readonly"})
# Words that run the command after them: `nohup python -m ...`.
_WRAPPERS = frozenset({"exec", "nohup", "time", "nice", "sudo", "command", "stdbuf"})
_ENV_OPTIONS_WITH_VALUE = frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"})
_PYTHON = re.compile(r"python[0-9.]*$")


@dataclass(frozen=True)
class Word:
    """A shell word: its text with quotes removed, and its span in the file."""

    value: str
    start: int
    end: int
    raw: str


@dataclass
class _Scanner:
    text: str
    pos: int = 0
    words: list[Word | str] = field(default_factory=list)  # a str is an operator or "\n"
    heredocs: list[tuple[str, bool]] = field(default_factory=list)


def tokens(text: str) -> list[Word | str]:
    """Words and operators of a script; a newline that ends a command is the operator "\\n"."""
    scan = _Scanner(text)
    while scan.pos < len(text):
        char = text[scan.pos]
        if char == "\\" and text.startswith(("\\\n", "\\\r\n"), scan.pos):
            scan.pos += 2 if text[scan.pos + 1] == "\n" else 3
        elif char in " \t\r":
            scan.pos += 1
        elif char == "\n":
            scan.words.append("\n")
            scan.pos += 1
            _skip_heredocs(scan)
        elif char == "#":
            end = text.find("\n", scan.pos)
            scan.pos = len(text) if end < 0 else end
        elif char in _OPERATORS:
            _operator(scan)
        else:
            scan.words.append(_word(scan))
    return scan.words


def _operator(scan: _Scanner) -> None:
    start = scan.pos
    while scan.pos < len(scan.text) and scan.text[scan.pos] in _OPERATORS and scan.pos - start < 3:
        scan.pos += 1
    operator = scan.text[start : scan.pos]
    if operator.startswith("<<") and operator != "<<<":
        strip_tabs = scan.text.startswith("-", scan.pos)
        scan.pos += 1 if strip_tabs else 0
        while scan.pos < len(scan.text) and scan.text[scan.pos] in " \t":
            scan.pos += 1
        if scan.pos < len(scan.text) and scan.text[scan.pos] not in "\r\n":
            scan.heredocs.append((_word(scan).value, strip_tabs))
        return
    redirect = "<" in operator or ">" in operator
    scan.words.append("redirect" if redirect else operator if operator in _SEPARATORS else ";")


def _skip_heredocs(scan: _Scanner) -> None:
    """Skip the bodies of pending here-documents, up to each terminator line."""
    for delimiter, strip_tabs in scan.heredocs:
        while scan.pos < len(scan.text):
            end = scan.text.find("\n", scan.pos)
            end = len(scan.text) if end < 0 else end
            line = scan.text[scan.pos : end].rstrip("\r")
            scan.pos = min(end + 1, len(scan.text))
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
    scan.heredocs.clear()


def _word(scan: _Scanner) -> Word:
    text, start = scan.text, scan.pos
    value: list[str] = []
    while scan.pos < len(text) and text[scan.pos] not in " \t\r\n" and text[scan.pos] not in _OPERATORS:
        char = text[scan.pos]
        if char == "'":
            end = text.find("'", scan.pos + 1)
            end = len(text) if end < 0 else end
            value.append(text[scan.pos + 1 : end])
            scan.pos = end + 1
        elif char == '"':
            scan.pos += 1
            while scan.pos < len(text) and text[scan.pos] != '"':
                if text[scan.pos] == "\\" and scan.pos + 1 < len(text):
                    scan.pos += 1
                value.append(text[scan.pos])
                scan.pos += 1
            scan.pos += 1
        elif char == "\\" and scan.pos + 1 < len(text):
            value.append(text[scan.pos + 1])
            scan.pos += 2
        elif text.startswith("$(", scan.pos):
            value.append(_balanced(scan))
        else:
            value.append(char)
            scan.pos += 1
    end = min(scan.pos, len(text))
    return Word("".join(value), start, end, text[start:end])


def _balanced(scan: _Scanner) -> str:
    """`$( ... )` as one piece of a word (its inside is not checked)."""
    depth, start = 0, scan.pos
    while scan.pos < len(scan.text):
        char = scan.text[scan.pos]
        depth += 1 if char == "(" else -1 if char == ")" else 0
        scan.pos += 1
        if depth == 0 and char == ")":
            break
    return scan.text[start : scan.pos]


def commands(text: str) -> Iterator[list[Word]]:
    """The simple commands of a script, each a list of words (redirection targets dropped)."""
    current: list[Word] = []
    skip_next = False
    for token in tokens(text):
        if isinstance(token, str):
            if token == "redirect":
                skip_next = True
                continue
            if current:
                yield current
            current = []
            continue
        if skip_next:
            skip_next = False
            continue
        current.append(token)
    if current:
        yield current


@dataclass(frozen=True)
class Setting:
    """An environment variable set by a command: `X=1 cmd`, `export X=1`, `env X=1 cmd`."""

    name: str
    start: int  # span of the name in the file
    end: int


def settings(command: list[Word]) -> Iterator[Setting]:
    start = 0  # an index, not `pop(0)`: a line of many assignments stays linear
    while start < len(command) and _assignment(command[start]):
        yield _setting(command[start])
        start += 1
    words = command[start:]
    if words and words[0].value in _DECLARE:
        for word in words[1:]:
            if _assignment(word) or _NAME.match(word.raw):
                yield _setting(word)
    elif words and words[0].value == "env":
        rest = iter(words[1:])
        for word in rest:
            if _assignment(word):
                yield _setting(word)
            elif word.value in _ENV_OPTIONS_WITH_VALUE:
                next(rest, None)
            elif not word.value.startswith("-"):
                break


def _assignment(word: Word) -> bool:
    return _ASSIGNMENT.match(word.raw) is not None


def _setting(word: Word) -> Setting:
    name = re.match(r"[A-Za-z_][A-Za-z0-9_]*", word.raw)
    length = len(name.group(0)) if name else len(word.raw)
    return Setting(word.raw[:length], word.start, word.start + length)


def program(command: list[Word]) -> tuple[Word, Word | None] | None:
    """The command word (after assignments, `env` and wrappers like `nohup`) and, for Python,
    the `-m` module word."""
    words = [w for w in command if not _assignment(w)]
    skip = 0
    while skip < len(words) and (
        words[skip].value in _WRAPPERS or words[skip].value == "env" or words[skip].value.startswith("-")
    ):
        skip += 1
    words = words[skip:]
    if not words:
        return None
    head = words[0]
    if not _PYTHON.match(head.value.rsplit("/", 1)[-1]):
        return head, None
    for index, word in enumerate(words[1:], start=1):
        if word.value == "-m" and index + 1 < len(words):
            return head, words[index + 1]
        if word.value.startswith("-m") and len(word.value) > 2:
            return head, Word(word.value[2:], word.start + 2, word.end, word.raw[2:])
        if not word.value.startswith("-"):
            break  # a script path: python train.py ...
    return head, None
