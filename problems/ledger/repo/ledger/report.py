"""Summaries built from transactions and accounts."""

from dataclasses import dataclass
from datetime import date

from .account import CREDIT_KINDS, Account
from .currency import get_currency
from .dates import month_key
from .errors import CurrencyMismatchError
from .money import Money


@dataclass(frozen=True)
class Transaction:
    """A categorised movement of money: positive amounts are income, negative ones expenses."""

    day: date
    description: str
    amount: Money
    category: str = "uncategorized"


@dataclass(frozen=True)
class TrialBalanceLine:
    """One account's line of a trial balance; one of debit and credit is zero."""

    account: str
    kind: str
    debit: Money
    credit: Money


@dataclass
class TrialBalance:
    """The balances of a set of accounts at the end of a day, split into debits and credits."""

    as_of: date
    currency: str
    lines: list
    total_debit: Money
    total_credit: Money

    def is_balanced(self):
        """Return True if the debits equal the credits."""
        return self.total_debit == self.total_credit


def monthly_summary(transactions, currency="USD"):
    """Group transactions by calendar month.

    Returns a dict keyed by ``month_key`` (``"YYYY-MM"``), with the months in
    chronological order and only the months that have transactions. Each
    value is a dict with four entries:

    - ``"income"``: the sum of the amounts that are zero or positive;
    - ``"expenses"``: the sum of the negative amounts, as a positive Money;
    - ``"net"``: the sum of all the amounts (income minus expenses);
    - ``"count"``: the number of transactions of the month.

    Money values are in ``currency`` (a Currency or a code) and are zero
    when nothing contributes to them.
    Raises CurrencyMismatchError if a transaction is in another currency.
    """
    currency = get_currency(currency)
    months = {}
    for txn in sorted(transactions, key=lambda item: item.day):
        if txn.amount.currency != currency:
            raise CurrencyMismatchError(txn.amount.currency.code, currency.code)
        key = month_key(txn.day)
        bucket = months.get(key)
        if bucket is None:
            zero = Money.zero(currency)
            bucket = months[key] = {"income": zero, "expenses": zero, "net": zero, "count": 0}
        if txn.amount.amount >= 0:
            bucket["income"] = bucket["income"].add(txn.amount)
        else:
            bucket["expenses"] = bucket["expenses"].add(txn.amount.negate())
        bucket["net"] = bucket["net"].add(txn.amount)
        bucket["count"] += 1
    return months


def category_totals(transactions, currency="USD"):
    """Total the amounts of each category.

    Returns a list of ``(category, total, count)`` tuples, one per category
    present, where total is the sum of the category's amounts as Money in
    ``currency`` (a Currency or a code) and count its number of transactions.
    The list is sorted by the absolute value of the total, largest first,
    and by category name when those are equal.

    Raises CurrencyMismatchError if a transaction is in another currency.
    """
    currency = get_currency(currency)
    totals = {}
    counts = {}
    for txn in transactions:
        if txn.amount.currency != currency:
            raise CurrencyMismatchError(txn.amount.currency.code, currency.code)
        totals[txn.category] = totals.get(txn.category, Money.zero(currency)).add(txn.amount)
        counts[txn.category] = counts.get(txn.category, 0) + 1
    ranked = sorted(totals, key=lambda name: (-abs(totals[name].amount), name))
    return [(name, totals[name], counts[name]) for name in ranked]


def running_balance(transactions, opening=None):
    """Return the balance after each transaction, in date order.

    Transactions are sorted by day; those of the same day keep their given
    order. ``opening`` is the balance before the first transaction; when it
    is None the balance starts from zero in the currency of the first
    transaction (in date order).

    Returns a list of ``(day, description, amount, balance)`` tuples, or an
    empty list when there is no transaction.
    Raises CurrencyMismatchError if a transaction is in another currency than
    the opening balance.
    """
    ordered = sorted(transactions, key=lambda txn: txn.day)
    if not ordered:
        return []
    balance = opening if opening is not None else Money.zero(ordered[0].amount.currency)
    rows = []
    for txn in ordered:
        balance = balance.add(txn.amount)
        rows.append((txn.day, txn.description, txn.amount, balance))
    return rows


def trial_balance(accounts, as_of):
    """Build the TrialBalance of accounts at the end of day ``as_of``.

    Every account's raw balance is the sum of its postings up to as_of
    (debits positive): its ``balance_at(as_of)``, with the sign flipped back
    for kinds in CREDIT_KINDS. A positive raw balance goes in the debit
    column and a negative one, made positive, in the credit column; the
    other column holds zero. Accounts with a zero balance get no line. Lines
    are sorted by account name, ``currency`` is the accounts' currency code,
    and the totals add up the columns.

    Raises TypeError if an item of accounts is not an Account, ValueError if
    accounts is empty, and CurrencyMismatchError if the accounts do not all
    share the currency of the first one by name.
    """
    accounts = list(accounts)
    for account in accounts:
        if not isinstance(account, Account):
            raise TypeError(f"expected an Account, got {type(account).__name__!r}")
    if not accounts:
        raise ValueError("a trial balance needs at least one account")
    accounts.sort(key=lambda account: account.name)
    currency = accounts[0].currency
    zero = Money.zero(currency)
    lines = []
    total_debit = total_credit = zero
    for account in accounts:
        if account.currency != currency:
            raise CurrencyMismatchError(account.currency.code, currency.code)
        balance = account.balance_at(as_of)
        if account.kind in CREDIT_KINDS:
            balance = balance.negate()
        if balance.amount > 0:
            line = TrialBalanceLine(account.name, account.kind, balance, zero)
        elif balance.amount < 0:
            line = TrialBalanceLine(account.name, account.kind, zero, balance.negate())
        else:
            continue
        lines.append(line)
        total_debit = total_debit.add(line.debit)
        total_credit = total_credit.add(line.credit)
    return TrialBalance(as_of, currency.code, lines, total_debit, total_credit)
