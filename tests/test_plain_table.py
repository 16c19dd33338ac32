"""The text table without rich (report/plain_table.py) against rich itself: the same text for
every document of printable ASCII, and rich for any other (a name in another script, a wide
glyph), so a terminal's cell widths are rich's to measure."""

import random

import pytest

from optimus_calc.report import formats as F
from optimus_calc.report import plain_table as PT
from optimus_calc.report.document import Column, Document, Table

WORDS = ["a", "GPU", "megatron-deepspeed", "6,505", "62.7%", "109.8->54.2", "(hide", "step)",
         "x" * 37, "https://example.org/a/very/long/path/that/cannot/fit/anywhere/at/all",
         "cards/GPU", "-", "0.0", "   ", "tokens/s"]


def _text(rng, most=12):
    n = rng.randint(0, most)
    text = ""
    for _ in range(n):
        text += rng.choice(WORDS) + rng.choice([" ", " ", "  ", "\n", ""])
    return text


def _doc(rng) -> Document:
    tables = []
    for t in range(rng.randint(0, 2)):
        cols = [Column(f"c{i}", _text(rng, 3) or f"h{i}", align=rng.choice(["left", "right",
                                                                             "center"]),
                       compact=rng.random() < 0.7) for i in range(rng.randint(0, 9))]
        rows = [{c.key: rng.choice([_text(rng, 4), rng.random() * 1e4, rng.randint(0, 10**7),
                                    None, True]) for c in cols} for _ in range(rng.randint(0, 6))]
        tables.append(Table(rng.choice(["", f"table {t}", _text(rng, 30)]), cols, rows))
    return Document(_text(rng, 20) or "title", {}, tables,
                    notes=[_text(rng, 40) for _ in range(rng.randint(0, 3))],
                    header=[(f"k{i}", _text(rng, 30)) for i in range(rng.randint(0, 3))])


@pytest.mark.parametrize("seed", range(60))
def test_plain_table_draws_what_rich_draws(seed):
    rng = random.Random(seed)
    doc = _doc(rng)
    for width in (40, 60, 80, 99, 100, 120, 160):
        assert F.render_table(doc, width) == F.render_table(doc, width, use_rich=True), width


def test_the_plain_path_is_taken_for_a_plan_sized_table_and_wraps_as_rich():
    # two columns of 9 cells, a header of three lines bottom-aligned over one-line headers
    cols = [Column("n", "SmartNIC", align="left"), Column("k", "cards/GPU (hide step)")]
    doc = Document("t", {}, [Table("", cols, [{"n": "bluefield-3", "k": 2}])])
    out = F.render_table(doc, 40)
    assert out == F.render_table(doc, 40, use_rich=True)
    # widths: SmartNIC 11 (its longest cell), the other its header's 21; under 100 columns
    # the padding is one space on the left, none at the table's edge: 11 + 1 divider + 1 pad
    # + 21 = 34 columns, the header on one line
    assert out.splitlines()[1:] == ["SmartNIC     cards/GPU (hide step)",
                                    "\u2501" * 34,
                                    "bluefield-3                      2"]
    # at 30: the longest words 11 + 9 and 2 x 2 of padding leave 6, short of the header's 21:
    # widths 11 and 9 (22 columns), the header in three lines, right-justified, and the
    # one-line header beside it bottom-aligned
    narrow = F.render_table(doc, 30).splitlines()
    assert narrow == F.render_table(doc, 30, use_rich=True).splitlines()
    assert narrow[1:5] == [" " * 13 + "cards/GPU", " " * 17 + "(hide",
                           "SmartNIC" + " " * 9 + "step)", "\u2501" * 22]


def test_other_text_is_drawn_by_rich():
    # a wide glyph takes two terminal cells: rich measures it, the plain path would not; nor
    # a no-break space (whitespace to re, left to rich's wrapping) or a soft hyphen
    doc = Document("\u6a21\u578b plan", {}, [Table("", [Column("a", "name")],
                                                     [{"a": "\u00e9t\u00e9"}])])
    assert not PT.plain("\u6a21") and not PT.plain("a\u00a0b") and not PT.plain("\u00ad")
    assert not PT.plain("\u2501") and PT.plain("a b\nc")
    assert F.render_table(doc, 60) == F.render_table(doc, 60, use_rich=True)


LATIN1 = ["\u00a7", "\u00e9t\u00e9", "\u00b110%", "na\u00efve", "\u00d7" * 23, "\u00bd\u00bc",
          "\u00a1hola!", "\u00ff"]


@pytest.mark.parametrize("seed", range(4))
def test_latin1_is_drawn_as_rich_draws_it(seed):
    # Latin-1's signs and letters are one terminal cell each (`validate`'s "\u00a7" column):
    # the plain path draws them, the same text as rich's
    assert PT.plain("\u00a7 \u00e9t\u00e9 \u00b1 \u00ff\u00a1") and PT.plain(" ".join(LATIN1))
    rng = random.Random(1000 + seed)
    words = list(WORDS)
    WORDS[:] = words + LATIN1
    try:
        doc = _doc(rng)
    finally:
        WORDS[:] = words
    for width in (40, 80, 120):
        assert F.render_table(doc, width) == F.render_table(doc, width, use_rich=True), width


def test_wrap_folds_a_word_longer_than_the_line():
    # rich's divide_line: the word with its trailing space is folded in pieces of the width,
    # so the space starts the next line (rich 15: Text("ab cdefghijkl mn").wrap at 5 is
    # ['ab ', 'cdefg', 'hijkl', ' mn'])
    assert PT.wrap("ab cdefghijkl mn", 5) == ["ab ", "cdefg", "hijkl", " mn"]
    assert PT.wrap("ab cdefghijkl mn", 5, "right") == ["   ab", "cdefg", "hijkl", "   mn"]
    assert PT.wrap("ab", 5, "center") == [" ab  "]
