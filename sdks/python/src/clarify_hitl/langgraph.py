"""LangGraph and LangChain: answering a graph's interrupts through clarify.

A LangGraph node pauses with `interrupt(value)`; the caller sees the pending `Interrupt`s (in
`__interrupt__` of the output, or `graph.get_state(config).interrupts`) and resumes the thread
with `Command(resume={interrupt_id: value})`. This module turns each interrupt into one clarify
request, and each outcome into the value the node expects:

- LangChain's `HumanInTheLoopMiddleware` (batched): every action request becomes an approval
  question (its arguments editable only when `edit` is allowed); an action that allows only
  `respond` becomes an open question. The outcome comes back as `{"decisions": [...]}` in the
  same order: `approve`, `edit` (when the arguments were edited), `reject` with the person's
  reason (`Changes requested: <reason>` when they asked for changes), `respond` with their
  text. A request that was not answered (skipped, expired, cancelled) rejects every action
  with the outcome's note, so nothing runs unapproved.
- The middleware's `per_call` mode (`{"type": "tool_approval", ...}`): one approval, resumed with
  its one decision.
- A clarify-shaped value (`{"question": ..., "choices": [...]}` or `{"questions": [...]}`, any
  create field beside them) or a plain string (an open question): resumed with the answer of its
  one question (the label, the list of labels, the text, or a form's values), or with the whole
  outcome JSON when it has several questions or was not answered.

Each request gets an idempotency key made of the thread id, the interrupt id and a digest of its
value, so running the same step again (after a crash, or from another process answering a
webhook) finds the same request instead of asking twice. `session` defaults to the thread id and
`agent` to `langgraph`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ._client import AsyncClient, Client
from ._protocol import seconds
from ._types import Outcome, Record

__all__ = [
    "UnsupportedInterruptError",
    "aresolve_interrupts",
    "arun_with_humans",
    "pending_interrupts",
    "resolve_interrupts",
    "run_with_humans",
    "submit_interrupts",
]

_MAX_QUESTIONS = 5
_ALL_DECISIONS = ("approve", "edit", "reject", "respond")


class UnsupportedInterruptError(ValueError):
    """An interrupt's value has a shape this module cannot turn into a request."""


@dataclass(frozen=True)
class _Plan:
    """The requests one interrupt needs, and how their outcomes become its resume value."""

    interrupt_id: str
    bodies: list[dict[str, Any]]
    resume: Callable[[list[Outcome]], Any]


def _thread_id(config: Mapping[str, Any]) -> str:
    configurable = config.get("configurable")
    thread = configurable.get("thread_id") if isinstance(configurable, Mapping) else None
    if thread is None or thread == "":
        raise ValueError(
            "the graph's config needs configurable.thread_id: interrupts are resumed by thread"
        )
    return str(thread)


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _allowed_in_schema(schema: Any) -> list[str]:
    """The decision types a per-call interrupt's `response_schema` (JSON Schema) allows."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            kind = (
                node.get("properties", {}).get("type")
                if isinstance(node.get("properties"), dict)
                else None
            )
            if isinstance(kind, dict):
                for value in [kind.get("const"), *(kind.get("enum") or [])]:
                    if value in _ALL_DECISIONS and value not in found:
                        found.append(value)
            for child in node.values():
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(schema)
    return found or ["approve", "reject"]


# The middleware's own description when the tool's config gives none:
# f"{description_prefix}\n\nTool: {name}\nArgs: {args}", the arguments as a Python repr.
_DEFAULT_PREFIX = "Tool execution requires approval"
_TOOL_AND_ARGS = re.compile(r"\n\nTool: (?P<name>[^\n]*)\nArgs: .*\Z", re.DOTALL)


def _question_text(name: str, description: str | None) -> str:
    """What the person reads above the approval. The arguments are the action's, which every
    surface shows (and lets edit) as it shows every approval's, so the middleware's default
    description, which repeats them as a Python dict, is cut to its prefix, and its default
    prefix to a question of ours."""
    if not description:
        return f"Allow the agent to run {name}?"
    tail = _TOOL_AND_ARGS.search(description)
    if tail is None or tail.group("name") != name:
        return description
    prefix = description[: tail.start()].strip()
    if not prefix or prefix == _DEFAULT_PREFIX:
        return f"Allow the agent to run {name}?"
    return prefix


def _open_text(name: str, args: Any, description: str | None) -> str:
    """The text of a respond-only action: no action is shown beside an open question, so the
    arguments are in the text, as JSON rather than the middleware's Python repr."""
    asked = f"Answer for {name}: {json.dumps(args, default=str)}"
    if not description:
        return asked
    tail = _TOOL_AND_ARGS.search(description)
    if tail is None or tail.group("name") != name:
        return description
    prefix = description[: tail.start()].strip()
    return asked if not prefix or prefix == _DEFAULT_PREFIX else f"{prefix}\n\n{asked}"


