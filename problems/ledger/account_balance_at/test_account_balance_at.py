from datetime import date

from .account import Account
from .money import Money


def _cash():
    cash = Account("Cash", "USD")
    cash.post(date(2024, 1, 5), "100.00", "deposit")
    cash.post(date(2024, 1, 20), "-30.25", "rent")
    cash.post(date(2024, 1, 10), "-4.50", "coffee")
    cash.post(date(2024, 2, 1), "15.00", "refund")
    return cash


def test_empty_account_has_a_zero_balance():
    assert Account("Cash", "EUR").balance_at() == Money.zero("EUR")
    assert Account("Cash", "EUR").balance_at(date(2024, 1, 1)) == Money.zero("EUR")


def test_all_postings_without_a_day():
    assert _cash().balance_at() == Money("80.25", "USD")


def test_cutoff_day_is_included():
    cash = _cash()
    assert cash.balance_at(date(2024, 1, 5)) == Money("100.00", "USD")
    assert cash.balance_at(date(2024, 1, 10)) == Money("95.50", "USD")
    assert cash.balance_at(date(2024, 1, 19)) == Money("95.50", "USD")
    assert cash.balance_at(date(2024, 1, 31)) == Money("65.25", "USD")
    assert cash.balance_at(date(2030, 1, 1)) == Money("80.25", "USD")


def test_before_the_first_posting_is_zero_in_the_account_currency():
    balance = _cash().balance_at(date(2024, 1, 4))
    assert balance == Money("0.00", "USD")
    assert balance.currency.code == "USD"


def test_credit_kinds_report_the_opposite_sign():
    for kind in ("liability", "equity", "income"):
        account = Account("Other", "USD", kind=kind)
        account.post(date(2024, 1, 1), "-500.00")
        account.post(date(2024, 1, 2), "120.00")
        assert account.balance_at() == Money("380.00", "USD")
        assert account.balance_at(date(2024, 1, 1)) == Money("500.00", "USD")


def test_debit_kinds_keep_the_sign():
    for kind in ("asset", "expense"):
        account = Account("Other", "JPY", kind=kind)
        account.post(date(2024, 1, 1), -500)
        account.post(date(2024, 1, 2), 120)
        assert account.balance_at() == Money(-380, "JPY")
        assert account.balance_at(date(2024, 1, 1)) == Money(-500, "JPY")


def test_postings_are_left_untouched():
    cash = _cash()
    before = list(cash.postings)
    cash.balance_at(date(2024, 1, 15))
    cash.balance_at()
    assert cash.postings == before
