"""Exceptions raised by the ledger."""


class LedgerError(Exception):
    """Base class of every ledger error."""


class UnknownCurrencyError(LedgerError, LookupError):
    """Raised when a currency code is not in the registry."""


class CurrencyMismatchError(LedgerError, ValueError):
    """Raised when amounts in two different currencies are combined."""

    def __init__(self, left, right):
        self.left = left
        self.right = right
        super().__init__(f"cannot combine {left} with {right}")


class InvalidAllocationError(LedgerError, ValueError):
    """Raised when an amount cannot be split with the given ratios."""


class PostingError(LedgerError):
    """Raised when an account refuses a posting."""