def _approval_question(
    qid: str, name: str, args: Any, description: str | None, allowed: Sequence[str]
) -> dict[str, Any]:
    return {
        "id": qid,
        "kind": "approval",
        "header": name[:32],
        "text": _question_text(name, description),
        "action": {"name": name, "arguments": args if isinstance(args, dict) else {}},
        "allow_edit": "edit" in allowed,
    }


def _decision(
    outcome: Outcome, qid: str, name: str, args: Any, allowed: Sequence[str]
) -> dict[str, Any]:
    """The middleware decision for one action, from the outcome of its question."""
    if not outcome.answered:
        return _refuse(_unanswered(outcome, name), allowed)
    q = outcome.question(qid)
    if q.kind == "open":
        return {"type": "respond", "message": str(q.answer or "")}
    if q.decision == "approve":
        edited = q.edited_arguments
        if edited is not None and edited != args and "edit" in allowed:
            return {"type": "edit", "edited_action": {"name": name, "args": edited}}
        if "approve" in allowed:
            return {"type": "approve"}
        return {"type": "edit", "edited_action": {"name": name, "args": edited or args}}
    return _refuse(q.refusal or f"The person denied {name}.", allowed)


def _unanswered(outcome: Outcome, name: str) -> str:
    """Why a tool did not run when nobody approved it: the status, then the outcome's note."""
    return (
        f"{name} was not run: nobody approved it ({outcome.status}). {outcome.note or ''}".strip()
    )


def _refuse(message: str, allowed: Sequence[str]) -> dict[str, Any]:
    if "reject" in allowed or "respond" not in allowed:
        return {"type": "reject", "message": message}
    return {"type": "respond", "message": message}


