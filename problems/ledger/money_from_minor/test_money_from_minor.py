from decimal import Decimal

import pytest

from .currency import get_currency
from .errors import UnknownCurrencyError
from .money import Money


def test_cents_to_dollars():
    assert Money.from_minor(1250, "USD") == Money("12.50", "USD")
    assert Money.from_minor(-5, "USD") == Money("-0.05", "USD")
    assert Money.from_minor(0, "USD") == Money("0", "USD")


def test_currency_exponent_is_used():
    assert Money.from_minor(500, "JPY") == Money(500, "JPY")
    assert Money.from_minor(1234, "KWD") == Money("1.234", "KWD")
    assert Money.from_minor(1234, "KWD").amount == Decimal("1.234")


def test_string_units():
    assert Money.from_minor("-1250", "USD") == Money("-12.50", "USD")
    assert Money.from_minor(" +42 ", "EUR") == Money("0.42", "EUR")
    assert Money.from_minor("007", "USD") == Money("0.07", "USD")


def test_currency_object_or_code_in_any_case():
    assert Money.from_minor(99, get_currency("GBP")) == Money("0.99", "GBP")
    assert Money.from_minor(99, "gbp").currency == get_currency("GBP")


def test_large_amounts_round_trip():
    units = 123456789012345678
    assert Money.from_minor(units, "USD").minor_units() == units
    assert Money.from_minor(-units, "KWD").minor_units() == -units


def test_returns_an_instance_of_the_class_it_is_called_on():
    class Cash(Money):
        pass

    cash = Cash.from_minor(1, "USD")
    assert type(cash) is Cash
    assert cash == Money("0.01", "USD")


def test_wrong_types_raise_type_error():
    for units in (12.5, True, None, Decimal("12"), [1]):
        with pytest.raises(TypeError):
            Money.from_minor(units, "USD")


def test_malformed_strings_raise_value_error():
    for units in ("12.5", "abc", "", "1 000", "--1", "\u0663"):
        with pytest.raises(ValueError):
            Money.from_minor(units, "USD")


def test_unknown_currency_raises():
    with pytest.raises(UnknownCurrencyError):
        Money.from_minor(1, "XYZ")
