from datetime import date
from decimal import Decimal

import pytest

from .account import Account, Posting
from .errors import CurrencyMismatchError, PostingError
from .money import Money


def test_returns_and_records_the_posting():
    cash = Account("Cash", "USD")
    posting = cash.post(date(2024, 1, 5), Money("100.00", "USD"), "opening deposit")
    assert posting == Posting(date(2024, 1, 5), Money("100.00", "USD"), "opening deposit")
    assert cash.postings == [posting]
    assert cash.post(date(2024, 1, 6), Money("-5.00", "USD")).memo == ""


def test_numbers_are_taken_in_the_account_currency():
    cash = Account("Cash", "USD")
    assert cash.post(date(2024, 1, 1), 100).amount == Money("100.00", "USD")
    assert cash.post(date(2024, 1, 1), "12.345").amount == Money("12.34", "USD")
    assert cash.post(date(2024, 1, 1), Decimal("-0.125")).amount == Money("-0.12", "USD")
    yen = Account("Petty cash", "JPY")
    assert yen.post(date(2024, 1, 1), 1234.4).amount == Money(1234, "JPY")


def test_postings_stay_in_date_order():
    cash = Account("Cash", "USD")
    cash.post(date(2024, 1, 10), 1, "b")
    cash.post(date(2024, 1, 5), 2, "a")
    cash.post(date(2024, 1, 10), 3, "c")
    cash.post(date(2024, 1, 20), 4, "e")
    cash.post(date(2024, 1, 10), 5, "d")
    cash.post(date(2023, 12, 31), 6, "first")
    assert [p.memo for p in cash.postings] == ["first", "a", "b", "c", "d", "e"]


def test_other_currency_raises_and_records_nothing():
    cash = Account("Cash", "USD")
    with pytest.raises(CurrencyMismatchError):
        cash.post(date(2024, 1, 1), Money("1.00", "EUR"))
    assert cash.postings == []


def test_zero_amounts_raise_posting_error():
    cash = Account("Cash", "USD")
    for amount in (0, "0.001", Money.zero("USD"), Money("-0.004", "USD")):
        with pytest.raises(PostingError):
            cash.post(date(2024, 1, 1), amount)
    assert cash.postings == []


def test_closed_days_raise_posting_error():
    cash = Account("Cash", "USD")
    cash.post(date(2024, 1, 15), 10)
    cash.close_through(date(2024, 1, 31))
    with pytest.raises(PostingError):
        cash.post(date(2024, 1, 31), 5)
    with pytest.raises(PostingError):
        cash.post(date(2023, 6, 1), 5)
    cash.post(date(2024, 2, 1), 7)
    assert [p.amount for p in cash.postings] == [Money(10, "USD"), Money(7, "USD")]


def test_money_in_the_account_currency_is_kept():
    dinars = Account("Deposit", "kwd", kind="liability")
    amount = Money("-1.250", "KWD")
    posting = dinars.post(date(2024, 4, 1), amount, "received")
    assert posting.amount == amount
    assert posting.day == date(2024, 4, 1)
    assert dinars.postings[-1] is posting
