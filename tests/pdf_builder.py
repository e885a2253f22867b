"""A minimal PDF 1.4 writer for tests (no binary fixtures in the repo).

:func:`build_pdf` writes standard 14 fonts (WinAnsi), text lines at given positions and angles,
stroked ruling lines, an optional image, an outline, an Info title and, for the encryption
test, a standard security handler whose user password is not empty. Importable from any test
(``tests/`` is on ``sys.path`` through its ``conftest.py``).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

FONTS = {"F1": "Helvetica", "F2": "Helvetica-Bold", "F3": "Courier", "F4": "Times-Roman"}
_MATRIX = {0: "1 0 0 1", 90: "0 1 -1 0", 180: "-1 0 0 -1", 270: "0 -1 1 0"}


def _pdf_string(text: str) -> bytes:
    raw = text.encode("cp1252")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


@dataclass
class Page:
    """One page's drawing operations (PDF user space: points, origin bottom-left)."""

    width: float = 612
    height: float = 792
    rotate: int = 0
    image: bool = False
    ops: list[bytes] = field(default_factory=list)

    def text(
        self, x: float, y: float, s: str, *, size: float = 10, font: str = "F1", angle: int = 0
    ) -> Page:
        head = f"BT /{font} {size:g} Tf {_MATRIX[angle]} {x:g} {y:g} Tm "
        self.ops.append(head.encode() + _pdf_string(s) + b" Tj ET")
        return self

    def lines(
        self, x: float, y: float, texts: Sequence[str], *, step: float = 12, **kw: object
    ) -> Page:
        for k, s in enumerate(texts):
            self.text(x, y - k * step, s, **kw)  # type: ignore[arg-type]
        return self

    def hline(self, x0: float, x1: float, y: float, width: float = 0.6) -> Page:
        self.ops.append(f"{width:g} w {x0:g} {y:g} m {x1:g} {y:g} l S".encode())
        return self

    def vline(self, x: float, y0: float, y1: float, width: float = 0.6) -> Page:
        self.ops.append(f"{width:g} w {x:g} {y0:g} m {x:g} {y1:g} l S".encode())
        return self


def build_pdf(
    pages: Sequence[Page],
    *,
    title: str | None = None,
    outline: Sequence[tuple[int, str, int, float]] = (),
    encrypt: bool = False,
    compress: bool = False,
) -> bytes:
    """A PDF with ``pages``; ``outline`` items are ``(level, title, page index, y)``;
    ``compress`` Flate-encodes the content streams (a page of repeated operators then takes a
    few KB on disk however much text it inflates to)."""
    objs: dict[int, bytes] = {}
    font_ids = {name: 3 + i for i, name in enumerate(FONTS)}
    for name, base in FONTS.items():
        objs[font_ids[name]] = (
            f"<< /Type /Font /Subtype /Type1 /BaseFont /{base} /Encoding /WinAnsiEncoding >>"
        ).encode()
    fonts = " ".join(f"/{k} {v} 0 R" for k, v in font_ids.items())
    nxt = 3 + len(FONTS)
    page_ids: list[int] = []
    for page in pages:
        pid, cid = nxt, nxt + 1
        nxt += 2
        ops = list(page.ops)
        xobject = ""
        if page.image:
            iid = nxt
            nxt += 1
            pixels = bytes((x * 7 + y * 3) % 256 for y in range(32) for x in range(32))
            objs[iid] = (
                b"<< /Type /XObject /Subtype /Image /Width 32 /Height 32 /ColorSpace /DeviceGray"
                b" /BitsPerComponent 8 /Length %d >>\nstream\n"
                % len(pixels)
                + pixels
                + b"\nendstream"
            )
            xobject = f" /XObject << /Im1 {iid} 0 R >>"
            ops.insert(0, f"q {page.width:g} 0 0 {page.height:g} 0 0 cm /Im1 Do Q".encode())
        content = b"\n".join(ops)
        flate = b""
        if compress:
            content, flate = zlib.compress(content, 9), b" /Filter /FlateDecode"
        objs[cid] = (
            b"<< /Length %d%s >>\nstream\n" % (len(content), flate) + content + b"\nendstream"
        )
        rotate = f" /Rotate {page.rotate}" if page.rotate else ""
        objs[pid] = (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {page.width:g} {page.height:g}]"
            f"{rotate} /Contents {cid} 0 R /Resources << /Font << {fonts} >>{xobject} >> >>"
        ).encode()
        page_ids.append(pid)
    kids = " ".join(f"{i} 0 R" for i in page_ids)
    objs[2] = f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode()
    catalog = b"<< /Type /Catalog /Pages 2 0 R"
    if outline:
        root = nxt
        ids = list(range(nxt + 1, nxt + 1 + len(outline)))
        nxt += 1 + len(outline)
        children: dict[int, list[int]] = {root: []}
        parents: list[int] = []
        stack: list[tuple[int, int]] = []
        for (level, _, _, _), iid in zip(outline, ids, strict=True):
            while stack and stack[-1][0] >= level:
                stack.pop()
            parent = stack[-1][1] if stack else root
            children[parent].append(iid)
            children[iid] = []
            parents.append(parent)
            stack.append((level, iid))
        for (_, text, page_index, y), iid, parent in zip(outline, ids, parents, strict=True):
            siblings = children[parent]
            k = siblings.index(iid)
            dest = f"[{page_ids[page_index]} 0 R /XYZ 0 {y:g} 0]"
            item = (
                b"<< /Title " + _pdf_string(text) + f" /Parent {parent} 0 R /Dest {dest}".encode()
            )
            if k > 0:
                item += f" /Prev {siblings[k - 1]} 0 R".encode()
            if k + 1 < len(siblings):
                item += f" /Next {siblings[k + 1]} 0 R".encode()
            if children[iid]:
                kids_ = children[iid]
                item += f" /First {kids_[0]} 0 R /Last {kids_[-1]} 0 R /Count {len(kids_)}".encode()
            objs[iid] = item + b" >>"
        top = children[root]
        objs[root] = f"<< /Type /Outlines /First {top[0]} 0 R /Last {top[-1]} 0 R >>".encode()
        catalog += f" /Outlines {root} 0 R".encode()
    objs[1] = catalog + b" >>"
    trailer = ""
    if title is not None:
        objs[nxt] = b"<< /Title " + _pdf_string(title) + b" >>"
        trailer += f" /Info {nxt} 0 R"
        nxt += 1
    if encrypt:
        objs[nxt] = (
            b"<< /Filter /Standard /V 1 /R 2 /Length 40 /P -44 /O <"
            + b"ab" * 32
            + b"> /U <"
            + b"cd" * 32
            + b"> >>"
        )
        ident = "<0123456789abcdef0123456789abcdef>"
        trailer += f" /Encrypt {nxt} 0 R /ID [{ident} {ident}]"
        nxt += 1
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets: dict[int, int] = {}
    for i in sorted(objs):
        offsets[i] = len(out)
        out += b"%d 0 obj\n" % i + objs[i] + b"\nendobj\n"
    xref = len(out)
    size = max(objs) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for i in range(1, size):
        out += b"%010d 00000 n \n" % offsets[i] if i in offsets else b"0000000000 65535 f \n"
    out += f"trailer\n<< /Size {size} /Root 1 0 R{trailer} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)
