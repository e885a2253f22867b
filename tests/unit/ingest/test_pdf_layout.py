"""PDF layout passes on synthetic word boxes: table detection, reading order, paragraphs.

No PDF file and no pypdfium2: the records of :mod:`ragstrata.ingest.pdf.model` are built by hand
(display space: points, y downward) and fed to the passes that follow extraction.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragstrata.ingest.pdf.blocks import build_items
from ragstrata.ingest.pdf.model import Line, Page, Rule, Stats, Word
from ragstrata.ingest.pdf.order import reading_order
from ragstrata.ingest.pdf.rows import row_segments
from ragstrata.ingest.pdf.running import drop_running_lines
from ragstrata.ingest.pdf.tables import detect_tables

BODY = 10.0
CHAR = 5.0  # width of one character, points
SPACE = 3.0  # gap between the words of one line, under the 0.8 em that cuts a segment
LEADING = 14.0  # baseline to baseline: lines 10 pt high, 4 pt apart (under half an em)


def line_words(text: str, x: float, top: float, *, size: float = BODY) -> list[Word]:
    """The words of ``text`` set left to right from ``x`` on a line whose box starts at
    ``top``."""
    words: list[Word] = []
    for token in text.split():
        width = CHAR * len(token)
        words.append(Word(token, x, top, x + width, top + size, size, False, False))
        x += width + SPACE
    return words


def column(texts: Sequence[str], x: float, top: float) -> list[Word]:
    return [w for k, text in enumerate(texts) for w in line_words(text, x, top + k * LEADING)]


def page_of(words: Sequence[Word], *, hrules: Sequence[Rule] = ()) -> Page:
    return Page(
        index=0,
        width=600.0,
        height=800.0,
        segments=row_segments(words),
        hrules=list(hrules),
        vrules=[],
        has_text=bool(words),
        has_images=False,
    )


def right_aligned(text: str, x1: float, top: float) -> list[Word]:
    """``text`` set so that its last word ends at ``x1``."""
    width = sum(CHAR * len(t) for t in text.split()) + SPACE * (len(text.split()) - 1)
    return line_words(text, x1 - width, top)


def texts_after_running(words_by_page: Sequence[Sequence[Word]]) -> list[list[str]]:
    """Each page's segment texts once running lines are dropped."""
    pages = []
    for index, words in enumerate(words_by_page):
        page = page_of(words)
        page.index = index
        pages.append(page)
    drop_running_lines(pages, BODY)
    return [[s.text for s in page.segments] for page in pages]


def read(page: Page) -> list[Line]:
    return reading_order(page, detect_tables(page, BODY), BODY)


LEFT = [
    "left one alpha in the first column",
    "left two beta in the first column",
    "left three gamma in the first column",
    "left four delta in the first column",
]
RIGHT = [
    "right one epsilon in the second",
    "right two zeta in the second",
    "right three eta in the second",
    "right four theta in the second",
]


# --------------------------------------------------------------------------- reading order
def test_a_two_column_page_is_read_column_by_column() -> None:
    page = page_of(column(LEFT, 50, 100) + column(RIGHT, 320, 100))

    lines = read(page)

    assert [line.text for line in lines] == LEFT + RIGHT
    assert len({line.column for line in lines[:4]}) == 1
    assert lines[0].column != lines[4].column


def mono(words: Sequence[Word]) -> list[Word]:
    return [Word(w.text, w.x0, w.top, w.x1, w.bottom, w.size, w.bold, True) for w in words]


def test_a_wide_gap_inside_code_lines_is_no_column_gutter() -> None:
    """Trial 48: a listing's right-aligned date (maint-guide's changelog) became a column of
    its own, read after the whole listing and glued into the next paragraph."""
    listing = ["4", "5  -- Josip Rodin <joy-mg@debian.org>", "6", "7  gentoo (0.9.12-1) unstable"]
    words = mono(column(listing, 50, 100)) + mono(
        right_aligned("Mon, 22 Mar 2010 00:37:31 +0100", 560, 114)
    )
    lines = read(page_of(words))
    assert [line.text for line in lines][:2] == [
        "4",
        "5 -- Josip Rodin <joy-mg@debian.org> Mon, 22 Mar 2010 00:37:31 +0100",
    ]
    # a code column beside a prose column is still two columns
    page = page_of(mono(column(LEFT, 50, 100)) + column(RIGHT, 320, 100))
    assert [line.text for line in read(page)] == LEFT + RIGHT


