from datetime import date

import pytest

from .dates import add_months


def test_same_day_in_a_later_month():
    assert add_months(date(2024, 1, 15), 1) == date(2024, 2, 15)
    assert add_months(date(2024, 1, 15), 0) == date(2024, 1, 15)
    assert add_months(date(2024, 3, 10), 5) == date(2024, 8, 10)


def test_year_rollover():
    assert add_months(date(2024, 12, 5), 1) == date(2025, 1, 5)
    assert add_months(date(2024, 11, 20), 14) == date(2026, 1, 20)
    assert add_months(date(2000, 1, 1), 1200) == date(2100, 1, 1)


def test_negative_months():
    assert add_months(date(2024, 1, 10), -1) == date(2023, 12, 10)
    assert add_months(date(2024, 3, 31), -1) == date(2024, 2, 29)
    assert add_months(date(2024, 3, 31), -13) == date(2023, 2, 28)
    assert add_months(date(2024, 5, 1), -24) == date(2022, 5, 1)


def test_day_is_clamped_to_the_end_of_the_month():
    assert add_months(date(2024, 1, 31), 1) == date(2024, 2, 29)
    assert add_months(date(2023, 1, 31), 1) == date(2023, 2, 28)
    assert add_months(date(2024, 5, 31), 1) == date(2024, 6, 30)
    assert add_months(date(2023, 11, 30), 3) == date(2024, 2, 29)


def test_leap_day():
    assert add_months(date(2024, 2, 29), 12) == date(2025, 2, 28)
    assert add_months(date(2024, 2, 29), 48) == date(2028, 2, 29)
    assert add_months(date(2024, 2, 29), 1) == date(2024, 3, 29)


def test_non_integer_months_raise_type_error():
    for months in (1.0, "1", True, None):
        with pytest.raises(TypeError):
            add_months(date(2024, 1, 1), months)


def test_out_of_range_raises_overflow_error():
    with pytest.raises(OverflowError):
        add_months(date(9999, 12, 1), 1)
    with pytest.raises(OverflowError):
        add_months(date(1, 1, 1), -1)
    assert add_months(date(9999, 11, 30), 1) == date(9999, 12, 30)
    assert add_months(date(1, 2, 28), -1) == date(1, 1, 28)
