"""Step 4 of the pipeline (see :mod:`ragstrata.ingest.pdf`): ruled regions whose words align in
columns become one table segment holding a GFM pipe table."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from itertools import pairwise

from ragstrata.ingest.pdf.model import Page, Rule, Segment, Word
from ragstrata.ingest.pdf.rows import word_rows

_TABLE_MIN_FILL = 0.45
_CAPTION_RE = re.compile(
    r"(?:Cuadro|Tabla|Table|Figura|Figure|Fig\.)\s+[0-9IVXL]+(?:[.\-][0-9]+)*\s*[:.]"
)
"""A caption line: it ends the table above it (DocBook sets "Cuadro 1.6: ..." under its table)."""
_ADMONITIONS = frozenset(
    {
        "nota",
        "sugerencia",
        "aviso",
        "atención",
        "atencion",
        "importante",
        "precaución",
        "precaucion",
        "advertencia",
        "consejo",
        "peligro",
        "note",
        "tip",
        "hint",
        "warning",
        "caution",
        "important",
        "danger",
        "attention",
    }
)
"""Labels of a ruled box of text (DocBook's admonitions, Spanish and English): a ruled region
whose first line is one of these alone is a tip or a note, read as prose a line at a time (its
justified lines left a gap that no word covered at the same place on each line, and the box
was read as a 2-column table, "| sugerencia | |" over "| Para un sistema Debian con la |
versión estable, ... |", or as two columns of text)."""


def detect_tables(page: Page, body_size: float) -> list[Segment]:
    """Replace the words of each detected table by one table segment (module docstring, step
    4). Returns the page's segments."""
    segments = page.segments
    if len(page.hrules) < 2 or not segments:
        return segments
    tables: list[Segment] = []
    boxes: list[Segment] = []
    used: set[int] = set()
    for top_rule, bottom_rule, inner in _rule_groups(page.hrules, segments):
        x0, x1 = top_rule.start, top_rule.end
        y0, y1 = top_rule.pos, bottom_rule.pos
        members = [
            s
            for s in segments
            if id(s) not in used
            and s.x0 >= x0 - 3
            and (s.x1 <= x1 + 3 or _overflowing_cell(s, x0, x1))
            and s.top >= y0 - 2
            and s.bottom <= y1 + 2
        ]
        if len(members) < 2:
            continue
        inside = {id(s) for s in members} | used
        crossing = any(
            s.bottom > y0 + 2 and s.top < y1 - 2 and s.x0 < x1 and s.x1 > x0 and id(s) not in inside
            for s in segments
        )
        if crossing:
            continue  # text runs into the region from outside: not a table
        vrules = [
            v.pos
            for v in page.vrules
            if x0 + 3 < v.pos < x1 - 3 and min(v.end, y1) - max(v.start, y0) >= 0.4 * (y1 - y0)
        ]
        box = _admonition_lines(members)
        if box:
            used.update(id(s) for s in members)
            boxes.extend(box)
            continue
        markdown = _table_markdown(members, vrules, inner, x0, x1, body_size)
        if markdown:
            used.update(id(s) for s in members)
            tables.append(Segment((), x0, y0, x1, y1, markdown))
    if not tables and not boxes:
        return segments
    return [s for s in segments if id(s) not in used] + boxes + tables


def _admonition_lines(members: Sequence[Segment]) -> list[Segment]:
    """A ruled tip or note box (its first line one word of :data:`_ADMONITIONS`) as one
    segment per visual line, so no gap inside a line splits it into cells or columns; ``[]``
    for any other region."""
    rows = word_rows([w for s in members for w in s.words])
    if not rows or len(rows[0]) != 1 or rows[0][0].text.strip(" :").lower() not in _ADMONITIONS:
        return []
    return [
        Segment(
            tuple(row),
            min(w.x0 for w in row),
            min(w.top for w in row),
            max(w.x1 for w in row),
            max(w.bottom for w in row),
        )
        for row in rows
    ]


def _rule_groups(
    hrules: Sequence[Rule], segments: Sequence[Segment]
) -> list[tuple[Rule, Rule, list[float]]]:
    """Candidate table regions: runs of horizontal rules with the same extent (within 4 pt)
    and no prose between consecutive ones, as ``(top rule, bottom rule, y of the interior rules
    spanning >= 30 % of the width)``."""
    rules = sorted((r for r in hrules if r.end - r.start >= 30), key=lambda r: r.pos)
    groups: list[tuple[Rule, Rule, list[float]]] = []
    taken: set[int] = set()
    for i, first in enumerate(rules):
        if i in taken:
            continue
        chain = [
            j
            for j in range(i, len(rules))
            if abs(rules[j].start - first.start) <= 4 and abs(rules[j].end - first.end) <= 4
        ]
        taken.update(chain)
        runs: list[list[Rule]] = [[rules[chain[0]]]]
        for a, b in pairwise(chain):
            if _prose_between(rules[a].pos, rules[b].pos, first.start, first.end, segments):
                runs.append([rules[b]])
            else:
                runs[-1].append(rules[b])
        for run in runs:
            if len(run) < 2:
                continue
            top, bottom = run[0], run[-1]
            width = top.end - top.start
            inner = [
                r.pos
                for r in rules
                if top.pos + 1 < r.pos < bottom.pos - 1
                and min(r.end, top.end) - max(r.start, top.start) >= 0.3 * width
            ]
            groups.append((top, bottom, inner))
    return groups


def _overflowing_cell(s: Segment, x0: float, x1: float) -> bool:
    """Whether ``s``, which runs past the right end of the rules ``x0..x1``, is a cell whose
    unbreakable token overflows the table (a later column, at most 3 words: debian-reference
    p. 84's ``~a{install,upgrade,downgrade,remove,purge,hold,keep}`` cut its table in two and
    was lost from both), not prose running across the region."""
    return s.x0 - x0 > 0.15 * (x1 - x0) and len(s.words) <= 3


def _prose_between(y0: float, y1: float, x0: float, x1: float, segments: Sequence[Segment]) -> bool:
    """Whether a paragraph line (>= 8 words over >= 70 % of the width from its left edge, or
    text running past the rules' ends) or a caption ("Cuadro 1.6: ...", "Table 2. ...") lies
    between two rules: then they bound no single table (a caption under one table and the
    ruled box of a tip after it were read as one table with them)."""
    rows: dict[int, list[Segment]] = {}
    for s in segments:
        if s.top < y0 - 1 or s.bottom > y1 + 1 or s.x1 <= x0 or s.x0 >= x1:
            continue
        if s.x0 < x0 - 4 or (s.x1 > x1 + 4 and not _overflowing_cell(s, x0, x1)):
            return True
        if (  # a long line from the left edge; one from a later column is a wide cell
            len(s.words) >= 8 and s.x1 - s.x0 >= 0.7 * (x1 - x0) and s.x0 - x0 <= 0.15 * (x1 - x0)
        ):
            return True
        rows.setdefault(round(s.top), []).append(s)
    return any(
        _CAPTION_RE.match(" ".join(s.text for s in sorted(row, key=lambda s: s.x0)))
        for row in rows.values()
    )


def _table_markdown(
    members: Sequence[Segment],
    vrules: Sequence[float],
    inner_rules: Sequence[float],
    x0: float,
    x1: float,
    body_size: float,
) -> str:
    words = [w for s in members for w in s.words]
    sizes = sorted(w.size for w in words)
    em = sizes[len(sizes) // 2] if sizes else body_size
    # column separators: vertical rules, then gaps no word covers
    separators = sorted(set(round(v, 1) for v in vrules))
    spans = sorted((w.x0, w.x1) for w in words)
    covered: list[list[float]] = []
    for a, b in spans:
        if covered and a <= covered[-1][1]:
            covered[-1][1] = max(covered[-1][1], b)
        else:
            covered.append([a, b])
    for (_, a1), (b0, _) in pairwise(covered):
        if b0 - a1 >= max(0.8 * em, 4.0) and not any(a1 - 3 <= v <= b0 + 3 for v in vrules):
            separators.append((a1 + b0) / 2)
    separators.sort()
    columns = len(separators) + 1
    if columns < 2:
        return ""

    inner = sorted(inner_rules)
    lines: list[tuple[int, list[list[Word]]]] = []
    for row in word_rows(words):
        cells: list[list[Word]] = [[] for _ in range(columns)]
        for word in row:
            cells[bisect_left(separators, (word.x0 + word.x1) / 2)].append(word)
        lines.append((bisect_left(inner, min(w.top for w in row)), cells))
    rows = _table_rows(lines, columns, ruled=len(inner) >= 2, em=em)
    if sum(1 for _, row in rows if sum(1 for cell in row if cell) >= 2) < 2:
        return ""  # not two rows of two cells: a ruled box of text (a tip, a note)
    filled = sum(1 for _, row in rows for cell in row if cell)
    if filled < _TABLE_MIN_FILL * len(rows) * columns:
        return ""
    # several rows above the first interior rule form one header (a multi-line header)
    head_rows = sum(1 for band, _ in rows if band == 0) if inner else 1
    if not 1 <= head_rows <= 3 or head_rows >= len(rows):
        head_rows = 1
    header = [
        " ".join(w.text for r in range(head_rows) for w in rows[r][1][c]) for c in range(columns)
    ]
    body = [[" ".join(w.text for w in cell) for cell in row] for _, row in rows[head_rows:]]
    out = ["| " + " | ".join(_cell(t) for t in header) + " |", "|" + " --- |" * columns]
    out += ["| " + " | ".join(_cell(t) for t in row) + " |" for row in body]
    return "\n".join(out)


def _table_rows(
    lines: Sequence[tuple[int, list[list[Word]]]], columns: int, *, ruled: bool, em: float
) -> list[tuple[int, list[list[Word]]]]:
    """Table lines (``(band, cells)``; a band lies between two interior rules) to rows.

    With rules between rows (>= 2 interior rules), a band where some line leaves empty a cell
    that another line fills is one row: a wrapped cell, the other cells centred on it (the
    centred cell may sit on a line of its own between the wrapped lines: "| | acceso limitado
    ... |", "| dip | |", "| | (dialup IP) ... |" was read as two rows). Otherwise a line continues
    the previous row of its band when its first cell is empty under a filled one, when all its
    words are in a smaller font (sub/superscripts), or when it fills at most half as many cells
    as that row and each of its cells starts in lowercase (a wrapped cell).
    """
    rows: list[tuple[int, list[list[Word]]]] = []
    k = 0
    while k < len(lines):
        band = lines[k][0]
        end = k
        while end < len(lines) and lines[end][0] == band:
            end += 1
        group = [cells for _, cells in lines[k:end]]
        counts = [sum(1 for cell in cells if cell) for cells in group]
        spread = {c for cells in group for c in range(columns) if cells[c]}
        if ruled and len(group) > 1 and min(counts) < len(spread):
            rows.append((band, [[w for cells in group for w in cells[c]] for c in range(columns)]))
        else:
            for cells in group:
                if rows and rows[-1][0] == band and _continues_row(rows[-1][1], cells, em):
                    for c in range(columns):
                        rows[-1][1][c].extend(cells[c])
                else:
                    rows.append((band, cells))
        k = end
    return rows


def _continues_row(previous: Sequence[list[Word]], cells: Sequence[list[Word]], em: float) -> bool:
    filled = [cell for cell in cells if cell]
    if not filled:
        return True
    if not cells[0] and previous[0]:
        return True
    if all(w.size < 0.85 * em for cell in filled for w in cell):
        return True
    previous_filled = sum(1 for cell in previous if cell)
    return 2 * len(filled) <= previous_filled and all(cell[0].text[:1].islower() for cell in filled)


def _cell(text: str) -> str:
    text = " ".join(text.split())
    # a hyphenated line break in a cell, unless the word broken is a path, a URL, a name
    # already hyphenated or code ("debian-" + "security/", "ttf-mscorefonts-" + "installer",
    # "config::low-" + "level" lost their hyphens)
    text = re.sub(
        r"(\S*[^\W\d_])- (?=[a-zà-ÿ])",
        lambda m: m.group(0)[:-1] if joins_code(m.group(1)) else m.group(1),
        text,
    )
    return text.replace("|", "\\|")


def joins_code(token: str) -> bool:
    """Whether ``token``, the text before a line-end hyphen back to the last space, is a path,
    URL, code or an already hyphenated name, whose hyphen is part of it, not a word break."""
    return bool(re.search(r"[/:.\-_\\=@\d]", token))
