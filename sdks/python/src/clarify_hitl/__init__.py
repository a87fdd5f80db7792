"""clarify-hitl: the Python client of clarify, the human-in-the-loop service for LLM agents.

An agent asks a person a question or for an approval, waits durably, and resumes with a typed
`Outcome`:

    from clarify_hitl import Client

    with Client() as clarify:                      # CLARIFY_URL, CLARIFY_TOKEN
        outcome = clarify.ask("Deploy to prod?", ["yes", "no"])
        if outcome.answer == "yes":
            deploy()

`Client` blocks, `AsyncClient` awaits; both share one implementation. Adapters live in
`clarify_hitl.langgraph` (LangGraph interrupts, LangChain's `HumanInTheLoopMiddleware`) and
`clarify_hitl.openai_agents` (the OpenAI Agents SDK's tool approvals). `verify_receipt` checks a
resolved request's signed receipt offline (the `receipts` extra).
"""

from ._client import AsyncClient, Client
from ._errors import (
    AlreadyResolvedError,
    AuthenticationError,
    BadRequestError,
    ClarifyConnectionError,
    ClarifyError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    ProtocolError,
    RateLimitedError,
    ServiceUnavailableError,
    ValidationError,
)
from ._types import JSON, Event, Outcome, Page, QuestionOutcome, Record, Vote
from .receipts import (
    ReceiptApproval,
    ReceiptClaims,
    ReceiptVerificationError,
    verify_receipt,
)
from .webhooks import WebhookVerificationError, verify_webhook

__version__ = "0.1.0"

__all__ = [
    "JSON",
    "AlreadyResolvedError",
    "AsyncClient",
    "AuthenticationError",
    "BadRequestError",
    "ClarifyConnectionError",
    "ClarifyError",
    "Client",
    "ConflictError",
    "Event",
    "NotFoundError",
    "Outcome",
    "Page",
    "PermissionDeniedError",
    "ProtocolError",
    "QuestionOutcome",
    "RateLimitedError",
    "ReceiptApproval",
    "ReceiptClaims",
    "ReceiptVerificationError",
    "Record",
    "ServiceUnavailableError",
    "ValidationError",
    "Vote",
    "WebhookVerificationError",
    "verify_receipt",
    "verify_webhook",
]