def _middleware_plan(interrupt_id: str, value: Mapping[str, Any], base: dict[str, Any]) -> _Plan:
    actions = value.get("action_requests")
    configs = value.get("review_configs") or []
    if not isinstance(actions, list) or not actions:
        raise UnsupportedInterruptError("a HumanInTheLoopMiddleware interrupt without actions")
    allowed_by_name: dict[str, list[str]] = {}
    for config in configs:
        if isinstance(config, Mapping) and isinstance(config.get("action_name"), str):
            allowed_by_name[config["action_name"]] = list(config.get("allowed_decisions") or [])
    entries: list[tuple[str, str, Any, list[str]]] = []
    questions: list[dict[str, Any]] = []
    for i, action in enumerate(actions):
        if not isinstance(action, Mapping) or not isinstance(action.get("name"), str):
            raise UnsupportedInterruptError(f"action_requests[{i}] has no tool name")
        name, args = action["name"], action.get("args", {})
        allowed = allowed_by_name.get(name, ["approve", "reject"])
        description = action.get("description")
        qid = f"a{i + 1}"
        entries.append((qid, name, args, allowed))
        if "respond" in allowed and not {"approve", "edit"} & set(allowed):
            questions.append(
                {
                    "id": qid,
                    "kind": "open",
                    "header": name[:32],
                    "text": _open_text(name, args, description),
                }
            )
        else:
            questions.append(_approval_question(qid, name, args, description, allowed))
    chunks = [questions[i : i + _MAX_QUESTIONS] for i in range(0, len(questions), _MAX_QUESTIONS)]
    bodies = [{**base, "questions": chunk} for chunk in chunks]

    def resume(outcomes: list[Outcome]) -> Any:
        decisions = []
        for index, (qid, name, args, allowed) in enumerate(entries):
            outcome = outcomes[index // _MAX_QUESTIONS]
            decisions.append(_decision(outcome, qid, name, args, allowed))
        return {"decisions": decisions}

    return _Plan(interrupt_id, bodies, resume)


def _answer_or_outcome(outcome: Outcome) -> Any:
    if outcome.answered and len(outcome.questions) == 1:
        return outcome.questions[0].answer
    return outcome.raw


def _plan(interrupt: Any, thread_id: str, fields: Mapping[str, Any]) -> _Plan:
    interrupt_id = getattr(interrupt, "id", None)
    if not isinstance(interrupt_id, str):
        raise UnsupportedInterruptError(
            f"expected a langgraph Interrupt with an id, got {type(interrupt).__name__}"
        )
    value = getattr(interrupt, "value", None)
    base: dict[str, Any] = {"session": thread_id, "agent": "langgraph"}
    base.update({k: v for k, v in fields.items() if v is not None})
    base["idempotency_key"] = f"langgraph:{thread_id}:{interrupt_id}:{_digest(value)}"
    if isinstance(value, str):
        return _Plan(
            interrupt_id, [{**base, "question": value}], lambda o: _answer_or_outcome(o[0])
        )
    if isinstance(value, Mapping):
        if "action_requests" in value:
            return _middleware_plan(interrupt_id, value, base)
        if value.get("type") == "tool_approval" and isinstance(value.get("name"), str):
            name, args = value["name"], value.get("args", {})
            allowed = _allowed_in_schema(getattr(interrupt, "response_schema", None))
            question = _approval_question("a1", name, args, value.get("description"), allowed)
            body = {**base, "questions": [question]}
            if isinstance(value.get("tool_call_id"), str):
                body["tool_call_id"] = value["tool_call_id"]
            return _Plan(interrupt_id, [body], lambda o: _decision(o[0], "a1", name, args, allowed))
        if any(k in value for k in ("question", "prompt", "questions")):
            return _Plan(interrupt_id, [{**base, **value}], lambda o: _answer_or_outcome(o[0]))
    raise UnsupportedInterruptError(
        f"interrupt {interrupt_id} has a value clarify cannot ask about ({type(value).__name__}); "
        "interrupt with a string, a {'question': ..., 'choices': [...]} object, or use "
        "HumanInTheLoopMiddleware"
    )


def _plans(
    interrupts: Iterable[Any], config: Mapping[str, Any], fields: Mapping[str, Any]
) -> list[_Plan]:
    thread_id = _thread_id(config)
    return [_plan(i, thread_id, fields) for i in interrupts]


def pending_interrupts(graph: Any, output: Any, config: Mapping[str, Any]) -> list[Any]:
    """The interrupts a run stopped at: `__interrupt__` of its output, else the thread's state."""
    if isinstance(output, Mapping):
        return list(output.get("__interrupt__") or ())
    interrupts = getattr(output, "interrupts", None)
    if interrupts is not None:
        return list(interrupts)
    return list(graph.get_state(config).interrupts)


def submit_interrupts(
    client: Client, interrupts: Iterable[Any], config: Mapping[str, Any], **fields: Any
) -> list[Record]:
    """Raises the requests for `interrupts` and returns their records without waiting (for a
    webhook-driven resume: give `callback_url`, then call `resolve_interrupts` when it fires)."""
    return [
        client.create(body) for plan in _plans(interrupts, config, fields) for body in plan.bodies
    ]


def resolve_interrupts(
    client: Client,
    interrupts: Iterable[Any],
    config: Mapping[str, Any],
    *,
    timeout: float | timedelta | None = None,
    **fields: Any,
) -> dict[str, Any] | None:
    """Asks about every interrupt and returns the resume mapping `{interrupt_id: value}` for
    `Command(resume=...)`, or `None` when some request is still pending after `timeout`
    (default: wait until all are resolved; `0`: only look). Extra `fields` (`responders`,
    `callback_url`, `timeout_seconds`, `tags`, ...) go into every request."""
    plans = _plans(interrupts, config, fields)
    created = [[client.create(body) for body in plan.bodies] for plan in plans]
    limit = seconds(timeout)
    resume: dict[str, Any] = {}
    for plan, records in zip(plans, created, strict=False):
        outcomes = []
        for record in records:
            done = record if record.resolved else client.wait(record.id, limit)
            if done.outcome is None:
                return None
            outcomes.append(done.outcome)
        resume[plan.interrupt_id] = plan.resume(outcomes)
    return resume


async def aresolve_interrupts(
    client: AsyncClient,
    interrupts: Iterable[Any],
    config: Mapping[str, Any],
    *,
    timeout: float | timedelta | None = None,
    **fields: Any,
) -> dict[str, Any] | None:
    """`resolve_interrupts` with an `AsyncClient`."""
    plans = _plans(interrupts, config, fields)
    created = [[await client.create(body) for body in plan.bodies] for plan in plans]
    limit = seconds(timeout)
    resume: dict[str, Any] = {}
    for plan, records in zip(plans, created, strict=False):
        outcomes = []
        for record in records:
            done = record if record.resolved else await client.wait(record.id, limit)
            if done.outcome is None:
                return None
            outcomes.append(done.outcome)
        resume[plan.interrupt_id] = plan.resume(outcomes)
    return resume


def _command(resume: dict[str, Any]) -> Any:
    from langgraph.types import Command

    return Command(resume=resume)


def run_with_humans(
    graph: Any, input: Any, config: Mapping[str, Any], client: Client, **fields: Any
) -> Any:
    """Runs a compiled graph (with a checkpointer) to its end, asking a person through clarify
    for every interrupt on the way, and returns the final output.

    Pass `input=None` to continue a thread that is already waiting at interrupts (after a
    restart): the same requests are found again by their idempotency keys."""
    output = graph.invoke(input, config) if input is not None else None
    while True:
        interrupts = (
            pending_interrupts(graph, output, config)
            if output is not None
            else list(graph.get_state(config).interrupts)
        )
        if not interrupts:
            return output if output is not None else graph.get_state(config).values
        resume = resolve_interrupts(client, interrupts, config, **fields)
        if resume is None:  # only with a timeout in fields, which waits forever here
            raise RuntimeError("a request is still pending after the timeout given in fields")
        output = graph.invoke(_command(resume), config)


async def arun_with_humans(
    graph: Any, input: Any, config: Mapping[str, Any], client: AsyncClient, **fields: Any
) -> Any:
    """`run_with_humans` for async graphs (`ainvoke`) with an `AsyncClient`."""
    output = await graph.ainvoke(input, config) if input is not None else None
    while True:
        if output is not None:
            interrupts = pending_interrupts(graph, output, config)
        else:
            interrupts = list((await graph.aget_state(config)).interrupts)
        if not interrupts:
            return output if output is not None else (await graph.aget_state(config)).values
        resume = await aresolve_interrupts(client, interrupts, config, **fields)
        if resume is None:
            raise RuntimeError("a request is still pending after the timeout given in fields")
        output = await graph.ainvoke(_command(resume), config)
