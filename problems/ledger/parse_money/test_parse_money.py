import pytest

from .currency import get_currency
from .errors import UnknownCurrencyError
from .money import Money, parse_money


def test_code_before_or_after_in_any_case():
    assert parse_money("USD 1,234.50") == Money("1234.50", "USD")
    assert parse_money("12.5 eur") == Money("12.50", "EUR")
    assert parse_money("  gbp 3  ") == Money("3.00", "GBP")


def test_signs():
    assert parse_money("-7 JPY") == Money(-7, "JPY")
    assert parse_money("+3 usd") == Money("3.00", "USD")
    assert parse_money("USD -0.99") == Money("-0.99", "USD")


def test_parentheses_mean_negative():
    assert parse_money("(5.00) USD") == Money("-5.00", "USD")
    assert parse_money("GBP (1,000)") == Money("-1000.00", "GBP")


def test_thousands_separators_and_exponents():
    assert parse_money("USD 1,000,000.25") == Money("1000000.25", "USD")
    assert parse_money("KWD 1.234") == Money("1.234", "KWD")
    assert parse_money("1,000 JPY") == Money(1000, "JPY")


def test_default_currency():
    assert parse_money("19.99", default_currency="USD") == Money("19.99", "USD")
    assert parse_money("19.99", default_currency=get_currency("gbp")) == Money("19.99", "GBP")
    assert parse_money("EUR 1", default_currency="USD") == Money("1.00", "EUR")


def test_malformed_text_raises_value_error():
    bad = [
        "", "USD", "USD12.50", "1,23.00 USD", "1234,567 USD", "12.34.5 USD", "USD 5 EUR",
        "19.99", "(5.00 USD", "5.00) USD", "(-5.00) USD", "JPY 10.5", "USD 1.234", "USD .50",
    ]
    for text in bad:
        with pytest.raises(ValueError):
            parse_money(text)


def test_unknown_code_raises_unknown_currency_error():
    with pytest.raises(UnknownCurrencyError):
        parse_money("XYZ 10")
    with pytest.raises(UnknownCurrencyError):
        parse_money("10", default_currency="ABC")


def test_non_string_raises_type_error():
    for value in (12.5, None, b"USD 1"):
        with pytest.raises(TypeError):
            parse_money(value)
