"""Amounts of money in a given currency."""

import re
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

from .currency import get_currency
from .errors import CurrencyMismatchError, InvalidAllocationError

# A whole number of minor units, with an optional sign.
MINOR_UNITS_RE = re.compile(r"[+-]?[0-9]+")

# "USD 1,234.50", "(12.00) eur", "-7 JPY": an optional code, the amount, an optional code.
MONEY_TEXT_RE = re.compile(
    r"(?:(?P<prefix>[A-Za-z]{3})\s+)?"
    r"(?P<open>\()?(?P<sign>[+-])?"
    r"(?P<whole>[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.(?P<fraction>[0-9]+))?"
    r"(?P<close>\))?"
    r"(?:\s+(?P<suffix>[A-Za-z]{3}))?"
)


class Money:
    """An amount of a currency, rounded half-even to the currency's minor unit.

    Money objects are treated as immutable: every operation returns a new one.
    """

    def __init__(self, amount, currency):
        self.currency = get_currency(currency)
        try:
            value = Decimal(str(amount)) if isinstance(amount, float) else Decimal(amount)
        except (InvalidOperation, TypeError, ValueError):
            raise ValueError(f"invalid amount: {amount!r}") from None
        if not value.is_finite():
            raise ValueError(f"invalid amount: {amount!r}")
        self.amount = value.quantize(self.currency.quantum(), rounding=ROUND_HALF_EVEN)

    @classmethod
    def zero(cls, currency):
        """Return a zero amount of currency."""
        return cls(0, currency)

    @classmethod
    def from_minor(cls, units, currency):
        """Build an amount from a whole number of minor units (cents for USD, yen for JPY).

        ``currency`` is a Currency or a registered code. ``units`` is an int
        or a string of ASCII digits with an optional sign, possibly surrounded
        by whitespace: ``Money.from_minor("-1250", "USD")`` is -12.50 USD.

        Raises TypeError if units is neither an int nor a str (bool is
        refused), ValueError if it is a malformed string, and
        UnknownCurrencyError for an unknown currency code.
        """
        currency = get_currency(currency)
        if isinstance(units, str):
            text = units.strip()
            if MINOR_UNITS_RE.fullmatch(text) is None:
                raise ValueError(f"invalid minor units: {units!r}")
            units = int(text)
        elif isinstance(units, bool) or not isinstance(units, int):
            raise TypeError(f"minor units must be an int, got {type(units).__name__!r}")
        return cls(Decimal(units).scaleb(-currency.exponent), currency)

    def minor_units(self):
        """Return the amount as a whole number of minor units."""
        return int(self.amount.scaleb(self.currency.exponent))

    def _check_currency(self, other):
        """Raise CurrencyMismatchError unless other is in the same currency."""
        if other.currency != self.currency:
            raise CurrencyMismatchError(self.currency.code, other.currency.code)

    def add(self, *others):
        """Return the sum of this amount and every amount in ``others``.

        Each of ``others`` must be a Money in this amount's currency. With no
        others, an amount equal to this one is returned. This amount is left
        unchanged.

        Raises TypeError if one of others is not a Money (plain numbers are
        refused so that no currency is ever guessed) and CurrencyMismatchError
        if one is in another currency.
        """
        total = self.amount
        for other in others:
            if not isinstance(other, Money):
                raise TypeError(f"can only add Money, not {type(other).__name__!r}")
            self._check_currency(other)
            total += other.amount
        return Money(total, self.currency)

    def subtract(self, other):
        """Return this amount minus other, which must be in the same currency."""
        return self.add(other.negate())

    def negate(self):
        """Return the opposite amount."""
        return Money(-self.amount, self.currency)

    def multiply(self, factor):
        """Return the amount times factor (an int, Decimal, float or numeric string), rounded half-even."""
        if isinstance(factor, float):
            factor = str(factor)
        return Money(self.amount * Decimal(factor), self.currency)

    def allocate(self, ratios):
        """Split the amount in proportion to ``ratios`` without losing a minor unit.

        Works on the whole number of minor units: each share first gets its
        proportional number of units rounded down, then the units left over
        are handed out one at a time to the shares whose ratio is positive,
        in order, starting with the first. The shares therefore always add up to
        the original amount. A negative amount is split like its absolute
        value, and every share is then negated.

        Returns a list with one Money per ratio, in the currency of the amount.
        Raises InvalidAllocationError if ratios is empty, contains a negative
        ratio, or adds up to zero.
        """
        ratios = list(ratios)
        if not ratios:
            raise InvalidAllocationError("at least one ratio is required")
        if any(ratio < 0 for ratio in ratios):
            raise InvalidAllocationError(f"ratios must not be negative: {ratios}")
        total_ratio = sum(ratios)
        if total_ratio == 0:
            raise InvalidAllocationError("ratios must not add up to zero")
        units = self.minor_units()
        sign = -1 if units < 0 else 1
        units = abs(units)
        shares = [int(units * ratio // total_ratio) for ratio in ratios]
        remainder = units - sum(shares)
        receivers = [index for index, ratio in enumerate(ratios) if ratio > 0]
        for index in receivers[:remainder]:
            shares[index] += 1
        return [Money.from_minor(sign * share, self.currency) for share in shares]

    def __eq__(self, other):
        if not isinstance(other, Money):
            return NotImplemented
        return self.currency == other.currency and self.amount == other.amount

    def __hash__(self):
        return hash((self.amount, self.currency.code))

    def __repr__(self):
        return f"Money({str(self.amount)!r}, {self.currency.code!r})"

    def __str__(self):
        return f"{self.amount} {self.currency.code}"


def parse_money(text, default_currency=None):
    """Parse text such as ``"USD 1,234.50"`` or ``"-12.5 eur"`` into Money.

    The text, stripped of surrounding whitespace, must fully match
    MONEY_TEXT_RE. The three-letter currency code may stand before or after
    the amount (not both), in any case; without a code ``default_currency``
    is used. Commas may group the whole part by thousands. An amount in
    parentheses is negative, accounting style: ``"(5.00) USD"``. The fraction
    may not have more digits than the currency's exponent.

    Raises TypeError if text is not a str; ValueError if it does not match,
    has two codes, unbalanced parentheses, a sign inside parentheses, too
    many decimal places, or no currency at all; and UnknownCurrencyError
    for an unregistered code.
    """
    if not isinstance(text, str):
        raise TypeError(f"expected a str, got {type(text).__name__!r}")
    match = MONEY_TEXT_RE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not an amount of money: {text!r}")
    prefix, suffix = match.group("prefix"), match.group("suffix")
    if prefix and suffix:
        raise ValueError(f"two currency codes in {text!r}")
    code = prefix or suffix or default_currency
    if code is None:
        raise ValueError(f"no currency in {text!r} and no default currency")
    currency = get_currency(code)
    in_parentheses = match.group("open") is not None
    if in_parentheses != (match.group("close") is not None):
        raise ValueError(f"unbalanced parentheses in {text!r}")
    if in_parentheses and match.group("sign"):
        raise ValueError(f"a sign inside parentheses in {text!r}")
    fraction = match.group("fraction") or ""
    if len(fraction) > currency.exponent:
        raise ValueError(f"too many decimal places for {currency.code} in {text!r}")
    amount = Decimal(match.group("whole").replace(",", "") + "." + (fraction or "0"))
    if in_parentheses or match.group("sign") == "-":
        amount = -amount
    return Money(amount, currency)
