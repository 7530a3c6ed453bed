import pytest

from agon.verify import exact


@pytest.mark.parametrize("pred,gold,ok", [
    ("115", "115", True), (" 115 ", "115", True), ("+115", "115", True), ("0115", "115", True),
    ("-7", "-7", True), ("7", "-7", False), ("115.0", "115", False), ("", "1", False),
    (None, "1", False), ("1 1 5", "115", True), ("abc", "1", False),
])
def test_is_correct(pred, gold, ok):
    assert exact.is_correct(pred, gold) is ok


def test_bad_gold_names_it():
    with pytest.raises(ValueError, match="'x1'"):
        exact.is_correct("1", "x1")
