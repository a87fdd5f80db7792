"""Answer → workflow resumed, per durable-workflow engine: how long after a person's answer is
accepted (`POST /v1/requests/{id}/answer` returned) a waiting workflow runs again.

- Restate: the Python service of `tests/restate_service.py` on a real Restate server, woken by
  clarify resolving its awakeable through the Restate ingress (the webhook outbox's delivery);
  once answered while the invocation is still open on the service, and once after Restate
  suspended it (the invoker's inactivity timeout set to half a second, the answer given after a
  second and a half), when the answer starts a new attempt that replays the journal.
- DBOS: the worker of `tests/dbos_worker.py` on the local PostgreSQL, woken by its long-poll of
  clarify returning.

Each workflow writes the time it resumed (after `ask` returned) to a file; the figure is that time
less the time the answer's reply arrived, on one machine's clock. Prints the median and p99 of
each engine over `--rounds` requests, one at a time.

    CLARIFY_BIN=... CLARIFY_RESTATE_SERVER=... python bench/durable_workflows.py \\
        [--rounds 100] [--engines restate,dbos]

`CLARIFY_BIN` must accept `resume` (the Restate engine); PostgreSQL at CLARIFY_TEST_POSTGRES,
else postgres@127.0.0.1:5432 (a database of its own, dropped at the end).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "src"), str(HERE.parent / "tests")]

import psycopg  # noqa: E402
from conftest import ClarifyServer  # noqa: E402
from durable_support import pending_one  # noqa: E402
from restate_engine import PythonService, RestateServer  # noqa: E402
from test_dbos import Worker, _postgres_base, _with_database  # noqa: E402

from clarify_hitl import Client  # noqa: E402


def resumed_at(completions: Path, request_id: str, within: float = 30) -> float:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if completions.exists():
            for line in completions.read_text().splitlines():
                fields = line.split()
                if fields[0] == request_id:
                    return float(fields[2])
        time.sleep(0.002)
    raise RuntimeError(f"the workflow of {request_id} did not resume within {within} s")


def answer_and_time(alice: Client, session: str, completions: Path) -> float:
    record = pending_one(alice, session)
    alice.answer(record.id, {"decision": "approve"})
    answered = time.time()
    return resumed_at(completions, record.id) - answered


def summary(name: str, samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p99 = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
    return (
        f"{name}: answer -> workflow resumed, median {statistics.median(ms):.1f} ms, "
        f"p99 {p99:.1f} ms, max {ms[-1]:.1f} ms ({len(ms)} requests)"
    )


def bench_restate(
    clarify: ClarifyServer,
    key: str,
    alice: Client,
    rounds: int,
    directory: Path,
    *,
    suspended: bool,
) -> list[float]:
    directory = directory / ("restate-suspended" if suspended else "restate")
    directory.mkdir()
    env = {"RESTATE_WORKER__INVOKER__INACTIVITY_TIMEOUT": "500ms"} if suspended else {}
    node = RestateServer(Path(os.environ["CLARIFY_RESTATE_SERVER"]), directory, env)
    node.start()
    completions = directory / "completions.txt"
    service = PythonService(
        directory,
        {
            "CLARIFY_URL": clarify.url,
            "CLARIFY_TOKEN": key,
            "CLARIFY_RESTATE_INGRESS": node.ingress,
            "CLARIFY_TEST_COMPLETIONS": str(completions),
        },
    )
    service.start()
    try:
        node.register(service.uri)
        samples = []
        for i in range(rounds):
            session = f"bench-restate-{i}"
            node.send("Deploy", "run", {"build": i, "session": session})
            if suspended:
                pending_one(alice, session)
                time.sleep(1.5)
            samples.append(answer_and_time(alice, session, completions))
        return samples
    finally:
        service.stop()
        node.stop()


def bench_dbos(
    clarify: ClarifyServer, key: str, alice: Client, rounds: int, directory: Path
) -> list[float]:
    admin = _with_database(_postgres_base(), "postgres")
    name = f"clarify_dbos_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
        completions = directory / "dbos-completions.txt"
        worker = Worker(
            {
                "CLARIFY_URL": clarify.url,
                "CLARIFY_TOKEN": key,
                "CLARIFY_TEST_DBOS_URL": _with_database(admin, name),
                "CLARIFY_TEST_COMPLETIONS": str(completions),
            },
            directory / "worker.log",
        )
        try:
            samples = []
            sessions = [f"bench-dbos-{i}" for i in range(rounds)]
            # One worker, started with every workflow: each asks at once, and the requests are
            # answered one at a time.
            worker.start(
                *(f"wf-{i}-{uuid.uuid4().hex[:6]}:{i}:{s}" for i, s in enumerate(sessions))
            )
            for session in sessions:
                samples.append(answer_and_time(alice, session, completions))
            return samples
        finally:
            worker.stop()
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--suspended-rounds", type=int, default=40)
    parser.add_argument("--engines", default="restate,dbos", help="restate, dbos or both")
    args = parser.parse_args()
    engines = args.engines.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        clarify = ClarifyServer(Path(os.environ["CLARIFY_BIN"]), directory)
        clarify.start()
        try:
            key = clarify.key("agent", "bench-agent")
            with Client(clarify.url, clarify.key("responder", "alice")) as alice:
                if "restate" in engines:
                    samples = bench_restate(
                        clarify, key, alice, args.rounds, directory, suspended=False
                    )
                    print(summary("Restate, invocation open", samples), flush=True)
                    samples = bench_restate(
                        clarify, key, alice, args.suspended_rounds, directory, suspended=True
                    )
                    print(summary("Restate, invocation suspended", samples), flush=True)
                if "dbos" in engines:
                    samples = bench_dbos(clarify, key, alice, args.rounds, directory)
                    print(summary("DBOS (PostgreSQL)", samples), flush=True)
        finally:
            clarify.stop()


if __name__ == "__main__":
    main()
