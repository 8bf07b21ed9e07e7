import os
import pickle
from datetime import date

import pytest

from .errors import CurrencyMismatchError
from .money import Money
from .report import Transaction, running_balance


def _eur(amount):
    return Money(amount, "EUR")


TXNS = [
    Transaction(date(2024, 3, 4), "Groceries", _eur("-54.20"), "food"),
    Transaction(date(2024, 3, 1), "Salary", _eur("2800.00"), "salary"),
    Transaction(date(2024, 3, 4), "Pharmacy", _eur("-12.75"), "health"),
    Transaction(date(2024, 3, 2), "Rent", _eur("-950.00"), "housing"),
    Transaction(date(2024, 3, 15), "Electricity", _eur("-61.33"), "utilities"),
    Transaction(date(2024, 3, 4), "Refund", _eur("12.75"), "health"),
]


def _expected(name):
    with open(os.path.join(os.environ["REPOEXEC_EXPECTED"], name), "rb") as f:
        return pickle.load(f)


def test_rows_match_expected():
    assert running_balance(TXNS) == _expected("running_balance.pkl")


def test_opening_balance_matches_expected():
    assert running_balance(TXNS, opening=_eur("-100.00")) == _expected("running_balance_opening.pkl")


def test_same_day_keeps_the_given_order():
    rows = running_balance(TXNS)
    assert [row[1] for row in rows] == ["Salary", "Rent", "Groceries", "Pharmacy", "Refund", "Electricity"]
    assert rows[2] == (date(2024, 3, 4), "Groceries", _eur("-54.20"), _eur("1795.80"))
    assert rows[-1][3] == _eur("1734.47")
    assert [txn.description for txn in TXNS][:2] == ["Groceries", "Salary"]


def test_default_opening_uses_the_first_transaction_currency():
    txns = [
        Transaction(date(2024, 1, 2), "Tea", Money(-450, "JPY")),
        Transaction(date(2024, 1, 1), "Pocket money", Money(5000, "JPY")),
    ]
    assert running_balance(txns) == [
        (date(2024, 1, 1), "Pocket money", Money(5000, "JPY"), Money(5000, "JPY")),
        (date(2024, 1, 2), "Tea", Money(-450, "JPY"), Money(4550, "JPY")),
    ]
    assert running_balance(txns[:1]) == [(date(2024, 1, 2), "Tea", Money(-450, "JPY"), Money(-450, "JPY"))]


def test_no_transactions():
    assert running_balance([]) == []
    assert running_balance([], opening=_eur("10.00")) == []


def test_currency_mismatch_raises():
    with pytest.raises(CurrencyMismatchError):
        running_balance(TXNS, opening=Money("0.00", "USD"))
    with pytest.raises(CurrencyMismatchError):
        running_balance(TXNS + [Transaction(date(2024, 3, 20), "Book", Money("-9.99", "GBP"))])
