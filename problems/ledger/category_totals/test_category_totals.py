import os
import pickle
from datetime import date

import pytest

from .errors import CurrencyMismatchError
from .money import Money
from .report import Transaction, category_totals


def _usd(amount):
    return Money(amount, "USD")


TXNS = [
    Transaction(date(2024, 1, 3), "Salary", _usd("3200.00"), "salary"),
    Transaction(date(2024, 1, 5), "Rent", _usd("-1200.00"), "housing"),
    Transaction(date(2024, 1, 7), "Bakery", _usd("-6.80"), "food"),
    Transaction(date(2024, 1, 9), "Cinema", _usd("-24.00"), "leisure"),
    Transaction(date(2024, 1, 12), "Groceries", _usd("-143.27"), "food"),
    Transaction(date(2024, 1, 15), "Concert", _usd("-89.00"), "leisure"),
    Transaction(date(2024, 1, 18), "Market", _usd("-62.93"), "food"),
    Transaction(date(2024, 1, 20), "Book", _usd("-18.50")),
    Transaction(date(2024, 1, 22), "Returned shoes", _usd("79.99"), "shopping"),
    Transaction(date(2024, 1, 22), "Shoes", _usd("-79.99"), "shopping"),
]


def _expected(name):
    with open(os.path.join(os.environ["REPOEXEC_EXPECTED"], name), "rb") as f:
        return pickle.load(f)


def test_totals_match_expected():
    assert category_totals(TXNS) == _expected("category_totals.pkl")


def test_food_total_and_count():
    food = [row for row in category_totals(TXNS) if row[0] == "food"]
    assert food == [("food", _usd("-213.00"), 3)]


def test_sorted_by_absolute_total_then_name():
    txns = [
        Transaction(date(2024, 1, 1), "a", _usd("-10.00"), "beta"),
        Transaction(date(2024, 1, 1), "b", _usd("10.00"), "alpha"),
        Transaction(date(2024, 1, 1), "c", _usd("-9.99"), "aardvark"),
        Transaction(date(2024, 1, 1), "d", _usd("25.00"), "zeta"),
        Transaction(date(2024, 1, 1), "e", _usd("-5.00"), "zeta"),
    ]
    assert category_totals(txns) == [
        ("zeta", _usd("20.00"), 2),
        ("alpha", _usd("10.00"), 1),
        ("beta", _usd("-10.00"), 1),
        ("aardvark", _usd("-9.99"), 1),
    ]


def test_other_currency():
    txns = [
        Transaction(date(2024, 1, 1), "Ramen", Money(1200, "JPY"), "food"),
        Transaction(date(2024, 1, 2), "Sushi", Money(3400, "JPY"), "food"),
    ]
    assert category_totals(txns, currency="jpy") == [("food", Money(4600, "JPY"), 2)]


def test_no_transactions():
    assert category_totals([]) == []


def test_currency_mismatch_raises():
    with pytest.raises(CurrencyMismatchError):
        category_totals(TXNS, currency="EUR")
    with pytest.raises(CurrencyMismatchError):
        category_totals([Transaction(date(2024, 1, 1), "x", Money(1, "GBP"))])
