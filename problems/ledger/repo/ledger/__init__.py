"""A small double-entry style ledger: currencies, money, accounts, periods and reports."""

from .account import ACCOUNT_KINDS, CREDIT_KINDS, Account, Posting
from .currency import Currency, get_currency, register
from .dates import Period, add_months, days_in_month, month_key, month_periods
from .errors import (
    CurrencyMismatchError,
    InvalidAllocationError,
    LedgerError,
    PostingError,
    UnknownCurrencyError,
)
from .money import Money, parse_money
from .report import (
    TrialBalance,
    TrialBalanceLine,
    Transaction,
    category_totals,
    monthly_summary,
    running_balance,
    trial_balance,
)

__all__ = [
    "ACCOUNT_KINDS",
    "CREDIT_KINDS",
    "Account",
    "Currency",
    "CurrencyMismatchError",
    "InvalidAllocationError",
    "LedgerError",
    "Money",
    "Period",
    "Posting",
    "PostingError",
    "Transaction",
    "TrialBalance",
    "TrialBalanceLine",
    "UnknownCurrencyError",
    "add_months",
    "category_totals",
    "days_in_month",
    "get_currency",
    "month_key",
    "month_periods",
    "monthly_summary",
    "parse_money",
    "register",
    "running_balance",
    "trial_balance",
]
