import os
import pickle
from datetime import date

import pytest

from .account import Account
from .errors import CurrencyMismatchError
from .money import Money
from .report import TrialBalance, TrialBalanceLine, trial_balance


def _usd(amount):
    return Money(amount, "USD")


def _transfer(day, debit, credit, amount, memo=""):
    debit.post(day, amount, memo)
    credit.post(day, "-" + amount, memo)


def _book():
    cash = Account("Cash", "USD")
    bank = Account("Bank", "USD")
    card = Account("Credit card", "USD", kind="liability")
    capital = Account("Capital", "USD", kind="equity")
    sales = Account("Sales", "USD", kind="income")
    rent = Account("Rent", "USD", kind="expense")
    supplies = Account("Supplies", "USD", kind="expense")
    _transfer(date(2024, 1, 1), bank, capital, "5000.00", "owner investment")
    _transfer(date(2024, 1, 3), cash, bank, "200.00", "withdrawal")
    _transfer(date(2024, 1, 5), rent, bank, "1200.00", "January rent")
    _transfer(date(2024, 1, 9), supplies, card, "310.45", "printer paper")
    _transfer(date(2024, 1, 15), bank, sales, "2750.00", "invoice 1")
    _transfer(date(2024, 1, 20), card, bank, "310.45", "card payment")
    _transfer(date(2024, 2, 2), cash, sales, "99.90", "cash sale")
    _transfer(date(2024, 2, 3), supplies, cash, "350.00", "toner")
    return [cash, bank, card, capital, sales, rent, supplies]


def _expected(name):
    with open(os.path.join(os.environ["REPOEXEC_EXPECTED"], name), "rb") as f:
        return pickle.load(f)


def test_trial_balance_matches_expected():
    assert trial_balance(_book(), date(2024, 2, 29)) == _expected("trial_balance.pkl")


def test_earlier_day_matches_expected():
    assert trial_balance(_book(), date(2024, 1, 10)) == _expected("trial_balance_jan10.pkl")


def test_lines_sorted_by_name_without_zero_balances():
    result = trial_balance(_book(), date(2024, 1, 31))
    assert isinstance(result, TrialBalance)
    assert [line.account for line in result.lines] == ["Bank", "Capital", "Cash", "Rent", "Sales", "Supplies"]
    assert result.as_of == date(2024, 1, 31)
    assert result.currency == "USD"


def test_columns_and_totals():
    result = trial_balance(_book(), date(2024, 1, 31))
    zero = _usd("0")
    assert result.lines[0] == TrialBalanceLine("Bank", "asset", _usd("6039.55"), zero)
    assert result.lines[1] == TrialBalanceLine("Capital", "equity", zero, _usd("5000.00"))
    assert result.total_debit == _usd("7750.00")
    assert result.total_credit == _usd("7750.00")
    assert result.is_balanced()


def test_negative_asset_goes_to_the_credit_column():
    cash = Account("Cash", "USD")
    cash.post(date(2024, 1, 1), "-20.00")
    loan = Account("Loan", "USD", kind="liability")
    loan.post(date(2024, 1, 1), "35.00")
    fees = Account("Fees", "USD", kind="expense")
    fees.post(date(2024, 1, 1), "0.25")
    result = trial_balance([loan, cash, fees], date(2024, 1, 1))
    assert result.lines == [
        TrialBalanceLine("Cash", "asset", _usd("0"), _usd("20.00")),
        TrialBalanceLine("Fees", "expense", _usd("0.25"), _usd("0")),
        TrialBalanceLine("Loan", "liability", _usd("35.00"), _usd("0")),
    ]
    assert (result.total_debit, result.total_credit) == (_usd("35.25"), _usd("20.00"))
    assert not result.is_balanced()


def test_only_zero_balances_give_no_lines():
    result = trial_balance([Account("Empty", "JPY")], date(2024, 1, 1))
    assert result == TrialBalance(date(2024, 1, 1), "JPY", [], Money(0, "JPY"), Money(0, "JPY"))


def test_bad_accounts_raise():
    with pytest.raises(ValueError):
        trial_balance([], date(2024, 1, 1))
    with pytest.raises(CurrencyMismatchError):
        trial_balance([Account("Cash", "USD"), Account("Kasse", "EUR")], date(2024, 1, 1))
    with pytest.raises(TypeError):
        trial_balance([Account("Cash", "USD"), "Bank"], date(2024, 1, 1))
