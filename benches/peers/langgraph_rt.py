"""LangGraph's human question on SQLite, one agent: round trips per second.

A graph of one node, `ask`, that calls `interrupt()` with the question, compiled with
`SqliteSaver` (langgraph-checkpoint-sqlite) on a fresh file. One round trip: `invoke` on a new
thread until it stops at the interrupt, then `invoke(Command(resume="yes"))` on the same thread
until the graph ends with the answer in its state. One agent in a loop, in this process, after a
short warm-up.

    python langgraph_rt.py --db PATH [--seconds 5] [--synchronous FULL|NORMAL]

Prints one line, `langgraph: N round trips/s over S s; CPU C µs per round trip
(synchronous=X, journal_mode=Y)` (this process's CPU, user and system), which `peers.py` parses. `--synchronous` sets the pragma on the connection handed to the saver:
without it the connection keeps SQLite's default (FULL in Python's sqlite3), which is what
`SqliteSaver.from_conn_string` gives; NORMAL is the durability clarify's store runs with.
Exits 1, naming the step, when a run does not interrupt or does not end with the answer.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import time
import uuid
from typing import TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

QUESTION = {"question": "Deploy?", "choices": ["yes", "no"]}
ANSWER = "yes"
WARM_UP_SECONDS = 0.5


class State(TypedDict, total=False):
    question: str
    answer: str


def ask(state: State) -> State:
    """The node: asks a person and returns their answer (the resume value)."""
    return {"answer": interrupt({**QUESTION, "question": state["question"]})}


class RoundTripFailed(Exception):
    pass


def round_trip(graph, thread: str) -> None:
    config = {"configurable": {"thread_id": thread}}
    first = graph.invoke({"question": QUESTION["question"]}, config)
    if "__interrupt__" not in first:
        raise RoundTripFailed(f"invoke on thread {thread} ended without interrupting: {first!r}")
    last = graph.invoke(Command(resume=ANSWER), config)
    if last.get("answer") != ANSWER:
        raise RoundTripFailed(f"resume on thread {thread} ended without the answer: {last!r}")


def fresh(path: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        try:
            os.remove(path + suffix)
        except FileNotFoundError:
            pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="the SQLite file (replaced)")
    parser.add_argument("--seconds", type=float, default=5.0, help="measured window")
    parser.add_argument(
        "--synchronous", choices=["FULL", "NORMAL"], help="PRAGMA synchronous (default: SQLite's)"
    )
    args = parser.parse_args()
    fresh(args.db)
    # As SqliteSaver.from_conn_string opens it; the saver serialises access with its own lock.
    conn = sqlite3.connect(args.db, check_same_thread=False)
    try:
        if args.synchronous:
            conn.execute(f"PRAGMA synchronous={args.synchronous}")
        builder = StateGraph(State)
        builder.add_node("ask", ask)
        builder.add_edge(START, "ask")
        builder.add_edge("ask", END)
        graph = builder.compile(checkpointer=SqliteSaver(conn))
        warm_until = time.perf_counter() + WARM_UP_SECONDS
        while time.perf_counter() < warm_until:
            round_trip(graph, uuid.uuid4().hex)
        count = 0
        cpu = time.process_time()
        started = time.perf_counter()
        deadline = started + args.seconds
        while time.perf_counter() < deadline:
            round_trip(graph, uuid.uuid4().hex)
            count += 1
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu
        synchronous = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(
            conn.execute("PRAGMA synchronous").fetchone()[0], "?"
        )
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
    except (RoundTripFailed, sqlite3.Error) as e:
        print(f"langgraph: {e}", file=sys.stderr)
        return 1
    finally:
        conn.close()
    print(
        f"langgraph: {count / elapsed:.1f} round trips/s over {elapsed:.1f} s; "
        f"CPU {cpu * 1e6 / max(count, 1):.0f} µs per round trip "
        f"(synchronous={synchronous}, journal_mode={journal})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
