import os
import pickle
from datetime import date, timedelta

import pytest

from .dates import Period, month_periods


def _expected(name):
    with open(os.path.join(os.environ["REPOEXEC_EXPECTED"], name), "rb") as f:
        return pickle.load(f)


def test_range_across_a_year_end_matches_expected():
    assert month_periods(date(2023, 11, 15), date(2024, 3, 10)) == _expected("month_periods.pkl")


def test_same_month_and_single_day():
    assert month_periods(date(2024, 5, 3), date(2024, 5, 20)) == [Period(date(2024, 5, 3), date(2024, 5, 20))]
    assert month_periods(date(2024, 5, 3), date(2024, 5, 3)) == [Period(date(2024, 5, 3), date(2024, 5, 3))]


def test_whole_months():
    assert month_periods(date(2024, 1, 1), date(2024, 3, 31)) == [
        Period(date(2024, 1, 1), date(2024, 1, 31)),
        Period(date(2024, 2, 1), date(2024, 2, 29)),
        Period(date(2024, 3, 1), date(2024, 3, 31)),
    ]


def test_two_single_days_across_a_year_end():
    assert month_periods(date(2023, 12, 31), date(2024, 1, 1)) == [
        Period(date(2023, 12, 31), date(2023, 12, 31)),
        Period(date(2024, 1, 1), date(2024, 1, 1)),
    ]


def test_periods_cover_the_range_without_gaps():
    start, end = date(2019, 6, 7), date(2022, 2, 2)
    periods = month_periods(start, end)
    assert len(periods) == 33
    assert periods[0].start == start and periods[-1].end == end
    for before, after in zip(periods, periods[1:]):
        assert after.start == before.end + timedelta(days=1)
        assert after.start.day == 1
    assert all((p.start.year, p.start.month) == (p.end.year, p.end.month) for p in periods)
    assert sum(p.days() for p in periods) == (end - start).days + 1


def test_end_before_start_raises_value_error():
    with pytest.raises(ValueError):
        month_periods(date(2024, 3, 2), date(2024, 3, 1))
