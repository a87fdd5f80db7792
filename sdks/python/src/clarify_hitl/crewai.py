"""CrewAI: an agent asking a person, and tools that run only once a person approved them.

CrewAI runs an agent's tools itself, inside the task: there is no pause to resume, so both tools
here ask through clarify and wait, in the tool call, for the outcome.

- `AskHumanTool(client, **fields)` is the `ask_human` tool: the model fills in the `ask_human`
  input (up to five questions, each `single`, `multi`, `open` or `form`, and a `context`), the
  request is asked as it is, and the agent gets the outcome JSON back, as the `ask_human` MCP tool
  returns it (for a skipped or expired request too, whose `note` says what to do).
- `gated(tool, client, **fields)` wraps any CrewAI tool in one of the same name, description and
  arguments that asks for an approval (the tool's name and arguments, editable) before each run.
  Approved, the tool runs with the arguments the person approved, edited or not; denied, the
  agent gets the person's reason (`Changes requested: <reason>` when they asked for changes); not
  answered (skipped, expired, cancelled), the agent gets the outcome's status and note. Either
  way the tool did not run. Its results are never cached, so a repeated call asks again.

Each request's idempotency key is made of the run, the tool's name, a digest of the arguments and
how many times the same call was asked before in that run, so running the same step again after
a crash finds the same request instead of asking twice. The run is `run_id` when given (an id of
yours that outlives the process), else the id of the CrewAI Flow running the crew (kept across a
restart by `@persist`), else the current task's id, which lives as long as the process.
`agent` defaults to `crewai`.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections.abc import Mapping
from typing import Any, Literal

from crewai.context import get_current_task_id
from crewai.flow.flow_context import current_flow_id
from crewai.tools import BaseTool
from pydantic import BaseModel, Field, PrivateAttr

from ._client import Client
from ._types import Outcome

__all__ = ["AskHumanInput", "AskHumanTool", "gated"]

ASK_HUMAN_DESCRIPTION = (
    "Ask a human a question and wait for the answer. Ask only when you are genuinely blocked: "
    "the task is ambiguous in a way the context cannot settle, or a decision has real trade-offs "
    "(cost, risk, something hard to undo, a matter of taste) that the human should make. Do not "
    "ask about low-stakes choices you can make yourself: make them and mention the assumption. "
    "Ask up to 5 related questions at once. For a choice, put each option in `options` (short, "
    "distinct labels, with a description when the trade-off is not obvious) and never list the "
    "options inside the question text; set `recommended` to the label of the option you "
    "recommend. The human may also answer in their own words. The result gives each answer; if "
    "the human skipped, did not answer in time, or the question was cancelled, the result says "
    "so: then continue with your best judgement and state the assumption you made."
)


class AskHumanOption(BaseModel):
    """One option."""

    label: str = Field(max_length=200, description="A short label, distinct from the others.")
    description: str | None = Field(
        default=None, description="What choosing this option means, when the label does not say."
    )


class AskHumanField(BaseModel):
    """One field of a form."""

    id: str | None = Field(default=None, description="A short identifier for the value.")
    label: str = Field(max_length=200, description="What the human sees beside the input.")
    type: Literal["text", "number", "integer", "boolean", "choice", "choices"]
    required: bool | None = Field(default=None, description="Whether it must be filled in.")
    description: str | None = Field(default=None, description="A hint shown under the input.")
    minimum: float | None = None
    maximum: float | None = None
    format: Literal["email", "url", "date", "datetime"] | None = None
    max_length: int | None = None
    options: list[str] | None = Field(default=None, max_length=4)


class AskHumanQuestion(BaseModel):
    """One question."""

    question: str = Field(
        max_length=4000,
        description="The question in one or two sentences. Never list the options here.",
    )
    header: str | None = Field(default=None, max_length=32, description="A very short label.")
    kind: Literal["single", "multi", "open", "form"] = Field(
        description="`single`: pick one option; `multi`: one or more; `open`: free text; "
        "`form`: typed values, one per field in `fields`."
    )
    options: list[AskHumanOption] | None = Field(
        default=None, max_length=4, description="The options for `single` and `multi`."
    )
    recommended: str | None = Field(default=None, description="The option you recommend.")
    fields: list[AskHumanField] | None = Field(
        default=None, max_length=20, description="The fields of a `form` question."
    )


class AskHumanInput(BaseModel):
    """The arguments of an `ask_human` call (the shape of `tools/ask_human.*.json`)."""

    questions: list[AskHumanQuestion] = Field(min_length=1, max_length=5)
    context: str | None = Field(
        default=None,
        description="What the human needs to know to answer: what you are doing, what you "
        "found, and why you are asking.",
    )


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class _Keys:
    """Idempotency keys for one tool: the run, the call, and how often it was asked there."""

    def __init__(self, run_id: str | None) -> None:
        self.run_id = run_id
        self.process = uuid.uuid4().hex
        self.seen: dict[str, int] = {}
        self.lock = threading.Lock()

    def next(self, name: str, arguments: Any) -> str:
        run = self.run_id or current_flow_id.get() or get_current_task_id() or self.process
        call = f"crewai:{run}:{name}:{_digest(arguments)}"
        with self.lock:
            count = self.seen.get(call, 0)
            self.seen[call] = count + 1
        return f"{call}:{count}"


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _create_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {"agent": "crewai", **{k: v for k, v in fields.items() if v is not None}}


def _ask(client: Client, body: dict[str, Any]) -> Outcome:
    record = client.create(body)
    done = record if record.resolved else client.wait(record.id)
    if done.outcome is None:  # the wait has no limit, so only a broken server gets here
        raise RuntimeError(f"clarify request {record.id} is still pending")
    return done.outcome


class AskHumanTool(BaseTool):
    """The `ask_human` tool for a CrewAI agent: asks a person through clarify and returns the
    outcome JSON. `fields` are create fields added to every request (`responders`, `tags`,
    `timeout_seconds`, `session`, ...)."""

    name: str = "ask_human"
    description: str = ASK_HUMAN_DESCRIPTION
    args_schema: type[BaseModel] = AskHumanInput
    _client: Client = PrivateAttr()
    _fields: dict[str, Any] = PrivateAttr()
    _keys: _Keys = PrivateAttr()

    def __init__(self, client: Client, *, run_id: str | None = None, **fields: Any) -> None:
        super().__init__(name="ask_human", description=ASK_HUMAN_DESCRIPTION)
        self._client = client
        self._fields = _create_fields(fields)
        self._keys = _Keys(run_id)

    def _run(self, **arguments: Any) -> str:
        asked = _without_nulls(AskHumanInput.model_validate(arguments).model_dump())
        body = {**asked, **self._fields}
        body.setdefault("idempotency_key", self._keys.next(self.name, asked))
        return json.dumps(_ask(self._client, body).raw)


class _GatedTool(BaseTool):
    """A CrewAI tool that asks for approval before each run of the tool it wraps."""

    _tool: BaseTool = PrivateAttr()
    _client: Client = PrivateAttr()
    _fields: dict[str, Any] = PrivateAttr()
    _keys: _Keys = PrivateAttr()

    def _run(self, **arguments: Any) -> Any:
        name = self._tool.name
        body: dict[str, Any] = {
            "questions": [
                {
                    "kind": "approval",
                    "header": name[:32],
                    "text": f"Allow the agent to run {name}?",
                    "action": {"name": name, "arguments": arguments},
                    "allow_edit": True,
                }
            ],
            **self._fields,
        }
        body.setdefault("idempotency_key", self._keys.next(name, arguments))
        outcome = _ask(self._client, body)
        if not outcome.answered:
            note = outcome.note or ""
            return f"{name} was not run: nobody approved it ({outcome.status}). {note}".strip()
        if outcome.decision != "approve":
            return f"{name} was not run: {outcome.refusal or 'the person denied it.'}"
        approved = outcome.edited_arguments if outcome.edited_arguments is not None else arguments
        return self._tool.run(**approved)


def _never(_arguments: Any = None, _result: Any = None) -> bool:
    return False


def gated(tool: BaseTool, client: Client, *, run_id: str | None = None, **fields: Any) -> BaseTool:
    """`tool` behind a person's approval: a CrewAI tool of the same name, description and
    arguments that asks through clarify before each run (see the module's documentation).
    `fields` are create fields added to every request."""
    wrapper = _GatedTool(
        name=tool.name,
        description=tool.description,
        args_schema=tool.args_schema,
        result_as_answer=tool.result_as_answer,
        cache_function=_never,
    )
    wrapper._tool = tool
    wrapper._client = client
    wrapper._fields = _create_fields(fields)
    wrapper._keys = _Keys(run_id)
    return wrapper
