#!/usr/bin/env python
"""PDF extraction: pypdfium2 vs pdfplumber vs their combination vs ragstrata's parser.

Runs every PDF of ``pdf-es`` and ``pdf-two-column-en`` (``$RAGSTRATA_DATA``, default
``/work/shared/data``) through each method and reports, per file and in total:

* **pages/s** (one run each, in this process; the machine is shared, compare ratios);
* **tables**: tables with >= 2 rows and >= 2 columns found (pdfplumber's ``find_tables`` with
  its default ruling-line strategy; ragstrata's ``table`` blocks);
* **glued words** (tokens of >= 25 letters: lost word spaces) and **running lines left** (how
  often a known running header/footer of debian-reference, acmart and asmeconf is still there);
* **reading order** on the two-column papers: (a) ``probes``, sentences that span several lines
  of one column or cross a column break, found whole in the method's text (whitespace collapsed,
  line-end hyphens joined, case kept); (b) ``outline``, the share of the PDF's bookmark titles
  found in the text in bookmark order (case-insensitive, greedy forward search).

Methods:

* ``pypdfium2``: ``PdfTextPage.get_text_bounded()`` per page (PDFium's own text order).
* ``pdfplumber``: ``page.extract_text()`` (default settings: lines sorted top to bottom).
* ``pdfplumber+tables``: the above plus ``page.find_tables()``.
* ``pypdfium2+pdfplumber-tables``: pypdfium2 text plus pdfplumber's ``find_tables`` (timed as
  the sum of the two).
* ``ragstrata``: :func:`ragstrata.ingest.pdf.parse_pdf` (layout analysis, tables, headings).

    python bench/pdf_parsers.py                      # prints a Markdown table, writes JSON
    python bench/pdf_parsers.py --methods pypdfium2,ragstrata
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA = Path(os.environ.get("RAGSTRATA_DATA", "/work/shared/data"))
RESULTS = Path(__file__).resolve().parent / "results"
CORPORA = ("pdf-es", "pdf-two-column-en")
METHODS = (
    "pypdfium2",
    "pdfplumber",
    "pdfplumber+tables",
    "pypdfium2+pdfplumber-tables",
    "ragstrata",
)

# Sentences of the two-column papers that span lines of one column (interleaving two columns'
# lines breaks them) or cross from the bottom of the left column to the top of the right one.
PROBES = {
    "acmart-sample-sigconf.pdf": (
        "A clear and well-documented LATEX document is presented as an article formatted for "
        "publication by ACM in a conference proceedings or journal publication.",
        "Rights information is unique to the work; if you are preparing several works for an "
        "event, make sure to use the correct set of commands with each of the works.",
        # crosses the column break of page 2
        "paragraph and list definitions, and the use of the \\vspace command to manually "
        "adjust the vertical spacing between elements of your work",
        "The primary parameter given to the “acmart” document class is the template style "
        "which corresponds to the kind of publication or SIG publishing the work.",
    ),
    "asmeconf-template.pdf": (
        "This paper is an example of and a LATEX template for typesetting ASME conference "
        "papers using the asmeconf class.",
        "The asmeconf class typesets papers with margins, fonts, headings, captions, and "
        "reference formats that follow the specifications for conference papers of the "
        "American Society of Mechanical Engineers (ASME).",
        # crosses the column break of page 6
        "English will be assumed to be the main language of the document.",
        "Citations and references are managed by the standard natbib package.",
    ),
}
_HYPHEN_BREAK_RE = re.compile(r"(?<=\w)[-\u00ad\ufffe\x02]\s*\n\s*")
_KEY_RE = re.compile(r"[\W_]+")
_GLUED_RE = re.compile(r"[^\W\d_]{25,}")
RUNNING = {
    "debian-reference.es.pdf": "Guía de referencia de Debian",
    "acmart-sample-sigconf.pdf": "Woodstock, NY",
    "asmeconf-template.pdf": "Copyright © 2022 by ASME",
}
"""A running header/footer line of each file: how often it is left in the text (each file
names it once or twice in its own body or metadata block)."""


def flat(text: str) -> str:
    text = _HYPHEN_BREAK_RE.sub("", text).replace("\ufffe", "").replace("\x02", "")
    return " ".join(text.split())


def outline_order(path: Path, text: str) -> float | None:
    """Share of bookmark titles found in ``text`` in bookmark order (None: no bookmarks).
    Titles and text are compared as lowercase letters and digits only ("1 Introduction" matches
    "1. INTRODUCTION")."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(path)
    try:
        titles = [_KEY_RE.sub("", (b.get_title() or "").casefold()) for b in pdf.get_toc()]
    finally:
        pdf.close()
    titles = [t for t in titles if t]
    if not titles:
        return None
    haystack = _KEY_RE.sub("", flat(text).casefold())
    position, found = 0, 0
    for title in titles:
        at = haystack.find(title, position)
        if at >= 0:
            found += 1
            position = at + len(title)
    return found / len(titles)


