"""What an approval through clarify adds to a Pydantic AI and a Google ADK run, against each
framework's own in-process approval (a handler that approves at once).

Each run is one model turn asking for one tool call that needs approval, the approval, the
tool, and a closing model turn, against the tests' scripted model servers on 127.0.0.1. The
in-process runs approve in the framework (Pydantic AI's `HandleDeferredToolCalls` returning
`approve_all`; ADK's client answering `adk_request_confirmation` with `confirmed=True` itself);
the clarify runs ask a real `clarify serve` (SQLite in a temporary folder), where a responder
following the event stream approves each request as it is created. Two figures, neither a
person's time: the difference of whole runs, an in-process run and a clarify run in turn so the
machine's load falls on both; and the time spent in the adapter's ask-and-wait (create, the
event reaching the responder, the answer, the wait's wake-up).

    CLARIFY_BIN=/path/to/clarify python bench/pydantic_ai_adk.py [RUNS]

Run it in scripts/test-pydantic-ai-adk's environment (it imports the tests' fixtures and
scripted servers).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("src", "tests")]

from conftest import ClarifyServer  # noqa: E402
from google.adk.agents import Agent as AdkAgent  # noqa: E402
from google.adk.models import Gemini  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions import InMemorySessionService  # noqa: E402
from google.adk.tools.function_tool import FunctionTool  # noqa: E402
from google.adk.tools.tool_confirmation import ToolConfirmation  # noqa: E402
from google.genai import types  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.capabilities import AbstractCapability, HandleDeferredToolCalls  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, RunContext  # noqa: E402
from scripted_google_adk import FunctionCall, GeminiServer  # noqa: E402
from scripted_pydantic_ai import ChatCompletionsServer, ToolCall  # noqa: E402

from clarify_hitl import Client  # noqa: E402
from clarify_hitl import google_adk as google_adk_adapter  # noqa: E402
from clarify_hitl import pydantic_ai as pydantic_ai_adapter  # noqa: E402
from clarify_hitl.google_adk import REQUEST_CONFIRMATION, run_with_humans  # noqa: E402
from clarify_hitl.pydantic_ai import ClarifyApprovals  # noqa: E402


def send_email(to: str, subject: str) -> str:
    """Send an e-mail."""
    return f"sent to {to}"


def approve_as_created(responder: Client) -> None:
    """Approves every request the moment its `request.created` event arrives."""
    for event in responder.events():
        if event.type == "request.created" and event.record is not None:
            responder.answer(event.record.id, {"decision": "approve"})


class FreshCalls(ChatCompletionsServer):
    """Each conversation's tool call gets an id of its own, as a real model's does."""

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        self.turns = [
            [
                ToolCall(
                    f"call_{uuid.uuid4().hex}", "send_email", {"to": "ada@x.org", "subject": "hi"}
                )
            ]
        ]
        return super().reply(body)


def pydantic_ai_run(model: ChatCompletionsServer, capability: AbstractCapability[Any]) -> None:
    chat = OpenAIChatModel("gpt", provider=OpenAIProvider(base_url=model.base_url, api_key="x"))
    agent: Agent[None, str] = Agent(chat, capabilities=[capability])
    agent.tool_plain(requires_approval=True)(send_email)
    agent.run_sync("mail Ada")


def approve_at_once(ctx: RunContext[Any], requests: DeferredToolRequests) -> DeferredToolResults:
    return requests.build_results(approve_all=True)


def adk_runner(model: GeminiServer) -> tuple[Runner, str]:
    agent = AdkAgent(
        name="assistant",
        model=Gemini(
            model="gemini-2.5-flash", base_url=model.base_url, client_kwargs={"api_key": "x"}
        ),
        tools=[FunctionTool(send_email, require_confirmation=True)],
    )
    sessions = InMemorySessionService()
    session = f"s-{uuid.uuid4().hex[:12]}"
    asyncio.run(sessions.create_session(app_name="bench", user_id="u", session_id=session))
    return Runner(agent=agent, app_name="bench", session_service=sessions), session


def said(words: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=words)])


def adk_in_process(model: GeminiServer) -> None:
    runner, session = adk_runner(model)
    events = list(runner.run(user_id="u", session_id=session, new_message=said("mail Ada")))
    parts = [
        types.Part(
            function_response=types.FunctionResponse(
                name=REQUEST_CONFIRMATION,
                id=call.id,
                response=ToolConfirmation(confirmed=True).model_dump(by_alias=True),
            )
        )
        for event in events
        for call in event.get_function_calls()
        if call.name == REQUEST_CONFIRMATION
    ]
    list(
        runner.run(
            user_id="u", session_id=session, new_message=types.Content(role="user", parts=parts)
        )
    )


def adk_clarify(model: GeminiServer, client: Client) -> None:
    runner, session = adk_runner(model)
    run_with_humans(
        runner, user_id="u", session_id=session, new_message=said("mail Ada"), client=client
    )


def paired(
    runs: int, base: Callable[[], None], clarify: Callable[[], None]
) -> tuple[list[float], list[float]]:
    """Whole runs, the in-process one and the clarify one in turn, so a change in the machine's
    load falls on both; returns the in-process runs' times and each pair's difference (ms)."""
    base()  # warm-up: imports, connections, the first client
    clarify()
    added, alone = [], []
    for _ in range(runs):
        start = time.perf_counter()
        base()
        middle = time.perf_counter()
        clarify()
        added.append(((time.perf_counter() - middle) - (middle - start)) * 1000)
        alone.append((middle - start) * 1000)
    return alone, added


class Asking:
    """The time spent in the adapter's call that asks and waits, per approval (ms)."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.times.append((time.perf_counter() - start) * 1000)

        return timed


