"""What an approval through clarify adds to a tool call, in Microsoft Agent Framework and CrewAI.

    python bench/af_crewai_approvals.py agent-framework|crewai [--rounds N]

Run it with the framework's test environment (scripts/test makes them; see
`requirements-agent-framework.txt` and `requirements-crewai.txt`) and `CLARIFY_BIN` naming a
`clarify` binary. It starts `clarify serve` on a fresh SQLite file and a scripted Chat Completions
server, both on 127.0.0.1, and times one tool call that needs approval, end to end, N times each
way, alternating:

- in process, the framework's own way with a handler that approves at once: Agent Framework's
  `to_function_approval_response(True)` for each request, CrewAI's `before_tool_call` hook that
  lets the call through;
- through clarify: `resolve_approvals` / `gated`, each approval created on the server and approved
  at once over HTTP by a responder that follows the server's event stream.

For CrewAI it also times the tool call alone (`run` with the model's arguments, as CrewAI's
executor calls a tool), since a kickoff's own time varies by more than an approval costs. It
prints the medians and the 90th percentiles of both ways and their difference, the added time per
approval.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "src"), str(HERE.parent / "tests")]
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_DISABLE_TRACKING", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from conftest import ClarifyServer  # noqa: E402
from scripted_af_crewai import ChatServer, ToolCall, calls, say  # noqa: E402

from clarify_hitl import Client  # noqa: E402

ARGS = {"to": "ada@example.com", "subject": "The report"}
Step = Callable[[], None]
Comparison = tuple[str, Step, Step]
"""What is timed, the framework's own in-process approval, and the same through clarify."""


class Approver:
    """Approves every request the moment the server announces it (`request.created`)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        for event in self.client.events():
            if event.type == "request.created" and event.record is not None:
                self.client.answer(event.record.id, {"decision": "approve"})


def agent_framework(server: ClarifyServer, clarify: Client) -> list[Comparison]:
    from agent_framework import Agent, Message, tool
    from agent_framework.openai import OpenAIChatCompletionClient

    from clarify_hitl.agent_framework import resolve_approvals

    @tool(approval_mode="always_require")
    def send_email(to: str, subject: str) -> str:
        """Send an e-mail."""
        return f"sent to {to}"

    model = ChatServer([calls(ToolCall("send_email", ARGS)), say("Mailed.")]).__enter__()
    client = OpenAIChatCompletionClient("gpt-scripted", api_key="unused", base_url=model.url)
    agent = Agent(client=client, name="mailer", instructions="Help.", tools=[send_email])
    # One loop for every run: the OpenAI client keeps its connections on the loop it ran on.
    loop = asyncio.new_event_loop()

    def once(resolve: Callable[[Any], list[Any]]) -> None:
        async def main() -> None:
            session = agent.create_session()
            response = await agent.run("Mail Ada.", session=session)
            final = await agent.run(resolve(response), session=session)
            assert final.text == "Mailed.", final.text

        loop.run_until_complete(main())

    def in_process() -> None:
        once(
            lambda r: [
                Message(
                    "user", [q.to_function_approval_response(True) for q in r.user_input_requests]
                )
            ]
        )

    def through_clarify() -> None:
        once(lambda r: resolve_approvals(clarify, r) or [])

    return [("a run with one approved call", in_process, through_clarify)]


def crewai(server: ClarifyServer, clarify: Client) -> list[Comparison]:
    from crewai import LLM, Agent, Crew, Task
    from crewai.hooks import register_before_tool_call_hook, unregister_before_tool_call_hook
    from crewai.tools import BaseTool
    from pydantic import BaseModel

    from clarify_hitl.crewai import gated

    class Email(BaseModel):
        to: str
        subject: str

    class SendEmail(BaseTool):
        name: str = "send_email"
        description: str = "Send an e-mail."
        args_schema: type[BaseModel] = Email

        def _run(self, to: str, subject: str) -> str:
            return f"sent to {to}"

    model = ChatServer([calls(ToolCall("send_email", ARGS)), say("Mailed.")]).__enter__()
    llm = LLM(model="openai/gpt-scripted", base_url=model.url, api_key="unused")

    def once(tool: BaseTool) -> None:
        mailer = Agent(role="Mailer", goal="Mail.", backstory="You mail.", llm=llm, tools=[tool])
        task = Task(description="Mail Ada.", expected_output="What was done.", agent=mailer)
        output = Crew(agents=[mailer], tasks=[task]).kickoff()
        assert getattr(output, "raw", None) == "Mailed.", output

    def approve_at_once(context: Any) -> None:
        return None

    def in_process() -> None:
        register_before_tool_call_hook(approve_at_once)
        try:
            once(SendEmail())
        finally:
            unregister_before_tool_call_hook(approve_at_once)

    def through_clarify() -> None:
        once(gated(SendEmail(), clarify))

    # The tool call alone, as CrewAI's executor makes it (`run` with the model's arguments): the
    # kickoff's own time varies by more than an approval costs.
    plain, guarded = SendEmail(), gated(SendEmail(), clarify)

    def tool_in_process() -> None:
        approve_at_once(None)
        plain.run(**ARGS)

    def tool_through_clarify() -> None:
        guarded.run(**ARGS)

    return [
        ("a crew with one approved call", in_process, through_clarify),
        ("the tool call alone", tool_in_process, tool_through_clarify),
    ]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("framework", choices=["agent-framework", "crewai"])
    parser.add_argument("--rounds", type=int, default=40)
    options = parser.parse_args()
    binary = os.environ.get("CLARIFY_BIN")
    if not binary:
        sys.exit("set CLARIFY_BIN to a clarify binary")
    with tempfile.TemporaryDirectory() as directory:
        server = ClarifyServer(Path(binary), Path(directory))
        server.start()
        try:
            clarify = Client(server.url, server.key("agent", "bench"))
            Approver(Client(server.url, server.key("responder", "alice"))).thread.start()
            time.sleep(0.2)  # the event stream is open before the first request
            make = agent_framework if options.framework == "agent-framework" else crewai
            comparisons = make(server, clarify)
            results = [
                (label, measure(first, second, options.rounds))
                for label, first, second in comparisons
            ]
        finally:
            server.stop()
    print(f"{options.framework}: {options.rounds} rounds each way, one approval each")
    for label, timings in results:
        print(f"  {label}:")
        for name, values in timings.items():
            print(
                f"    {name:16} median {statistics.median(values) * 1000:7.1f} ms"
                f"   p90 {percentile(values, 0.9) * 1000:7.1f} ms"
            )
        added = statistics.median(timings["through clarify"]) - statistics.median(
            timings["in process"]
        )
        print(f"    added per approval (difference of the medians): {added * 1000:.1f} ms")


def measure(in_process: Step, through_clarify: Step, rounds: int) -> dict[str, list[float]]:
    """Times both steps alternately, after two warm-up rounds (imports, connections, the
    server's first writes)."""
    for step in (in_process, through_clarify, in_process, through_clarify):
        step()
    timings: dict[str, list[float]] = {"in process": [], "through clarify": []}
    for _ in range(rounds):
        for name, step in (("in process", in_process), ("through clarify", through_clarify)):
            start = time.perf_counter()
            step()
            timings[name].append(time.perf_counter() - start)
    return timings


if __name__ == "__main__":
    main()
