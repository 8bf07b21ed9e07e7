from decimal import Decimal

import pytest

from .errors import CurrencyMismatchError
from .money import Money


def test_adds_two_amounts():
    assert Money("1.10", "USD").add(Money("2.25", "USD")) == Money("3.35", "USD")
    assert Money("0.10", "EUR").add(Money("0.20", "EUR")) == Money("0.30", "EUR")


def test_adds_several_amounts():
    total = Money("10.00", "USD").add(Money("0.01", "USD"), Money("-2.50", "USD"), Money("100", "USD"))
    assert total == Money("107.51", "USD")


def test_without_others_returns_an_equal_amount():
    amount = Money("4.20", "GBP")
    result = amount.add()
    assert isinstance(result, Money)
    assert result == Money("4.20", "GBP")


def test_original_amounts_are_unchanged():
    left, right = Money("1.00", "USD"), Money("2.00", "USD")
    result = left.add(right)
    assert result == Money("3.00", "USD")
    assert left == Money("1.00", "USD") and right == Money("2.00", "USD")
    assert result is not left and result is not right


def test_currency_and_exponent_are_kept():
    yen = Money(100, "JPY").add(Money(-250, "JPY"))
    assert yen == Money(-150, "JPY")
    assert yen.currency.code == "JPY" and yen.amount == Decimal("-150")
    dinar = Money("1.005", "KWD").add(Money("0.996", "KWD"))
    assert dinar == Money("2.001", "KWD")
    assert str(dinar.amount) == "2.001"


def test_currency_mismatch_raises():
    with pytest.raises(CurrencyMismatchError):
        Money("1.00", "USD").add(Money("1.00", "EUR"))
    with pytest.raises(CurrencyMismatchError):
        Money("1.00", "USD").add(Money("1.00", "USD"), Money("1", "JPY"))


def test_plain_numbers_raise_type_error():
    amount = Money("1.00", "USD")
    for other in (5, Decimal("1"), "1.00", 1.5, None):
        with pytest.raises(TypeError):
            amount.add(other)
    with pytest.raises(TypeError):
        amount.add(Money("1.00", "USD"), 0)