def report(name: str, alone: list[float], added: list[float], asking: list[float]) -> None:
    print(
        f"{name}: a run with the in-process approval median {statistics.median(alone):.1f} ms; "
        f"added per approval (paired whole runs) median {statistics.median(added):.1f} ms "
        f"[p10 {percentile(added, 10):.1f}, p90 {percentile(added, 90):.1f}]; in the adapter's "
        f"ask-and-wait median {statistics.median(asking):.1f} ms "
        f"[p10 {percentile(asking, 10):.1f}, p90 {percentile(asking, 90):.1f}]"
    )


def percentile(values: list[float], p: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, len(ordered) * p // 100)]


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    binary = os.environ.get("CLARIFY_BIN")
    if not binary:
        sys.exit("set CLARIFY_BIN to a clarify binary")
    with tempfile.TemporaryDirectory() as folder:
        server = ClarifyServer(Path(binary), Path(folder))
        server.start()
        try:
            client = Client(server.url, server.key("agent", "bench"))
            responder = Client(server.url, server.key("responder", "alice"))
            threading.Thread(target=approve_as_created, args=(responder,), daemon=True).start()
            time.sleep(0.5)  # the event stream is open before the first request
            print(f"{runs} runs each, after one warm-up; load average {os.getloadavg()[0]:.2f}")
            asking = Asking()
            pydantic_ai_adapter._resolve = asking.wrap(pydantic_ai_adapter._resolve)
            with FreshCalls([]) as model:
                alone, added = paired(
                    runs,
                    lambda: pydantic_ai_run(model, HandleDeferredToolCalls(approve_at_once)),
                    lambda: pydantic_ai_run(model, ClarifyApprovals(client)),
                )
            report("Pydantic AI 2.78.0", alone, added, asking.times[1:])
            asking = Asking()
            google_adk_adapter.resolve_confirmations = asking.wrap(
                google_adk_adapter.resolve_confirmations
            )
            call = FunctionCall("send_email", {"to": "ada@x.org", "subject": "hi"})
            with GeminiServer([[call]]) as gemini:
                alone, added = paired(
                    runs, lambda: adk_in_process(gemini), lambda: adk_clarify(gemini, client)
                )
            # run_with_humans also calls it on the closing run's events, which have nothing to ask.
            report("Google ADK 2.13.0", alone, added, asking.times[2::2])
            print(f"load average at the end {os.getloadavg()[0]:.2f}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
