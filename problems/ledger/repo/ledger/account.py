"""Accounts that record dated postings."""

from dataclasses import dataclass
from datetime import date

from .currency import get_currency
from .errors import CurrencyMismatchError, PostingError
from .money import Money

ACCOUNT_KINDS = ("asset", "liability", "equity", "income", "expense")

# Kinds whose normal balance is a credit: their postings are mostly negative.
CREDIT_KINDS = ("liability", "equity", "income")


@dataclass(frozen=True)
class Posting:
    """An amount recorded on an account at a day; positive amounts are debits."""

    day: date
    amount: Money
    memo: str = ""


class Account:
    """A named account of one kind holding postings in a single currency.

    ``postings`` is kept in date order, postings of the same day in the order
    they were made. An account can be closed through a day, after which no
    posting dated on or before that day is accepted.
    """

    def __init__(self, name, currency, kind="asset"):
        if kind not in ACCOUNT_KINDS:
            raise ValueError(f"unknown account kind: {kind!r}")
        self.name = name
        self.currency = get_currency(currency)
        self.kind = kind
        self.postings = []
        self.closed_through = None

    def __repr__(self):
        return f"Account({self.name!r}, {self.currency.code!r}, kind={self.kind!r})"

    def close_through(self, day):
        """Refuse, from now on, postings dated on or before day."""
        self.closed_through = day

    def post(self, day, amount, memo=""):
        """Record amount on the account at day and return the new Posting.

        ``amount`` is a Money in the account's currency, or a number (int,
        Decimal, float or numeric string) taken as an amount of the account's
        currency. The posting is inserted after every posting dated on or
        before day, so that ``postings`` stays in date order.

        Raises CurrencyMismatchError for Money in another currency, and
        PostingError for an amount that is zero (after rounding to the
        currency) or a day on or before the day the account is closed through.
        """
        if not isinstance(amount, Money):
            amount = Money(amount, self.currency)
        elif amount.currency != self.currency:
            raise CurrencyMismatchError(amount.currency.code, self.currency.code)
        if amount.amount == 0:
            raise PostingError(f"refusing a zero posting on {self.name}")
        if self.closed_through is not None and day <= self.closed_through:
            raise PostingError(f"{self.name} is closed through {self.closed_through}")
        posting = Posting(day, amount, memo)
        index = len(self.postings)
        while index > 0 and self.postings[index - 1].day > day:
            index -= 1
        self.postings.insert(index, posting)
        return posting

    def balance_at(self, day=None):
        """Return the balance of the account at the end of day, as Money.

        The amounts of the postings dated on or before day are added up (all
        postings when day is None), starting from zero in the account's
        currency. Accounts whose kind is in CREDIT_KINDS report that sum with
        the opposite sign, so that a normal balance is positive for every kind.
        """
        total = Money.zero(self.currency)
        for posting in self.postings:
            if day is not None and posting.day > day:
                break
            total = total.add(posting.amount)
        return total.negate() if self.kind in CREDIT_KINDS else total
