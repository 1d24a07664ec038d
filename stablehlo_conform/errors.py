"""Error hierarchy. Every failure of a test maps to one of these."""

from __future__ import annotations


class ConformError(Exception):
    """Base of every error the tool raises on purpose."""

    status = "error"


class ParseError(ConformError):
    """The program could not be parsed or verified (MLIR diagnostics)."""

    def __init__(self, message: str, diagnostics: list[str] | None = None):
        super().__init__(message)
        self.diagnostics = diagnostics or [message]


class UnsupportedOp(ConformError):
    """An op, type or attribute without a kernel."""

    status = "unsupported"

    def __init__(self, op: str, detail: str = "", loc: str = ""):
        self.op = op
        self.detail = detail
        self.loc = loc
        msg = f"unsupported: {op}"
        if detail:
            msg += f" ({detail})"
        if loc:
            msg += f" at {loc}"
        super().__init__(msg)


class KernelError(ConformError):
    """A kernel raised, or returned values that do not match the op's types."""

    def __init__(self, op: str, loc: str, message: str):
        self.op = op
        self.loc = loc
        super().__init__(f"{op} at {loc}: {message}")


class CheckFailure(ConformError):
    """A check op found a mismatch."""

    status = "fail"


class InputError(ConformError):
    """Inputs supplied by the user do not match the program."""


class ResourceError(ConformError):
    """The program would exceed a configured resource budget."""


class Timeout(ConformError):
    status = "timeout"
