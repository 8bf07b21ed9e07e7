"""Calendar helpers for accounting periods."""

import calendar
from dataclasses import dataclass
from datetime import MAXYEAR, MINYEAR, date, timedelta


@dataclass(frozen=True)
class Period:
    """The days from ``start`` to ``end``, both included."""

    start: date
    end: date

    def __contains__(self, day):
        return self.start <= day <= self.end

    def days(self):
        """Return the number of days in the period."""
        return (self.end - self.start).days + 1


def days_in_month(year, month):
    """Return the number of days in the given month of the given year."""
    return calendar.monthrange(year, month)[1]


def month_key(day):
    """Return the ``"YYYY-MM"`` key of the month that contains day."""
    return f"{day.year:04d}-{day.month:02d}"


def add_months(day, months):
    """Return the date ``months`` calendar months after day (before it when negative).

    The day of the month is kept when the target month has it, and is clamped
    to the target month's last day otherwise: 31 January 2024 plus one month
    is 29 February 2024.

    Raises TypeError if months is not an int (bool is refused) and
    OverflowError if the result falls outside the years MINYEAR to MAXYEAR.
    """
    if isinstance(months, bool) or not isinstance(months, int):
        raise TypeError(f"months must be an int, got {type(months).__name__!r}")
    year, month_index = divmod(day.year * 12 + day.month - 1 + months, 12)
    if not MINYEAR <= year <= MAXYEAR:
        raise OverflowError(f"year {year} is out of range")
    month = month_index + 1
    return day.replace(year=year, month=month, day=min(day.day, days_in_month(year, month)))


def month_periods(start, end):
    """Split the days from start to end, both included, into calendar months.

    Returns a list of Period in chronological order, one per calendar month
    touched: the first period begins at start and the last one ends at end;
    every other period covers its whole month. When start and end fall in
    the same month the list holds a single Period(start, end).

    Raises ValueError if end is before start.
    """
    if end < start:
        raise ValueError(f"end {end} is before start {start}")
    periods = []
    current = start
    while current <= end:
        month_end = current.replace(day=days_in_month(current.year, current.month))
        periods.append(Period(current, min(month_end, end)))
        current = month_end + timedelta(days=1)
    return periods
