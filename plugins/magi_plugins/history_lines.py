"""Which lines of a shell history are text a person typed, and which are binary garbage.

A history file is appended to by the shell, but also by whatever else writes to it: a crash that
leaves a block of NULs, a binary pasted by mistake, a disk error. Decoding such a file with
``errors="replace"`` and splitting it with ``str.splitlines()`` (which also splits on \\x0b, \\x0c,
\\x1c–\\x1e, \\x85, U+2028…) turned 200 KB of random bytes into 5,402 "commands". Here lines are split on
``\\n`` only and each is judged on its own bytes:

* ``overlong_line`` — more than ``MAX_LINE_BYTES``: no one types that; a binary blob or a paste of one;
* ``binary_line`` — a NUL byte, more than a quarter control characters, or a short valid-looking line
  with binary lines on both sides (random bytes decode as UTF-8 by chance only in such scraps);
* ``not_utf8`` — not UTF-8, once zsh's "metafied" bytes are undone (zsh stores each byte from 0x83 up as
  0x83 followed by the byte XOR 0x20, so its history of non-ASCII commands is not UTF-8 as written).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

MAX_LINE_BYTES = 16 * 1024
CONTROL_SHARE = 0.25
_ZSH_META = 0x83
_ALLOWED_CONTROLS = {"\t"}


@dataclass
class Line:
    offset: int                   # of its first byte, from the start of what was read
    text: str | None              # None: skipped
    reason: str | None = None


def unmetafy(raw: bytes) -> bytes:
    """zsh's history encoding undone (``unmetafy`` in zsh's utils.c)."""
    if _ZSH_META not in raw:
        return raw
    out = bytearray()
    escaped = False
    for byte in raw:
        if escaped:
            out.append(byte ^ 0x20)
            escaped = False
        elif byte == _ZSH_META:
            escaped = True
        else:
            out.append(byte)
    return bytes(out)


def _decode(raw: bytes, zsh: bool) -> str | None:
    for candidate in ((unmetafy(raw), raw) if zsh else (raw,)):
        try:
            return candidate.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None


def _judge(raw: bytes, zsh: bool) -> tuple[str | None, str | None]:
    if len(raw) > MAX_LINE_BYTES:
        return None, "overlong_line"
    if b"\0" in raw:
        return None, "binary_line"
    text = _decode(raw, zsh)
    if text is None:
        return None, "not_utf8"
    text = text.removesuffix("\r")
    controls = sum(1 for ch in text if ch not in _ALLOWED_CONTROLS and unicodedata.category(ch) == "Cc")
    if controls and controls > CONTROL_SHARE * len(text):
        return None, "binary_line"
    return text, None


def screen(data: bytes, zsh: bool = False) -> list[Line]:
    """Every line of ``data`` (complete lines only: it should end with a newline), judged."""
    lines, offset = [], 0
    raws = data.split(b"\n")
    if raws[-1] == b"":
        raws.pop()                # what follows the last newline: nothing, or a line not finished yet
    for raw in raws:
        text, reason = _judge(raw, zsh)
        lines.append(Line(offset, text, reason))
        offset += len(raw) + 1
    _drop_scraps(lines)
    return lines


def _drop_scraps(lines: list[Line]) -> None:
    """A non-empty line whose nearest non-empty neighbours are both garbage is part of the garbage."""
    filled = [line for line in lines if line.text != ""]
    scraps = [line for before, line, after in zip(filled, filled[1:], filled[2:], strict=False)
              if line.text is not None and before.text is None and after.text is None]
    for line in scraps:           # judged on the lines as read, so one drop does not drag its neighbour along
        line.text, line.reason = None, "binary_line"


def good_text(lines: list[Line]) -> str:
    """The kept lines as one text for the shell's parser (newline-separated)."""
    return "\n".join(line.text for line in lines if line.text is not None)
