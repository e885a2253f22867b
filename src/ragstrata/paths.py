"""Paths as text: file names are bytes on POSIX, and not every name is valid UTF-8.

Python holds the bytes of such a name as lone surrogates (``os.fsdecode``), which JSON files,
UTF-8 streams, terminals and the store's payloads all refuse. :func:`path_text` is the one
place where a path becomes text for any of them; ids are computed from the raw bytes
(``os.fsencode``), never from that text. Pure functions, standard library only.
"""

from __future__ import annotations

import os

__all__ = ["path_text"]


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
