"""Exceptions raised by textkit."""


class InvalidInputError(TypeError):
    """Raised when a textkit function that expects a string receives something else."""

    def __init__(self, value):
        self.value = value
        super().__init__(f"expected a str, got {type(value).__name__!r}")
