import os
import pickle
from datetime import date

import pytest

from .errors import CurrencyMismatchError
from .money import Money
from .report import Transaction, monthly_summary


def _usd(amount):
    return Money(amount, "USD")


TXNS = [
    Transaction(date(2024, 1, 3), "Salary", _usd("3200.00"), "salary"),
    Transaction(date(2024, 1, 5), "Rent", _usd("-1200.00"), "housing"),
    Transaction(date(2023, 12, 24), "Gift", _usd("-85.40"), "gifts"),
    Transaction(date(2024, 2, 14), "Dinner", _usd("-64.90"), "food"),
    Transaction(date(2024, 1, 28), "Groceries", _usd("-143.27"), "food"),
    Transaction(date(2024, 4, 2), "Refund", _usd("19.99"), "shopping"),
    Transaction(date(2024, 2, 1), "Salary", _usd("3200.00"), "salary"),
    Transaction(date(2024, 2, 29), "Interest", _usd("0.42"), "interest"),
    Transaction(date(2023, 12, 1), "Salary", _usd("3150.00"), "salary"),
    Transaction(date(2024, 4, 30), "Rent", _usd("-1200.00"), "housing"),
]

EUR_TXNS = [
    Transaction(date(2024, 3, 9), "Train", Money("-42.10", "EUR"), "travel"),
    Transaction(date(2024, 3, 9), "Hotel", Money("-310.00", "EUR"), "travel"),
    Transaction(date(2024, 5, 15), "Invoice 17", Money("1500.00", "EUR"), "consulting"),
]


def _expected(name):
    with open(os.path.join(os.environ["REPOEXEC_EXPECTED"], name), "rb") as f:
        return pickle.load(f)


def test_summary_matches_expected():
    assert monthly_summary(TXNS) == _expected("monthly_summary.pkl")


def test_eur_summary_matches_expected():
    assert monthly_summary(EUR_TXNS, currency="eur") == _expected("monthly_summary_eur.pkl")


def test_months_are_in_chronological_order():
    assert list(monthly_summary(TXNS)) == ["2023-12", "2024-01", "2024-02", "2024-04"]


def test_single_month_in_detail():
    summary = monthly_summary(TXNS)["2024-01"]
    assert summary == {
        "income": _usd("3200.00"),
        "expenses": _usd("1343.27"),
        "net": _usd("1856.73"),
        "count": 3,
    }


def test_month_without_income_or_expenses_has_zero_money():
    summary = monthly_summary([Transaction(date(2024, 6, 1), "Bonus", Money("10", "GBP"))], currency="GBP")
    assert summary == {
        "2024-06": {
            "income": Money("10.00", "GBP"),
            "expenses": Money("0.00", "GBP"),
            "net": Money("10.00", "GBP"),
            "count": 1,
        }
    }
    only_expense = monthly_summary([Transaction(date(2024, 6, 1), "Fee", _usd("-2.50"))])["2024-06"]
    assert only_expense["income"] == _usd("0") and only_expense["expenses"] == _usd("2.50")


def test_no_transactions():
    assert monthly_summary([]) == {}


def test_other_currency_raises():
    with pytest.raises(CurrencyMismatchError):
        monthly_summary(EUR_TXNS)
    with pytest.raises(CurrencyMismatchError):
        monthly_summary(TXNS + EUR_TXNS[:1], currency="USD")
