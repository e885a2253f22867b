"""Paths as text: file names are bytes on POSIX, and not every name is valid UTF-8.

Python holds the bytes of such a name as lone surrogates (``os.fsdecode``), which JSON files,
UTF-8 streams, terminals and the store's payloads all refuse. :func:`path_text` is the one
place where a path becomes text for any of them; ids are computed from the raw bytes
(``os.fsencode``), never from that text. :func:`display_path` shortens a source for people
(relative to the working directory). Standard library only.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["display_path", "path_text"]


def path_text(path: str | os.PathLike[str]) -> str:
    """``path`` as valid Unicode text: the bytes of a file name that are not UTF-8 become
    ``\\xNN`` escapes (``b"caf\\xe9.md"`` -> ``"caf\\\\xe9.md"``); a path that is valid
    UTF-8 is returned unchanged. Never raises on a ``str`` or ``PathLike`` of ``str``."""
    text = os.fspath(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            raw = os.fsencode(text)
        except UnicodeEncodeError:  # a lone surrogate that does not stand for a byte
            return text.encode("utf-8", "backslashreplace").decode("utf-8")
        return raw.decode("utf-8", "backslashreplace")
    return text


def display_path(source: str) -> str:
    """``source`` relative to the working directory when below it, else unchanged."""
    try:
        return os.path.relpath(source) if Path(source).is_relative_to(Path.cwd()) else source
    except ValueError:
        return source
