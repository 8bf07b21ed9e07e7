import os
import pickle
from decimal import Decimal

import pytest

from .errors import InvalidAllocationError
from .money import Money

CASES = [
    (Money("100.00", "USD"), [1, 1, 1]),
    (Money("1000", "JPY"), [1, 2]),
    (Money("-10.00", "EUR"), [3, 0, 7, 1]),
    (Money("0.07", "USD"), [2, 2, 2, 2, 2]),
    (Money("1.000", "KWD"), [Decimal("0.7"), Decimal("0.2"), Decimal("0.1")]),
    (Money("12.34", "GBP"), [5]),
]


def _expected(name):
    with open(os.path.join(os.environ["REPOEXEC_EXPECTED"], name), "rb") as f:
        return pickle.load(f)


def test_allocations_match_expected():
    assert [amount.allocate(ratios) for amount, ratios in CASES] == _expected("allocations.pkl")


def test_even_split():
    assert Money("10.00", "USD").allocate([1, 1]) == [Money("5.00", "USD"), Money("5.00", "USD")]


def test_leftover_units_go_to_the_first_shares():
    shares = Money("0.05", "USD").allocate([1, 1, 1])
    assert shares == [Money("0.02", "USD"), Money("0.02", "USD"), Money("0.01", "USD")]
    shares = Money("100.00", "USD").allocate([70, 20, 10, 0])
    assert shares == [Money("70.00", "USD"), Money("20.00", "USD"), Money("10.00", "USD"), Money("0.00", "USD")]


def test_zero_ratios_get_no_leftover():
    shares = Money("0.05", "USD").allocate([0, 1, 1])
    assert shares == [Money("0.00", "USD"), Money("0.03", "USD"), Money("0.02", "USD")]


def test_negative_amounts():
    shares = Money("-0.05", "USD").allocate([1, 1, 1])
    assert shares == [Money("-0.02", "USD"), Money("-0.02", "USD"), Money("-0.01", "USD")]


def test_shares_always_add_up_to_the_amount():
    for amount in (Money("99.99", "USD"), Money("-0.01", "USD"), Money("7", "JPY"), Money("0.00", "EUR")):
        for ratios in ([1, 1, 1], [3, 7], [0.5, 0.25, 0.25], [1, 0, 0, 2], [13]):
            shares = amount.allocate(ratios)
            assert len(shares) == len(ratios)
            assert all(share.currency == amount.currency for share in shares)
            assert sum(share.minor_units() for share in shares) == amount.minor_units()


def test_any_iterable_of_ratios():
    assert Money("1.00", "USD").allocate(iter([1, 3])) == [Money("0.25", "USD"), Money("0.75", "USD")]
    assert Money("1.00", "USD").allocate((Decimal("0.7"), Decimal("0.3"))) == [Money("0.70", "USD"), Money("0.30", "USD")]


def test_invalid_ratios_raise():
    amount = Money("10.00", "USD")
    for ratios in ([], [1, -1], [0, 0], (0,)):
        with pytest.raises(InvalidAllocationError):
            amount.allocate(ratios)
    with pytest.raises(ValueError):
        amount.allocate([])
