"""clarify against two peers on this machine, in one run: rounds alternating which side goes first.

`scripts/bench-peers` builds clarify's two benchmark binaries, makes the virtual environment with
the pinned peers (requirements.txt) and runs this driver with it:

    python peers.py --http-bench PATH --store-bench PATH --repo DIR --scratch DIR
                    [--rounds 3] [--parts http,store]

Two comparisons, each round measuring both sides of each, one after the other:

- `http`: HTTP ask+answer on SQLite. clarify: `cargo bench -p clarify --bench http --
  roundtrip` (32 clients with keep-alive creating a request and answering it, a fresh file and
  server, 10 s after 1 s of warm-up), its `roundtrip sqlite, 32 clients: N ask+answer round
  trips/s` line. awaithumans: `awaithumans_rt.py` (create, complete as the reviewer, the agent's
  poll seeing the answer) with 1 and with 16 clients, each against a fresh `awaithumans serve`
  on a fresh file, 10 s after 1 s of warm-up; its figure is the better of the two.
- `store`: the Rust API on SQLite, one agent. clarify: `cargo bench -p clarify-store --bench
  store -- sqlite-1 bare-sqlite` (the store's create, answer and wait, durable on SQLite, 3 s;
  and the bare loop of the same writes with one commit per write, the limit the store cannot
  pass). LangGraph: `langgraph_rt.py` (a one-node graph that interrupts, on `SqliteSaver`, run
  until it interrupts and resumed to the end, 5 s) in a process of its own, with SQLite's
  default `synchronous` (FULL) and with NORMAL, the durability clarify's store runs with.

Prints each reading and the load average (/proc/loadavg) as each round starts and ends, then
each figure's mean and range, and each ratio as clarify / peer of the means with the range of
the per-round ratios. The benchmark binaries are run as `cargo bench` runs them (from their
package's directory, with `--bench` and the names), so their lines are the same. Exits 1 naming
the step when a run fails; the awaithumans server's log is printed then (its errors counted and
its last lines). A failed awaithumans run is reported and left out of its best-of; the other
readings go on, and the driver exits 1 at the end.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import awaithumans_rt

HERE = Path(__file__).resolve().parent
AWAITHUMANS_CLIENTS = (1, 16)
AWAITHUMANS_SECONDS = 10.0
LANGGRAPH_SECONDS = 5.0
LOG_TAIL_LINES = 40


class Failed(Exception):
    """A measurement failed; the message says which and why."""


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run_bench(binary: str, cwd: Path, names: list[str], what: str) -> str:
    """Runs a benchmark binary as `cargo bench -- NAMES` does; its output, echoed indented."""
    # A process group of its own, so that the `clarify serve` it starts goes with it when this
    # driver is stopped half-way.
    try:
        child = subprocess.Popen(
            [binary, *names, "--bench"], cwd=cwd, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True,
        )
    except OSError as e:
        raise Failed(f"{what}: cannot run {binary}: {e}") from e
    try:
        stdout, stderr = child.communicate()
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGTERM)
            child.wait()
    for line in stdout.splitlines():
        print(f"    | {line}", flush=True)
    if child.returncode != 0:
        raise Failed(f"{what} exited with {child.returncode}:\n{stdout}{stderr}")
    return stdout


def parse(pattern: str, text: str, what: str) -> re.Match:
    found = re.search(pattern, text, re.MULTILINE)
    if found is None:
        raise Failed(f"{what}: no line matching {pattern!r} in:\n{text}")
    return found


def server_log(log: Path, tail: int = LOG_TAIL_LINES) -> str:
    """The awaithumans server's log for a failed run: its errors counted by their last line
    (a traceback's exception), then its last `tail` lines."""
    if not log.exists():
        return f"  ({log}: no log)"
    lines = log.read_text(errors="replace").splitlines()
    errors: dict[str, int] = {}
    for line in lines:
        if "QueuePool limit" in line:
            line = line[line.index("QueuePool limit"):][:120]
        elif not re.match(r"^[\w.]+(Error|Exception|Timeout)\b", line):
            continue
        errors[line[:200]] = errors.get(line[:200], 0) + 1
    counted = "".join(f"  {n} × {line}\n" for line, n in errors.items()) or "  (none)\n"
    shown = "\n".join(lines[-tail:])
    return (f"  --- {log}: {len(lines)} lines; errors:\n{counted}"
            f"  --- its last {min(tail, len(lines))} lines ---\n{shown}\n  --- end of {log} ---")


@dataclass
class Round:
    index: int
    clarify_first: bool
    load_start: str = ""
    load_end: str = ""
    # HTTP
    clarify_http: float | None = None
    clarify_http_cpu_us: float | None = None
    awaithumans: dict[int, awaithumans_rt.Load] = field(default_factory=dict)
    # Store
    clarify_store: float | None = None
    clarify_store_one_thread: float | None = None
    bare_sqlite: float | None = None
    bare_sqlite_64: float | None = None
    langgraph: dict[str, float] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def awaithumans_best(self) -> tuple[float, int] | None:
        if not self.awaithumans:
            return None
        clients, load = max(self.awaithumans.items(), key=lambda item: item[1].per_second)
        return load.per_second, clients


class Driver:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.venv_bin = Path(sys.executable).parent
        self.scratch = Path(args.scratch)

    def clarify_http(self, r: Round) -> None:
        out = run_bench(
            self.args.http_bench, self.args.repo / "crates/clarify", ["roundtrip"],
            "cargo bench -p clarify --bench http -- roundtrip",
        )
        found = parse(
            r"^roundtrip sqlite, 32 clients: (\d+) ask\+answer round trips/s.*?"
            r"server CPU (\d+) µs per round trip", out, "clarify http roundtrip",
        )
        r.clarify_http, r.clarify_http_cpu_us = float(found[1]), float(found[2])
        print(f"  clarify HTTP, 32 clients: {r.clarify_http:.0f} round trips/s "
              f"(server CPU {r.clarify_http_cpu_us:.0f} µs each)", flush=True)

    def awaithumans(self, r: Round) -> None:
        for clients in AWAITHUMANS_CLIENTS:
            dir = self.scratch / f"round{r.index}-awaithumans-{clients}"
            plural = "s" if clients > 1 else ""
            try:
                load = awaithumans_rt.round_trips(self.venv_bin, dir, clients, AWAITHUMANS_SECONDS)
            except (awaithumans_rt.Failed, OSError) as e:
                # The peer failing under load is a reading too: the other client count may still
                # give its figure. The run exits 1 at the end.
                failure = f"round {r.index}, awaithumans with {clients} client{plural}: {e}"
                r.failures.append(failure)
                print(f"  FAILED: {failure}\n{server_log(dir / 'serve.log')}", flush=True)
                continue
            r.awaithumans[clients] = load
            print(f"  awaithumans, {clients} client{plural}: "
                  f"{load.per_second:.1f} round trips/s over {load.elapsed:.1f} s "
                  f"(server CPU {load.server_cpu_us:.0f} µs each, {load.server_cores:.2f} cores; "
                  f"load generator {load.client_cores:.2f} cores; "
                  f"round trip p50 {load.p50_ms:.1f} ms, p99 {load.p99_ms:.1f} ms, "
                  f"max {load.max_ms:.0f} ms)", flush=True)

    def clarify_store(self, r: Round) -> None:
        out = run_bench(
            self.args.store_bench, self.args.repo / "crates/clarify-store",
            ["sqlite-1", "bare-sqlite"],
            "cargo bench -p clarify-store --bench store -- sqlite-1 bare-sqlite",
        )
        what = "clarify store sqlite-1"
        r.clarify_store = float(parse(r"^sqlite: (\d+) round trips/s, 1 agent \(", out, what)[1])
        r.clarify_store_one_thread = float(parse(
            r"^sqlite: (\d+) round trips/s, 1 agent, current-thread runtime", out, what)[1])
        r.bare_sqlite = float(parse(
            r"^bare-sqlite: (\d+) round trips/s, one commit per write", out, what)[1])
        r.bare_sqlite_64 = float(parse(
            r"^bare-sqlite: (\d+) round trips/s, 64 writes per commit", out, what)[1])
        print(f"  clarify store, 1 agent: {r.clarify_store:.0f} round trips/s "
              f"({r.clarify_store_one_thread:.0f} on one thread); bare SQLite loop "
              f"{r.bare_sqlite:.0f} (one commit per write), store / bare "
              f"{r.clarify_store / r.bare_sqlite * 1e2:.0f} %", flush=True)

    def langgraph(self, r: Round) -> None:
        for synchronous in ("FULL", "NORMAL"):
            db = self.scratch / f"round{r.index}-langgraph-{synchronous.lower()}.db"
            done = subprocess.run(
                [sys.executable, str(HERE / "langgraph_rt.py"), "--db", str(db),
                 "--seconds", str(LANGGRAPH_SECONDS), "--synchronous", synchronous],
                capture_output=True, text=True, check=False,
            )
            if done.returncode != 0:
                raise Failed(f"langgraph_rt.py (synchronous={synchronous}) exited with "
                             f"{done.returncode}:\n{done.stdout}{done.stderr}")
            found = parse(r"^langgraph: ([\d.]+) round trips/s.*?CPU (\d+) µs", done.stdout,
                          f"langgraph synchronous={synchronous}")
            rate = float(found[1])
            r.langgraph[synchronous] = rate
            print(f"  LangGraph + SqliteSaver, 1 agent, synchronous={synchronous}: "
                  f"{rate:.1f} round trips/s (CPU {found[2]} µs each)", flush=True)

    def round(self, index: int) -> Round:
        r = Round(index=index, clarify_first=index % 2 == 1)
        r.load_start = loadavg()
        print(f"round {index} ({'clarify' if r.clarify_first else 'the peer'} first in each pair), "
              f"load average {r.load_start}", flush=True)
        pairs = []
        if "http" in self.args.parts:
            pairs.append((self.clarify_http, self.awaithumans))
        if "store" in self.args.parts:
            pairs.append((self.clarify_store, self.langgraph))
        for ours, theirs in pairs:
            for step in (ours, theirs) if r.clarify_first else (theirs, ours):
                step(r)
        r.load_end = loadavg()
        print(f"  load average at the end of round {index}: {r.load_end}", flush=True)
        return r


def span(values: list[float], digits: int = 0) -> str:
    """`mean [min–max]`."""
    fmt = f"{{:.{digits}f}}"
    return f"{fmt.format(statistics.mean(values))} [{fmt.format(min(values))}–{fmt.format(max(values))}]"


def ratio(ours: list[float], theirs: list[float]) -> str:
    """Ratio of the means, with the range of the per-round ratios."""
    per_round = [a / b for a, b in zip(ours, theirs)]
    return (f"{statistics.mean(ours) / statistics.mean(theirs):.1f}× "
            f"(per round {min(per_round):.1f}–{max(per_round):.1f}×)")


def summary(rounds: list[Round]) -> None:
    print(f"\nsummary, {len(rounds)} rounds (mean [range]); load average per round: "
          + "; ".join(f"{r.index}: {r.load_start} → {r.load_end}" for r in rounds))
    if all(r.clarify_http is not None for r in rounds) and rounds:
        clarify = [r.clarify_http for r in rounds]
        best = [r.awaithumans_best() for r in rounds]
        print(f"HTTP ask+answer on SQLite: clarify, 32 clients: {span(clarify)} round trips/s, "
              f"server CPU {span([r.clarify_http_cpu_us for r in rounds])} µs each")
        for clients in AWAITHUMANS_CLIENTS:
            loads = [r.awaithumans[clients] for r in rounds if clients in r.awaithumans]
            failed = len(rounds) - len(loads)
            note = f" ({failed} of {len(rounds)} runs failed)" if failed else ""
            if not loads:
                print(f"  awaithumans 0.1.12, {clients} clients: every run failed")
                continue
            print(f"  awaithumans 0.1.12, {clients} client{'s' if clients > 1 else ''}: "
                  f"{span([l.per_second for l in loads], 1)} round trips/s, server CPU "
                  f"{span([l.server_cpu_us for l in loads])} µs each{note}")
        measured = [(r, b) for r, b in zip(rounds, best) if b is not None]
        if measured:
            ours = [r.clarify_http for r, _ in measured]
            theirs = [b[0] for _, b in measured]
            wins = ", ".join(f"{c} client{'s' if c > 1 else ''} in {n} of {len(measured)} rounds"
                             for c in AWAITHUMANS_CLIENTS
                             if (n := sum(1 for _, b in measured if b[1] == c)))
            print(f"  awaithumans, best of 1 and 16 clients: {span(theirs, 1)} round trips/s "
                  f"(the better: {wins})")
            print(f"  clarify / awaithumans: {ratio(ours, theirs)}"
                  + (f", over the {len(measured)} rounds awaithumans gave a figure"
                     if len(measured) < len(rounds) else ""))
    if all(r.clarify_store is not None for r in rounds) and rounds:
        store = [r.clarify_store for r in rounds]
        bare = [r.bare_sqlite for r in rounds]
        print(f"Rust API on SQLite, 1 agent: clarify's store: {span(store)} round trips/s "
              f"({span([r.clarify_store_one_thread for r in rounds])} on one thread)")
        print(f"  bare SQLite loop of the same writes, one commit per write: {span(bare)} "
              f"round trips/s; store / bare {span([s / b * 1e2 for s, b in zip(store, bare)])} %; "
              f"64 writes per commit: {span([r.bare_sqlite_64 for r in rounds])}")
        for synchronous in ("FULL", "NORMAL"):
            theirs = [r.langgraph[synchronous] for r in rounds]
            print(f"  LangGraph + SqliteSaver, synchronous={synchronous}: {span(theirs, 1)} "
                  f"round trips/s; clarify / LangGraph: {ratio(store, theirs)}; "
                  f"LangGraph / bare {span([t / b * 1e2 for t, b in zip(theirs, bare)], 2)} %")
    if all(r.clarify_http is not None for r in rounds) and rounds:
        bare64 = [r.bare_sqlite_64 for r in rounds if r.bare_sqlite_64]
        if len(bare64) == len(rounds):
            print(f"  clarify HTTP (32 clients, commits grouped) / bare SQLite loop with 64 writes "
                  f"per commit (the limit grouped commits cannot pass): "
                  f"{span([r.clarify_http / b * 1e2 for r, b in zip(rounds, bare64)])} %")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--http-bench", required=True, help="the built `http` bench binary")
    parser.add_argument("--store-bench", required=True, help="the built `store` bench binary")
    parser.add_argument("--repo", required=True, type=Path, help="the clarify checkout")
    parser.add_argument("--scratch", required=True, help="a directory for the peers' files")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--parts", default="http,store", help="a subset of http,store")
    args = parser.parse_args()
    args.http_bench = os.path.abspath(args.http_bench)
    args.store_bench = os.path.abspath(args.store_bench)
    args.parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    if not args.parts or args.parts - {"http", "store"}:
        parser.error(f"--parts: expected a subset of http,store, not {','.join(sorted(args.parts))}")
    print(f"bench-peers: {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, "
          f"{os.cpu_count()} CPUs, load average {loadavg()}; awaithumans serve: one uvicorn "
          f"worker (its default), SQLite; LangGraph: SqliteSaver", flush=True)
    # A TERM (scripts/bench-peers forwards its own) unwinds, so that the servers are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    driver = Driver(args)
    rounds = []
    try:
        for index in range(1, args.rounds + 1):
            rounds.append(driver.round(index))
    except Failed as e:
        print(f"bench-peers: {e}", file=sys.stderr)
        return 1
    summary(rounds)
    failures = [f for r in rounds for f in r.failures]
    for failure in failures:
        print(f"bench-peers: failed: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