def test_a_full_width_line_between_two_column_runs_is_read_between_them() -> None:
    full = "a line that runs across the gutter and ends the first run of columns"
    words = (
        column(LEFT[:2], 50, 100)
        + column(RIGHT[:2], 320, 100)
        + line_words(full, 50, 100 + 2 * LEADING)
        + column(LEFT[2:], 50, 100 + 3 * LEADING)
        + column(RIGHT[2:], 320, 100 + 3 * LEADING)
    )

    texts = [line.text for line in read(page_of(words))]

    assert texts == [*LEFT[:2], *RIGHT[:2], full, *LEFT[2:], *RIGHT[2:]]


def test_a_title_spanning_both_columns_stays_first_and_a_closing_line_last() -> None:
    title = line_words("A Title That Spans Both Columns Of The Page Above Them All", 50, 60)
    closing = line_words("a closing line that runs across the full width of the page", 50, 200)
    page = page_of(title + column(LEFT, 50, 100) + column(RIGHT, 320, 100) + closing)

    texts = [line.text for line in read(page)]

    assert texts == [
        "A Title That Spans Both Columns Of The Page Above Them All",
        *LEFT,
        *RIGHT,
        "a closing line that runs across the full width of the page",
    ]


def test_a_sentence_crossing_the_column_break_stays_one_paragraph() -> None:
    left = [
        "The first column holds the",
        "start of a sentence that is",
        "not done when it ends and",
    ]
    right = [
        "continues at the top of the",
        "second column to its end.",
        "Then it is done here too.",
    ]
    page = page_of(column(left, 50, 100) + column(right, 320, 100))

    items = build_items([read(page)], {}, Stats(body_size=BODY))

    assert [item.kind for item in items] == ["paragraph"]
    assert items[0].text == " ".join(left + right)


def test_a_sentence_ended_at_the_column_break_ends_the_paragraph() -> None:
    left = ["The first column holds the", "start of a sentence that is", "done right here."]
    right = ["A new paragraph starts at", "the top of the next column."]
    page = page_of(column(left, 50, 100) + column(right, 320, 100))

    items = build_items([read(page)], {}, Stats(body_size=BODY))

    assert [item.text for item in items] == [" ".join(left), " ".join(right)]


# --------------------------------------------------------------------------- tables
TABLE_X0, TABLE_X1 = 100.0, 400.0
GRID = [
    ["Name", "Size", "Unit"],
    ["alpha", "12", "pt"],
    ["beta", "3.5", "mm"],
    ["gamma", "40", "px"],
    ["delta", "7", "em"],
]
GRID_MARKDOWN = "\n".join(
    [
        "| Name | Size | Unit |",
        "| --- | --- | --- |",
        "| alpha | 12 | pt |",
        "| beta | 3.5 | mm |",
        "| gamma | 40 | px |",
        "| delta | 7 | em |",
    ]
)


def booktabs(top: float, rows: int) -> list[Rule]:
    """Top rule, a rule under the header row and a bottom rule, all of the table's width."""
    return [
        Rule(top, TABLE_X0, TABLE_X1),
        Rule(top + LEADING + 2, TABLE_X0, TABLE_X1),
        Rule(top + (rows + 1) * LEADING + 2, TABLE_X0, TABLE_X1),
    ]


def grid_words(grid: Sequence[Sequence[str]], top: float, xs: Sequence[float]) -> list[Word]:
    words: list[Word] = []
    for r, row in enumerate(grid):
        y = top + 4 + r * LEADING + (2 if r else 0)
        for x, cell in zip(xs, row, strict=True):
            words += line_words(cell, x, y)
    return words


def test_aligned_words_between_booktabs_rules_become_a_pipe_table() -> None:
    page = page_of(grid_words(GRID, 300, [110, 210, 310]), hrules=booktabs(300, len(GRID)))

    segments = detect_tables(page, BODY)

    assert [s.table for s in segments] == [GRID_MARKDOWN]
    assert segments[0].words == ()
    assert (segments[0].x0, segments[0].x1) == (TABLE_X0, TABLE_X1)


def test_a_table_between_prose_is_read_in_place() -> None:
    above = line_words("A paragraph above the table.", 100, 270)
    below = line_words("A paragraph below the table.", 100, 400)
    grid = grid_words(GRID, 300, [110, 210, 310])
    page = page_of(above + grid + below, hrules=booktabs(300, len(GRID)))

    lines = read(page)

    assert [line.table or line.text for line in lines] == [
        "A paragraph above the table.",
        GRID_MARKDOWN,
        "A paragraph below the table.",
    ]


