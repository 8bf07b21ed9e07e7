"""Currencies and the registry that resolves their ISO codes."""

from dataclasses import dataclass
from decimal import Decimal

from .errors import UnknownCurrencyError


@dataclass(frozen=True)
class Currency:
    """An ISO 4217 currency; ``exponent`` is the number of decimal places of its minor unit."""

    code: str
    name: str
    exponent: int = 2

    def quantum(self):
        """Return the smallest amount of the currency, e.g. ``Decimal("0.01")`` for two places."""
        return Decimal(1).scaleb(-self.exponent)

    def __str__(self):
        return self.code


_REGISTRY = {}


def register(currency):
    """Add currency to the registry, replacing any currency with the same code, and return it."""
    _REGISTRY[currency.code] = currency
    return currency


def get_currency(code):
    """Return the registered currency for an ISO code, ignoring case and surrounding spaces.

    A Currency instance is returned as it is. Raises UnknownCurrencyError for unknown codes.
    """
    if isinstance(code, Currency):
        return code
    try:
        return _REGISTRY[str(code).strip().upper()]
    except KeyError:
        raise UnknownCurrencyError(f"unknown currency: {code!r}") from None


USD = register(Currency("USD", "US Dollar"))
EUR = register(Currency("EUR", "Euro"))
GBP = register(Currency("GBP", "Pound Sterling"))
JPY = register(Currency("JPY", "Yen", exponent=0))
KWD = register(Currency("KWD", "Kuwaiti Dinar", exponent=3))
