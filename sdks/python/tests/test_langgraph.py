"""LangGraph interrupts and LangChain's HumanInTheLoopMiddleware, answered through a real clarify
server by a person in another thread, with LangChain's fake chat model scripted to call tools."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypedDict

from conftest import ClarifyServer, Person
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from scripted_langchain import ScriptedChatModel

from clarify_hitl import AsyncClient, Client, Record
from clarify_hitl.langgraph import (
    arun_with_humans,
    pending_interrupts,
    resolve_interrupts,
    run_with_humans,
    submit_interrupts,
)

Answer = Callable[[Callable[[Record], Any]], Person]


def agent_calling(
    calls: list[dict[str, Any]],
    interrupt_on: dict[str, Any],
    ran: list[tuple[str, dict[str, Any]]],
    **middleware: Any,
) -> Any:
    """An agent whose model calls `calls` in one turn, then says "done"."""

    @tool
    def write_file(path: str, content: str) -> str:
        """Write a file."""
        ran.append(("write_file", {"path": path, "content": content}))
        return f"wrote {path}"

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(("delete_file", {"path": path}))
        return f"deleted {path}"

    @tool
    def ask_user(question: str) -> str:
        """Ask the user."""
        ran.append(("ask_user", {"question": question}))
        return "unreachable: a person answers in its place"

    script = iter(
        [
            AIMessage(
                content="",
                tool_calls=[
                    {"name": c["name"], "args": c["args"], "id": f"call_{i}", "type": "tool_call"}
                    for i, c in enumerate(calls)
                ],
            ),
            AIMessage(content="done"),
        ]
    )
    return create_agent(
        model=ScriptedChatModel(messages=script),
        tools=[write_file, delete_file, ask_user],
        middleware=[HumanInTheLoopMiddleware(interrupt_on=interrupt_on, **middleware)],
        checkpointer=InMemorySaver(),
    )


def tool_results(output: dict[str, Any]) -> dict[str, str]:
    return {
        m.tool_call_id: str(m.content) for m in output["messages"] if isinstance(m, ToolMessage)
    }


def test_two_actions_edited_and_rejected_in_one_request(
    agent: Client, person: Answer, session: str
) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    graph = agent_calling(
        [
            {"name": "write_file", "args": {"path": "a.txt", "content": "hi"}},
            {"name": "delete_file", "args": {"path": "b.txt"}},
        ],
        {"write_file": True, "delete_file": {"allowed_decisions": ["approve", "reject"]}},
        ran,
    )
    config = {"configurable": {"thread_id": session}}
    asked: list[Record] = []

    def decide(record: Record) -> Any:
        asked.append(record)
        return {
            "answers": {
                "a1": {
                    "decision": "approve",
                    "edited_arguments": {"path": "c.txt", "content": "hi"},
                },
                "a2": {"decision": "deny", "reason": "keep b.txt"},
            }
        }

    with person(decide):
        output = run_with_humans(graph, {"messages": [("user", "tidy up")]}, config, agent)

    assert len(asked) == 1
    questions = asked[0].questions
    assert [(q["id"], q["kind"], q["action"]["name"], q["allow_edit"]) for q in questions] == [
        ("a1", "approval", "write_file", True),
        ("a2", "approval", "delete_file", False),
    ]
    assert questions[1]["action"]["arguments"] == {"path": "b.txt"}
    # The middleware's default description repeats the arguments as a Python dict; the person
    # sees them once, as the action every approval shows, under a question.
    assert [q["text"] for q in questions] == [
        "Allow the agent to run write_file?",
        "Allow the agent to run delete_file?",
    ]
    assert asked[0].session == session
    assert asked[0].agent == "langgraph"
    assert ran == [("write_file", {"path": "c.txt", "content": "hi"})]
    results = tool_results(output)
    assert "keep b.txt" in results["call_1"]
    assert output["messages"][-1].content == "done"


def test_approved_unchanged_runs_the_tool_as_called(
    agent: Client, person: Answer, session: str
) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    graph = agent_calling(
        [{"name": "write_file", "args": {"path": "a.txt", "content": "x"}}],
        {"write_file": True},
        ran,
    )
    config = {"configurable": {"thread_id": session}}
    with person(lambda r: {"decision": "approve"}):
        run_with_humans(graph, {"messages": [("user", "write")]}, config, agent)
    assert ran == [("write_file", {"path": "a.txt", "content": "x"})]


def test_respond_only_tools_become_open_questions(
    agent: Client, person: Answer, session: str
) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    graph = agent_calling(
        [{"name": "ask_user", "args": {"question": "Favourite colour?"}}],
        {"ask_user": {"allowed_decisions": ["respond"], "description": "Favourite colour?"}},
        ran,
    )
    config = {"configurable": {"thread_id": session}}
    kinds: list[str] = []

    def decide(record: Record) -> Any:
        kinds.append(record.questions[0]["kind"])
        return {"text": "blue"}

    with person(decide):
        output = run_with_humans(graph, {"messages": [("user", "ask me")]}, config, agent)
    assert kinds == ["open"]
    assert ran == []
    assert tool_results(output) == {"call_0": "blue"}


def test_an_unanswered_request_rejects_and_runs_nothing(
    agent: Client, person: Answer, session: str
) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    graph = agent_calling(
        [{"name": "delete_file", "args": {"path": "all"}}], {"delete_file": True}, ran
    )
    config = {"configurable": {"thread_id": session}}
    with person(lambda r: {"skip": True}):
        output = run_with_humans(graph, {"messages": [("user", "delete")]}, config, agent)
    assert ran == []
    assert "(skipped)" in tool_results(output)["call_0"]


def test_per_call_mode_approves_each_call(agent: Client, person: Answer, session: str) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    graph = agent_calling(
        [{"name": "write_file", "args": {"path": "p.txt", "content": "1"}}],
        {"write_file": {"allowed_decisions": ["approve", "reject"]}},
        ran,
        interrupt_mode="per_call",
    )
    config = {"configurable": {"thread_id": session}}
    asked: list[Record] = []

    def decide(record: Record) -> Any:
        asked.append(record)
        return {"decision": "approve"}

    with person(decide):
        run_with_humans(graph, {"messages": [("user", "write")]}, config, agent)
    assert ran == [("write_file", {"path": "p.txt", "content": "1"})]
    assert asked[0].tool_call_id == "call_0"
    assert asked[0].questions[0]["allow_edit"] is False


class Pick(TypedDict):
    colour: Any
    name: Any
    both: Any


def clarify_shaped_graph() -> Any:
    def ask(state: Pick) -> dict[str, Any]:
        colour = interrupt({"question": "Which colour?", "choices": ["red", "blue"]})
        name = interrupt("Your name?")
        both = interrupt(
            {"questions": [{"id": "x", "question": "X?"}, {"id": "y", "question": "Y?"}]}
        )
        return {"colour": colour, "name": name, "both": both}

    builder = StateGraph(Pick)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=InMemorySaver())


def answer_clarify_shaped(record: Record) -> Any:
    first = record.questions[0]
    if first["kind"] == "single":
        return {"option": "blue"}
    if len(record.questions) == 2:
        return {"answers": {"x": {"text": "1"}, "y": {"text": "2"}}}
    return {"text": "Ada"}


def test_clarify_shaped_interrupts_resume_with_their_answers(
    agent: Client, person: Answer, session: str
) -> None:
    graph = clarify_shaped_graph()
    config = {"configurable": {"thread_id": session}}
    with person(answer_clarify_shaped):
        output = run_with_humans(graph, {"colour": None, "name": None, "both": None}, config, agent)
    assert output["colour"] == "blue"
    assert output["name"] == "Ada"
    assert output["both"]["status"] == "answered"
    assert [q["answer"] for q in output["both"]["questions"]] == ["1", "2"]


def test_asking_again_about_the_same_interrupt_finds_the_same_request(
    agent: Client, alice: Client, session: str
) -> None:
    graph = clarify_shaped_graph()
    config = {"configurable": {"thread_id": session}}
    output = graph.invoke({"colour": None, "name": None, "both": None}, config)
    interrupts = pending_interrupts(graph, output, config)
    first = submit_interrupts(agent, interrupts, config)
    again = submit_interrupts(agent, graph.get_state(config).interrupts, config)
    assert [r.id for r in again] == [r.id for r in first]
    assert resolve_interrupts(agent, interrupts, config, timeout=0) is None
    alice.answer(first[0].id, {"option": "red"})
    resume = resolve_interrupts(agent, interrupts, config, timeout=0)
    assert resume == {interrupts[0].id: "red"}
    assert len(list(agent.list(session=session))) == 1


def test_async_graph_with_async_client(
    server: ClarifyServer, agent_key: str, alice: Client, session: str
) -> None:
    graph = clarify_shaped_graph()
    config = {"configurable": {"thread_id": session}}

    async def main() -> Any:
        async with AsyncClient(server.url, agent_key) as client:
            return await arun_with_humans(
                graph, {"colour": None, "name": None, "both": None}, config, client
            )

    with Person(alice, session, answer_clarify_shaped):
        output = asyncio.run(main())
    assert (output["colour"], output["name"]) == ("blue", "Ada")


def test_request_changes_rejects_the_action_with_the_change_asked_for(
    agent: Client, person: Answer, session: str
) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    graph = agent_calling(
        [{"name": "delete_file", "args": {"path": "ledger.csv"}}],
        {"delete_file": {"allowed_decisions": ["approve", "reject"]}},
        ran,
    )
    config = {"configurable": {"thread_id": session}}

    def decide(record: Record) -> Any:
        return {"answers": {"a1": {"decision": "revise", "reason": "archive it to old/ instead"}}}

    with person(decide):
        output = run_with_humans(graph, {"messages": [("user", "tidy up")]}, config, agent)

    assert ran == []
    results = tool_results(output)
    # LangChain prefixes the message with its own words; the request for changes is in it.
    assert "with reason: Changes requested: archive it to old/ instead" in results["call_0"]