def test_rows_with_ragged_gaps_are_not_a_table() -> None:
    # three words a row between the same rules, each row's gaps under another row's words
    shifts = [0, 40, 20, 40]
    words = [
        w
        for r, shift in enumerate(shifts)
        for k in range(3)
        for w in line_words(f"Word{r}{k}abcdefg", 100 + shift + 75 * k, 304 + r * LEADING)
    ]
    page = page_of(words, hrules=booktabs(300, len(shifts)))

    segments = detect_tables(page, BODY)

    assert len(segments) == 12  # no gap lines up, so no column: the words stay as they were
    assert not any(s.table for s in segments)
    aligned = [w for w in words if w.top < 304 + LEADING]  # the first row, repeated
    rows = [
        Word(w.text, w.x0, w.top + r * LEADING, w.x1, w.bottom + r * LEADING, BODY, False, False)
        for r in range(len(shifts))
        for w in aligned
    ]
    aligned_page = page_of(rows, hrules=booktabs(300, len(shifts)))
    assert [s.table for s in detect_tables(aligned_page, BODY) if s.table]


def test_aligned_words_need_two_rules_of_the_same_extent_to_be_a_table() -> None:
    words = grid_words(GRID, 300, [110, 210, 310])
    bottom = 300 + (len(GRID) + 1) * LEADING + 2
    unequal = [Rule(300, TABLE_X0, TABLE_X1), Rule(bottom, TABLE_X0, TABLE_X1 - 150)]
    equal = [Rule(300, TABLE_X0, TABLE_X1), Rule(bottom, TABLE_X0 + 3, TABLE_X1 - 3)]

    assert not any(s.table for s in detect_tables(page_of(words), BODY))
    assert not any(s.table for s in detect_tables(page_of(words, hrules=unequal), BODY))
    tables = [s.table for s in detect_tables(page_of(words, hrules=equal), BODY) if s.table]
    assert tables == [GRID_MARKDOWN]


def test_a_grid_under_45_percent_filled_is_not_a_table() -> None:
    xs = [110, 180, 250, 320]
    header = ["Name", "Size", "Unit", "Note"]
    sparse = [
        header,
        ["A1", "", "", ""],
        ["B2", "", "", ""],
        ["C3", "", "", ""],
        ["D4", "", "", ""],
    ]
    rules = booktabs(300, len(sparse))

    # 8 of 20 cells filled: under the 45 % floor
    assert not any(s.table for s in detect_tables(page_of(grid_words(sparse, 300, xs)), BODY))
    assert not any(
        s.table for s in detect_tables(page_of(grid_words(sparse, 300, xs), hrules=rules), BODY)
    )
    # one more filled cell (9 of 20) and it is a table
    sparse[1][1] = "X"
    tables = [
        s.table
        for s in detect_tables(page_of(grid_words(sparse, 300, xs), hrules=rules), BODY)
        if s.table
    ]
    assert tables == [
        "\n".join(
            [
                "| Name | Size | Unit | Note |",
                "| --- | --- | --- | --- |",
                "| A1 | X |  |  |",
                "| B2 |  |  |  |",
                "| C3 |  |  |  |",
                "| D4 |  |  |  |",
            ]
        )
    ]


# --------------------------------------------------------------------------- running lines
HEADER = "Proceedings of the Workshop on Retrieval"


def test_a_running_header_mirrored_on_facing_pages_is_dropped() -> None:
    """A two-sided layout sets the header at the left margin of even pages and against the
    right margin of odd ones: 2 pages at each place, the same place once mirrored."""
    pages = [
        [
            *(line_words(HEADER, 50, 30) if k % 2 == 0 else right_aligned(HEADER, 550, 30)),
            *column(LEFT, 50, 100),
        ]
        for k in range(4)
    ]
    for texts in texts_after_running(pages):
        assert texts == LEFT


def test_a_two_line_running_header_is_dropped_and_a_repeated_body_line_stays() -> None:
    """The edge band is the rows before the first wide gap (two here); a line repeated on
    every page in the body is content ("Indique las reglas..." on an exercise sheet)."""
    pages = [
        [
            *line_words(HEADER, 50, 30),
            *line_words("Volume 3 Issue 2", 50, 40),
            *column([f"Exercise {k}", "State the rules you apply.", *LEFT], 50, 100),
        ]
        for k in range(4)
    ]
    for k, texts in enumerate(texts_after_running(pages)):
        assert texts == [f"Exercise {k}", "State the rules you apply.", *LEFT]


def test_page_numbers_beside_a_header_that_does_not_recur_are_dropped() -> None:
    """Roman page numbers at one place whose value minus the page index stays the same go,
    even with a one-page header on their row; a number on a body row stays."""
    titles = ["Prefacio", "Agradecimientos", "Notación", "Convenciones", "Prólogo"]
    numerals = ["i", "ii", "iii", "iv", "v"]
    pages = [
        [
            *line_words(numerals[k], 50, 30),
            *right_aligned(titles[k], 550, 30),
            *column(LEFT, 50, 100),
            *line_words(str(k + 7), 400, 100),
        ]
        for k in range(5)
    ]
    for k, texts in enumerate(texts_after_running(pages)):
        assert numerals[k] not in texts
        assert titles[k] in texts and str(k + 7) in texts