def run_pypdfium2(path: Path) -> dict[str, Any]:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(path)
    parts = []
    try:
        for page in pdf:
            textpage = page.get_textpage()
            parts.append(textpage.get_text_bounded())
            textpage.close()
            page.close()
        return {"pages": len(pdf), "text": "\n".join(parts), "tables": None}
    finally:
        pdf.close()


def _real_tables(tables: list[Any]) -> int:
    """Tables of >= 2 rows and >= 2 columns (1-column ones are framed code listings)."""
    count = 0
    for table in tables:
        rows = table.extract()
        if len(rows) >= 2 and max(len(r) for r in rows) >= 2:
            count += 1
    return count


def run_pdfplumber(path: Path, *, text: bool = True, tables: bool = False) -> dict[str, Any]:
    import pdfplumber

    parts, found, raw = [], 0, 0
    with pdfplumber.open(path) as pdf:
        pages = len(pdf.pages)
        for page in pdf.pages:
            if text:
                parts.append(page.extract_text() or "")
            if tables:
                table_list = page.find_tables()
                raw += len(table_list)
                found += _real_tables(table_list)
            page.close()
    return {
        "pages": pages,
        "text": "\n".join(parts) if text else None,
        "tables": found if tables else None,
        "tables_any_shape": raw if tables else None,
    }


def run_ragstrata(path: Path) -> dict[str, Any]:
    from ragstrata.ingest.pdf import parse_pdf

    parsed = parse_pdf(path.read_bytes(), source=str(path), fallback_title=path.stem)
    kinds: dict[str, int] = {}
    for block in parsed.blocks:
        kinds[block.kind] = kinds.get(block.kind, 0) + 1
    return {
        "pages": len(parsed.pages),
        "text": parsed.text,
        "tables": kinds.get("table", 0),
        "blocks": kinds,
    }


