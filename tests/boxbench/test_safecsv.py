import io

import pytest

from boxbench import safecsv


def written(*cells) -> str:
    buffer = io.StringIO()
    safecsv.writer(buffer, lineterminator="\n").writerow(cells)
    return buffer.getvalue()


@pytest.mark.parametrize("cell", ["\t=1+1", "\r=1+1", "\tplain"])
def test_it_quotes_cells_that_start_with_a_tab_or_carriage_return(cell):
    assert written(cell).lstrip('"').startswith("'" + cell[0])


def test_it_still_defuses_formulas_and_leaves_numbers_and_text_alone():
    assert written("=HYPERLINK(1)", -1.5, "-2", "plain\tinside") == (
        "'=HYPERLINK(1),-1.5,-2,plain\tinside\n"
    )


def test_it_writes_several_rows():
    buffer = io.StringIO()
    safecsv.writer(buffer, lineterminator="\n").writerows([["a"], ["\tb"]])
    assert buffer.getvalue() == "a\n'\tb\n"
