"""Errors raised by the clients.

Every failure is a `ClarifyError` carrying the server's stable `code` (or one of the client's own:
`unreachable`, `protocol`) and the HTTP `status` when there was one. Subclasses exist for the codes
callers commonly handle, so `except AlreadyResolvedError` reads better than comparing strings.
Messages are one line saying what went wrong and, where it helps, what to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._types import Record


class ClarifyError(Exception):
    """A call to clarify failed.

    Attributes:
        code: the server's stable snake_case error code (`not_found`, `already_resolved`, ...),
            or `unreachable` / `protocol` for failures on the way there.
        status: the HTTP status, or `None` when no response came.
        message: the one-line message for a person.
    """

    def __init__(self, message: str, *, code: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code!r}, status={self.status!r}, {self.message!r})"
        )


class ClarifyConnectionError(ClarifyError):
    """No response came: nothing listens at the URL, or the connection broke.

    `sent` is false when no connection was made at all, so the call certainly did not reach the
    server; when true the server may have acted on it (retry creates with an idempotency key).
    """

    def __init__(self, message: str, *, sent: bool) -> None:
        super().__init__(message, code="unreachable")
        self.sent = sent


class ProtocolError(ClarifyError):
    """The server answered with something that is not clarify's JSON."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message, code="protocol", status=status)


class BadRequestError(ClarifyError):
    """`400`: the body is not JSON, or the path is malformed."""


class AuthenticationError(ClarifyError):
    """`401`: no key, or a key the server does not know."""


class PermissionDeniedError(ClarifyError):
    """`403`: the key's role may not do this, or it is not among the request's responders."""


class NotFoundError(ClarifyError):
    """`404`: no such request in the key's tenant."""


class ConflictError(ClarifyError):
    """`409`: the call conflicts with the request's state (for example `already_voted`)."""


class AlreadyResolvedError(ConflictError):
    """`409 already_resolved`: someone resolved the request first; `record` shows how."""

    def __init__(
        self, message: str, *, code: str, status: int | None, record: Record | None
    ) -> None:
        super().__init__(message, code=code, status=status)
        self.record = record


class ValidationError(ClarifyError):
    """`422`: the request or answer does not fit; the message names the field. An answer refused
    this way leaves the request pending, so a corrected one can still be sent."""


class RateLimitedError(ClarifyError):
    """`429`: too many calls for this key; `retry_after` says how many seconds to wait."""

    def __init__(self, message: str, *, code: str, status: int, retry_after: float | None) -> None:
        super().__init__(message, code=code, status=status)
        self.retry_after = retry_after


class ServiceUnavailableError(ClarifyError):
    """`502`, `503` or `504`: the server (or its store) is briefly out of reach; retry."""


_BY_STATUS: dict[int, type[ClarifyError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: BadRequestError,
    422: ValidationError,
    502: ServiceUnavailableError,
    503: ServiceUnavailableError,
    504: ServiceUnavailableError,
}


def error_from_response(
    status: int, body: Any, retry_after: str | None, record: Record | None
) -> ClarifyError:
    """The error for a non-2xx response with clarify's `{"error": {code, message}}` body."""
    error = body.get("error") if isinstance(body, dict) else None
    code = "unknown"
    message = f"the server refused the call with HTTP {status}"
    if isinstance(error, dict):
        if isinstance(error.get("code"), str):
            code = error["code"]
        if isinstance(error.get("message"), str) and error["message"]:
            message = error["message"]
    if status == 401:
        message += "; set CLARIFY_TOKEN to an API key"
        # The server's own message may already say how to make one.
        if "clarify keys create" not in message:
            message += " (create one with `clarify keys create`)"
    if status == 409 and code == "already_resolved":
        return AlreadyResolvedError(message, code=code, status=status, record=record)
    if status == 429:
        try:
            seconds = float(retry_after) if retry_after is not None else None
        except ValueError:
            seconds = None
        return RateLimitedError(message, code=code, status=status, retry_after=seconds)
    cls = _BY_STATUS.get(status, ClarifyError)
    return cls(message, code=code, status=status)