def timed(fn: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], float]:
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def measure(path: Path, method: str) -> dict[str, Any]:
    if method == "pypdfium2+pdfplumber-tables":
        text, t_text = timed(lambda: run_pypdfium2(path))
        tables, t_tables = timed(lambda: run_pdfplumber(path, text=False, tables=True))
        result = {**text, "tables": tables["tables"]}
        result["tables_any_shape"] = tables["tables_any_shape"]
        seconds = t_text + t_tables
    elif method == "pypdfium2":
        result, seconds = timed(lambda: run_pypdfium2(path))
    elif method == "pdfplumber":
        result, seconds = timed(lambda: run_pdfplumber(path))
    elif method == "pdfplumber+tables":
        result, seconds = timed(lambda: run_pdfplumber(path, tables=True))
    else:
        result, seconds = timed(lambda: run_ragstrata(path))
    row: dict[str, Any] = {
        "file": path.name,
        "corpus": path.parent.name,
        "method": method,
        "pages": result["pages"],
        "seconds": round(seconds, 3),
        "pages_per_s": round(result["pages"] / seconds, 1),
        "tables": result["tables"],
    }
    if "tables_any_shape" in result:
        row["tables_any_shape"] = result["tables_any_shape"]
    if "blocks" in result:
        row["blocks"] = result["blocks"]
    text = result["text"] or ""
    row["chars"] = len(text)
    if result["text"] is not None:
        # words glued together (>= 25 letters): a sign of lost inter-word spaces
        row["glued_words"] = len(_GLUED_RE.findall(text))
        if path.name in RUNNING:
            row["running_left"] = flat(text).count(RUNNING[path.name])
    if path.name in PROBES:
        haystack = flat(text)
        hits = [probe for probe in PROBES[path.name] if flat(probe) in haystack]
        row["probes_ok"] = f"{len(hits)}/{len(PROBES[path.name])}"
        row["probes_missed"] = [p for p in PROBES[path.name] if p not in hits]
        order = outline_order(path, text)
        row["outline_order"] = None if order is None else round(order, 3)
    return row


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version(), "machine": platform.machine()}
    for name in ("pypdfium2", "pdfplumber", "pdfminer.six", "ragstrata"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "missing"
    out["cpu_count"] = str(os.cpu_count())
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--out", type=Path, default=RESULTS / "pdf_parsers.json")
    args = parser.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    unknown = set(methods) - set(METHODS)
    if unknown:
        parser.error(f"unknown methods {sorted(unknown)}; choose from {', '.join(METHODS)}")
    files = [p for corpus in CORPORA for p in sorted((args.data / corpus).glob("*.pdf"))]
    if not files:
        parser.error(f"no PDFs under {args.data}/{{{','.join(CORPORA)}}}")

    rows: list[dict[str, Any]] = []
    for path in files:
        for method in methods:
            row = measure(path, method)
            rows.append(row)
            print(
                f"{row['file']:36s} {method:28s} {row['pages']:4d} p {row['seconds']:8.2f} s"
                f" {row['pages_per_s']:7.1f} p/s tables={row['tables']}"
                f" probes={row.get('probes_ok', '-')} outline={row.get('outline_order', '-')}",
                file=sys.stderr,
                flush=True,
            )

    summary: dict[str, dict[str, Any]] = {}
    for method in methods:
        mine = [r for r in rows if r["method"] == method]
        pages = sum(r["pages"] for r in mine)
        seconds = sum(r["seconds"] for r in mine)
        probes = [r["probes_ok"] for r in mine if "probes_ok" in r]
        outline = [r["outline_order"] for r in mine if r.get("outline_order") is not None]
        summary[method] = {
            "pages": pages,
            "seconds": round(seconds, 2),
            "pages_per_s": round(pages / seconds, 1),
            "tables": None
            if any(r["tables"] is None for r in mine)
            else sum(r["tables"] for r in mine),
            "two_column_probes": f"{sum(int(p.split('/')[0]) for p in probes)}/"
            f"{sum(int(p.split('/')[1]) for p in probes)}",
            "two_column_outline_order": round(sum(outline) / len(outline), 3) if outline else None,
            "glued_words": sum(r.get("glued_words", 0) for r in mine),
            "running_left": sum(r.get("running_left", 0) for r in mine),
        }

    print(
        "| method | pages | seconds | pages/s | tables | two-column probes | outline order"
        " | glued words | running lines left |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for method, s in summary.items():
        tables = "-" if s["tables"] is None else s["tables"]
        print(
            f"| {method} | {s['pages']} | {s['seconds']} | {s['pages_per_s']} | {tables} |"
            f" {s['two_column_probes']} | {s['two_column_outline_order']} |"
            f" {s['glued_words']} | {s['running_left']} |"
        )
    print()
    print("| file | method | pages/s | tables | probes | outline order |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        tables = "-" if r["tables"] is None else r["tables"]
        print(
            f"| {r['file']} | {r['method']} | {r['pages_per_s']} | {tables} |"
            f" {r.get('probes_ok', '')} | {r.get('outline_order', '')} |"
        )

    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "command": "python bench/pdf_parsers.py " + " ".join(argv or sys.argv[1:]),
        "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "environment": versions(),
        "summary": summary,
        "rows": rows,
    }
    args.out.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
