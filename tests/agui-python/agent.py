"""A real AG-UI agent for the tests: a LangGraph graph whose first node calls `interrupt()`,
served over AG-UI's HTTP + SSE binding by the `ag-ui-langgraph` package (FastAPI, uvicorn).

`python agent.py PORT` serves two agents from one graph and one checkpointer:
`/outcome` finishes an interrupted run with AG-UI 1.0's `outcome.type = "interrupt"` (and takes
`resume[]`), `/legacy` with LangGraph's `on_interrupt` custom event only (and takes
`forwardedProps.command.resume`). The graph asks which region to deploy to; the node after it
keeps the human's payload as `region`, which the final `STATE_SNAPSHOT` shows.
"""

from __future__ import annotations

import sys

import uvicorn
from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
from fastapi import FastAPI
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict


class State(TypedDict, total=False):
    messages: list
    answer: object
    region: str


def ask(state: State) -> State:
    return {"answer": interrupt({"message": "Which region should the cluster run in?"})}


def deploy(state: State) -> State:
    return {"region": str(state.get("answer"))}


def graph():  # type: ignore[no-untyped-def]
    g = StateGraph(State)
    g.add_node("ask", ask)
    g.add_node("deploy", deploy)
    g.add_edge(START, "ask")
    g.add_edge("ask", "deploy")
    g.add_edge("deploy", END)
    return g.compile(checkpointer=MemorySaver())


def main() -> None:
    app = FastAPI()
    add_langgraph_fastapi_endpoint(
        app, LangGraphAgent(name="outcome", graph=graph(), emit_interrupt_outcome=True), "/outcome"
    )
    add_langgraph_fastapi_endpoint(app, LangGraphAgent(name="legacy", graph=graph()), "/legacy")
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")


if __name__ == "__main__":
    main()
