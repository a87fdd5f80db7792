"""Two containers of the image on one fresh PostgreSQL database, started at the same moment: both
become ready over a schema migrated once; an agent waiting on one is answered through the other;
and one stopped with SIGTERM while agents wait on it hands them over: their long-polls return at
once, still pending, and the clients, polling again on the other replica, get every answer.

The database URL reaches the containers as a mounted secret file (CLARIFY_DB_FILE), the admin
key as another (CLARIFY_ADMIN_KEY_FILE), as compose and Kubernetes give them.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conftest import Api, answer_of, free_port, run

WAIT = 30  # seconds a long-poll may wait; a SIGTERM must end it long before


def secret_files(tmp_path: Path, database_url: str, admin_key: str) -> list[str]:
    options = []
    for name, value in {"database-url": database_url, "admin-key": admin_key}.items():
        path = tmp_path / name
        path.write_text(value + "\n")
        path.chmod(0o644)
        options += ["-v", f"{path}:/run/secrets/{name}:ro"]
    return options


def start_two_at_once(podman, image, tmp_path, database_url, admin_key) -> list[tuple[str, Api]]:
    ports = [free_port(), free_port()]
    options = secret_files(tmp_path, database_url, admin_key)

    def start(port):
        env = {"CLARIFY_LISTEN": f"127.0.0.1:{port}",
               "CLARIFY_DB_FILE": "/run/secrets/database-url",
               "CLARIFY_ADMIN_KEY_FILE": "/run/secrets/admin-key"}
        return podman.start(image, env=env, options=options)

    barrier = threading.Barrier(2)

    def start_together(port):
        barrier.wait()
        return start(port)

    with ThreadPoolExecutor(2) as pool:
        names = list(pool.map(start_together, ports))
    replicas = [(name, Api(f"http://127.0.0.1:{port}", admin_key)) for name, port in zip(names, ports)]
    for name, api in replicas:
        api.wait_ready(describe=lambda name=name: podman.logs(name))
    return replicas


def schema_versions(database_url: str) -> list[int]:
    out = run(["psql", database_url, "-At", "-c", "SELECT version FROM clarify_schema ORDER BY version"]).stdout
    return [int(v) for v in out.split()]


def test_two_replicas_start_together_and_answer_each_others_agents(podman, image, postgres_db, admin_key,
                                                                  tmp_path):
    (a_name, a), (b_name, b) = start_two_at_once(podman, image, tmp_path, postgres_db, admin_key)

    versions = schema_versions(postgres_db)
    assert versions == list(range(1, len(versions) + 1)) and versions, versions
    for name in (a_name, b_name):
        assert json.loads(podman("inspect", name).stdout)[0]["State"]["Running"], podman.logs(name)

    # An agent asks and waits on A; a person answers through B.
    request_id = a.ask("Which replica answers?", ["a", "b"])
    result = {}
    waiter = threading.Thread(target=lambda: result.update(
        record=a.call("GET", f"/v1/requests/{request_id}/wait?timeout_seconds={WAIT}", timeout=WAIT + 10)[1]))
    started = time.monotonic()
    waiter.start()
    time.sleep(0.5)
    b.answer(request_id, "b")
    waiter.join(WAIT + 15)
    assert answer_of(result["record"]) == "b"
    assert time.monotonic() - started < 10, "the waiter on A should wake soon after B's answer"


def test_sigterm_hands_waiting_agents_to_the_other_replica(podman, image, postgres_db, admin_key, tmp_path):
    (a_name, a), (_b_name, b) = start_two_at_once(podman, image, tmp_path, postgres_db, admin_key)
    agents = 4
    ids = [a.ask(f"Question {i}", ["yes", "no"]) for i in range(agents)]
    waiting = threading.Barrier(agents + 1)

    def agent(request_id: str) -> dict:
        """A client that long-polls and, whenever a poll ends without the answer (pending, or the
        replica gone), polls again on the other replica, as a load balancer would send it."""
        replicas = [a, b]
        polls = []
        waiting.wait()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            api = replicas[len(polls) % 2]
            began = time.monotonic()
            try:
                status, record = api.call("GET", f"/v1/requests/{request_id}/wait?timeout_seconds={WAIT}",
                                          timeout=WAIT + 10)
            except OSError:
                status, record = None, {}
            polls.append((api.base, status, round(time.monotonic() - began, 1)))
            if status == 200 and answer_of(record) is not None:
                return {"answer": answer_of(record), "polls": polls}
            time.sleep(0.1)
        return {"answer": None, "polls": polls}

    with ThreadPoolExecutor(agents) as pool:
        futures = [pool.submit(agent, request_id) for request_id in ids]
        waiting.wait()
        time.sleep(1)  # the long-polls are open on A
        stopped = time.monotonic()
        podman("stop", "--time", "25", a_name)
        stop_took = time.monotonic() - stopped
        for i, request_id in enumerate(ids):
            b.answer(request_id, "yes" if i % 2 == 0 else "no")
        outcomes = [f.result(timeout=WAIT + 60) for f in futures]

    assert stop_took < 15, f"SIGTERM took {stop_took:.1f} s: long-polls should end at once"
    state = json.loads(podman("inspect", a_name).stdout)[0]["State"]
    assert state["ExitCode"] == 0, f"A should stop cleanly on SIGTERM:\n{podman.logs(a_name)}"
    for i, outcome in enumerate(outcomes):
        assert outcome["answer"] == ("yes" if i % 2 == 0 else "no"), outcome
        first_poll = outcome["polls"][0]
        assert first_poll[0] == a.base and first_poll[2] < WAIT, \
            f"the poll on A should end when A stops, not after {WAIT} s: {outcome['polls']}"
        assert outcome["polls"][-1][0] == b.base, outcome["polls"]
    # Nothing lost: every request is answered exactly as the person answered it, seen from B.
    for i, request_id in enumerate(ids):
        assert answer_of(b.call("GET", f"/v1/requests/{request_id}")[1]) == ("yes" if i % 2 == 0 else "no")
