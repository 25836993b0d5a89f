"""The one escaping function every rendering uses (benchlab.report.safe)."""

from __future__ import annotations

import pytest

from benchlab.report import safe


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain name-1.2", "plain name-1.2"),
        ("\x1b[31mred", "\\x1b[31mred"),
        ("\x1b]8;;http://e\x1b\\x\x1b]8;;\x1b\\", "\\x1b]8;;http://e\\x1b\\x\\x1b]8;;\\x1b\\"),
        ("a\rb\nc\td", "a\\x0db\\x0ac\\x09d"),
        ("x\x9by\x7f\x00", "x\\x9by\\x7f\\x00"),
        ("abc\u202edcba\u2066\u200b", "abc\\u202edcba\\u2066\\u200b"),
        ("line\u2028sep", "line\\u2028sep"),
        ("caf\u00e9 \u00a0\u65e5\u672c", "caf\u00e9 \u00a0\u65e5\u672c"),  # printable text and spaces stay
        ("[bold]x[/]", "[bold]x[/]"),
    ],
)
def test_text_escapes_everything_that_is_not_printable(raw: str, shown: str) -> None:
    assert safe.text(raw) == shown


def test_blocks_keep_newlines_only_and_long_text_is_cut_with_a_count() -> None:
    assert safe.block("one\r\ntwo\n\x1b[2Jthree\r") == "one\ntwo\n\\x1b[2Jthree\\x0d"
    assert safe.text("x" * 1500) == "x" * 1000 + "... (500 more characters)"


def test_markdown_cells_cannot_end_a_cell_or_write_code_links_or_html() -> None:
    assert safe.markdown("a|b`c`*d*<i>[l](http://e)\\") == "a\\|b\\`c\\`\\*d\\*\\<i\\>[l]\\(http://e)\\\\"
    assert safe.markdown("+1.0% [-0.3, +2.1]") == "+1.0% [-0.3, +2.1]"


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("=1+2", "'=1+2"), ("+x", "'+x"), ("-x", "'-x"), ("@SUM(A1)", "'@SUM(A1)"), ("\tx", "'\\x09x"),
        ("\rx", "'\\x0dx"), ("a=b", "a=b"), (-3.2, -3.2), (0, 0), (None, None), ("", ""),
    ],
)  # fmt: skip
def test_csv_cells_never_start_a_formula_and_numbers_stay_numbers(value: object, cell: object) -> None:
    assert safe.csv_cell(value) == cell


@pytest.mark.parametrize(
    ("name", "file"),
    [("zstd-levels", "zstd-levels"), ("../../etc/passwd", "_.._etc_passwd"), ("/abs", "_abs"), ("..", "experiment"),
     (".hidden", "hidden"), ("a b\x1b", "a_b_"), ("x" * 300, "x" * 100)],
)  # fmt: skip
def test_file_names_from_stored_names_stay_in_the_folder(name: str, file: str) -> None:
    assert safe.file_name(name) == file
