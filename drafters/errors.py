"""The one exception base of tracedraft: a stable code, a message, and where the problem is."""

from __future__ import annotations


class TracedraftError(Exception):
    """An error a user can act on.

    ``code`` is stable (tests, API error bodies and reports key on it); ``where`` names the file, line,
    field or tensor at fault when there is one.
    """

    def __init__(self, code: str, message: str, where: str | None = None):
        super().__init__(f"{message} [{code}]" + (f" at {where}" if where else ""))
        self.code = code
        self.message = message
        self.where = where

    def to_dict(self) -> dict[str, str | None]:
        """The API's error body shape: {"code", "message", "param"}."""
        return {"code": self.code, "message": self.message, "param": self.where}
