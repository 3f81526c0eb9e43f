"""The one error the stack tool raises: what went wrong, and the command that fixes it."""

from __future__ import annotations


class StackError(Exception):
    """A stack problem with a stable ``code`` (``no_engine``, ``no_compose``, ``base_image_failed``,
    ``build_failed``, ``port_in_use``, ``volume_not_writable``, ``engine_failed``, ``not_healthy``,
    ``timeout``, ``smoke_failed``), a ``message`` naming what is missing and a ``fix``: the command to run."""

    def __init__(self, code: str, message: str, fix: str = "") -> None:
        super().__init__(message)
        self.code, self.message, self.fix = code, message, fix

    def __str__(self) -> str:
        text = f"stack: error [{self.code}]: {self.message}"
        return f"{text}\n  fix: {self.fix}" if self.fix else text
