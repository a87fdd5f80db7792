/**
 * `ask` from `@clarify-hitl/client/restate` against a real Restate server (the pinned npm
 * package's binary, `CLARIFY_RESTATE_SERVER`, which scripts/test sets from
 * scripts/restate-server) and a real `clarify serve`: the service of `restate-service.ts` asks, a
 * person answers through the API, and clarify resolves the handler's awakeable through the
 * Restate ingress. Each test checks what the handler returned, how many requests exist for it,
 * and how often the handler got past its wait.
 */

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import type { Client, RequestRecord } from "@clarify-hitl/client";

import { delay, freePort, Server, uniqueSession } from "./support.js";

const restateBin = process.env["CLARIFY_RESTATE_SERVER"];
const missing =
  restateBin === undefined || restateBin === "" || !existsSync(restateBin)
    ? "no Restate server: set CLARIFY_RESTATE_SERVER to a restate-server binary (scripts/restate-server installs the pinned one)"
    : undefined;
if (missing !== undefined && process.env["CLARIFY_REQUIRE_SERVICES"] === "1") {
  throw new Error(missing);
}

async function until(what: string, ready: () => Promise<boolean>, child: ChildProcess, log: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited: ${readFileSync(log, "utf8").slice(-3000)}`);
    try {
      if (await ready()) return;
    } catch {
      // Not listening yet.
    }
    await delay(100);
  }
  throw new Error(`${what} was not ready within 60 s: ${readFileSync(log, "utf8").slice(-3000)}`);
}

async function kill(child: ChildProcess | undefined, signal: "SIGKILL" | "SIGTERM"): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill(signal);
  await exited;
}

/** One Restate node on free ports of 127.0.0.1, its state in a folder of its own. */
class RestateNode {
  readonly ingress: string;
  readonly admin: string;
  #child: ChildProcess | undefined;

  constructor(
    readonly dir: string,
    readonly ports: { ingress: number; admin: number; node: number },
  ) {
    this.ingress = `http://127.0.0.1:${ports.ingress}`;
    this.admin = `http://127.0.0.1:${ports.admin}`;
  }

  async start(): Promise<void> {
    const log = join(this.dir, "restate.log");
    const out = openSync(log, "a");
    const child = spawn(String(restateBin), ["--base-dir", join(this.dir, "state"), "--no-logo", "--listen-mode", "tcp"], {
      env: {
        ...process.env,
        RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${this.ports.ingress}`,
        RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${this.ports.admin}`,
        RESTATE_BIND_ADDRESS: `127.0.0.1:${this.ports.node}`,
        RESTATE_ADVERTISED_ADDRESS: `http://127.0.0.1:${this.ports.node}`,
        RESTATE_DISABLE_TELEMETRY: "true",
        RESTATE_DEFAULT_NUM_PARTITIONS: "1",
        RESTATE_ROCKSDB_TOTAL_MEMORY_SIZE: "256MiB",
        RESTATE_LOG_DISABLE_ANSI_CODES: "true",
        NO_COLOR: "1",
      },
      stdio: ["ignore", out, out],
    });
    this.#child = child;
    await until(
      "restate-server",
      async () => {
        const probe = { signal: AbortSignal.timeout(2000) };
        return (await fetch(`${this.admin}/health`, probe)).ok && (await fetch(`${this.ingress}/restate/health`, probe)).ok;
      },
      child,
      log,
    );
  }

  async kill(): Promise<void> {
    await kill(this.#child, "SIGKILL");
  }

  async stop(): Promise<void> {
    await kill(this.#child, "SIGTERM");
  }

  async register(uri: string): Promise<void> {
    const response = await fetch(`${this.admin}/deployments`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ uri, force: true }),
    });
    if (!response.ok) throw new Error(`registering ${uri}: ${response.status} ${await response.text()}`);
  }

  async send(body: unknown): Promise<string> {
    const response = await fetch(`${this.ingress}/DeployTs/run/send`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    assert.equal(response.status, 202, await response.clone().text());
    return ((await response.json()) as { invocationId: string }).invocationId;
  }

  /** The ingress's answer once the invocation completes (its attach), success or not. */
  async attachResponse(invocation: string, timeoutMs = 90_000): Promise<Response> {
    return await fetch(`${this.ingress}/restate/invocation/${invocation}/attach`, {
      signal: AbortSignal.timeout(timeoutMs),
    });
  }

  /** The invocation's result, once it completes. */
  async attach(invocation: string): Promise<HandlerResult> {
    const response = await this.attachResponse(invocation);
    assert.equal(response.status, 200, await response.clone().text());
    return (await response.json()) as HandlerResult;
  }
}

interface HandlerResult {
  request_id: string;
  status: string;
  decision: string | null;
  reason: string | null;
  note: string | null;
}

/** `restate-service.js` in a process of its own, restartable on its port. */
class TsService {
  readonly uri: string;
  #child: ChildProcess | undefined;

  constructor(
    readonly dir: string,
    readonly port: number,
    readonly env: NodeJS.ProcessEnv,
  ) {
    this.uri = `http://127.0.0.1:${port}`;
  }

  async start(): Promise<void> {
    const log = join(this.dir, "service.log");
    const out = openSync(log, "a");
    const script = join(dirname(fileURLToPath(import.meta.url)), "restate-service.js");
    const child = spawn(process.execPath, [script], {
      env: { ...process.env, ...this.env, PORT: String(this.port) },
      stdio: ["ignore", out, out],
    });
    this.#child = child;
    // The Restate SDK serves HTTP/2 only, which fetch does not speak: the service says when it
    // listens.
    await until("the TypeScript Restate service", async () => /^ready$/m.test(readFileSync(log, "utf8")), child, log);
  }

  async kill(): Promise<void> {
    await kill(this.#child, "SIGKILL");
  }
}

describe("Restate", { skip: missing }, () => {
  let dir = "";
  let clarify: Server;
  let node: RestateNode;
  let service: TsService;
  let alice: Client;
  let completions = "";

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "clarify-restate-"));
    completions = join(dir, "completions.txt");
    // Restate's ingress is on 127.0.0.1, which the outbound guard refuses unless allowed; a
    // short first retry keeps the engine-down test short.
    clarify = await Server.start(["--outbound-allow", "127.0.0.0/8", "--webhook-first-retry", "1s"]);
    alice = clarify.alice();
    node = new RestateNode(dir, { ingress: await freePort(), admin: await freePort(), node: await freePort() });
    await node.start();
    service = new TsService(dir, await freePort(), {
      CLARIFY_URL: clarify.url,
      CLARIFY_TOKEN: clarify.adminKey,
      CLARIFY_RESTATE_INGRESS: node.ingress,
      CLARIFY_TEST_COMPLETIONS: completions,
    });
    await service.start();
    await node.register(service.uri);
  });

  after(async () => {
    await service?.kill();
    await node?.stop();
    await clarify?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function pendingOne(session: string): Promise<RequestRecord> {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const pending: RequestRecord[] = [];
      for await (const record of alice.list({ status: "pending", session })) pending.push(record);
      if (pending.length > 0) {
        assert.equal(pending.length, 1);
        return pending[0] as RequestRecord;
      }
      await delay(50);
    }
    throw new Error(`the handler asked nothing in session ${session} within 30 s`);
  }

  async function requestIds(session: string): Promise<string[]> {
    const ids: string[] = [];
    for await (const record of alice.list({ session })) ids.push(record.id);
    return ids;
  }

  function completed(requestId: string): string[] {
    const lines = existsSync(completions) ? readFileSync(completions, "utf8").split("\n") : [];
    return lines
      .filter((line) => line.split(" ")[0] === requestId)
      .map((line) => line.split(" ").slice(0, 2).join(" "));
  }

  interface Delivery {
    status: string;
    attempts: { status_code?: number | null }[];
  }

  async function deliveries(requestId: string): Promise<Delivery[]> {
    const response = await fetch(`${clarify.url}/v1/requests/${requestId}/deliveries`, {
      headers: { authorization: `Bearer ${clarify.adminKey}` },
    });
    assert.equal(response.status, 200);
    return ((await response.json()) as { deliveries: Delivery[] }).deliveries;
  }

  test("an approval reaches the handler", async () => {
    const session = uniqueSession("restate-ts");
    const invocation = await node.send({ build: 481, session });
    const record = await pendingOne(session);
    assert.equal(record.agent, "restate");
    assert.deepEqual(record.questions[0]?.action, { name: "deploy", arguments: { build: 481 } });
    const resume = (record as unknown as { resume: { restate: { ingress: string; awakeable: string } } }).resume;
    assert.equal(resume.restate.ingress, node.ingress);
    assert.ok(resume.restate.awakeable);

    await alice.answer(record.id, { decision: "approve" });
    const result = await node.attach(invocation);
    assert.deepEqual([result.request_id, result.status, result.decision], [record.id, "answered", "approve"]);
    assert.deepEqual(completed(record.id), [`${record.id} answered`]);
  });

  test("a denial reaches the handler with its reason", async () => {
    const session = uniqueSession("restate-ts");
    const invocation = await node.send({ build: 482, session });
    const record = await pendingOne(session);
    await alice.answer(record.id, { decision: "deny", reason: "not on Fridays" });
    const result = await node.attach(invocation);
    assert.deepEqual([result.status, result.decision, result.reason], ["answered", "deny", "not on Fridays"]);
  });

  test("the service killed while waiting resumes on the same request", async () => {
    const session = uniqueSession("restate-ts");
    const invocation = await node.send({ build: 483, session });
    const record = await pendingOne(session);

    await service.kill();
    await delay(500);
    await service.start();
    // Restate retries the invocation on the restarted service, which replays its journal: the
    // create step's result is there, so nothing is asked again.
    await delay(2000);
    await alice.answer(record.id, { decision: "approve" });

    const result = await node.attach(invocation);
    assert.deepEqual([result.request_id, result.decision], [record.id, "approve"]);
    assert.deepEqual(await requestIds(session), [record.id]);
    assert.deepEqual(completed(record.id), [`${record.id} answered`]);
  });

  test("Restate down when the answer is given gets it once it is back", async () => {
    const session = uniqueSession("restate-ts");
    const invocation = await node.send({ build: 484, session });
    const record = await pendingOne(session);

    await node.kill();
    await alice.answer(record.id, { decision: "approve" });
    const deadline = Date.now() + 30_000;
    let failed = 0;
    while (Date.now() < deadline && failed < 2) {
      const found = await deliveries(record.id);
      failed = found.flatMap((d) => d.attempts).filter((a) => a.status_code !== 202).length;
      await delay(200);
    }
    // Refused while the ingress is down, and tried again.
    assert.ok(failed >= 2, JSON.stringify(await deliveries(record.id)));

    await node.start();
    const result = await node.attach(invocation);
    assert.deepEqual([result.request_id, result.decision], [record.id, "approve"]);
    assert.deepEqual(await requestIds(session), [record.id]);
    assert.deepEqual(completed(record.id), [`${record.id} answered`]);
    // clarify marks the delivery once the ingress's reply is in, which may be after the handler
    // finished.
    let found = await deliveries(record.id);
    for (const until = Date.now() + 10_000; found[0]?.status === "pending" && Date.now() < until; ) {
      await delay(100);
      found = await deliveries(record.id);
    }
    assert.equal(found.length, 1);
    assert.equal(found[0]?.status, "delivered");
    assert.equal(found[0]?.attempts.at(-1)?.status_code, 202);
  });

  test("a create clarify refuses fails the invocation instead of being retried", async () => {
    const session = uniqueSession("restate-ts");
    const invocation = await node.send({ build: 487, session, timeout_seconds: -5 });
    // Restate's TerminalError, loaded by the adapter from the peer dependency, ends it at once.
    const response = await node.attachResponse(invocation, 30_000);
    assert.ok(response.status >= 400, `status ${response.status}`);
    assert.match(await response.text(), /clarify refused the request/);
    assert.deepEqual(await requestIds(session), []);
  });

  test("an expired request reaches the handler as expired", async () => {
    const session = uniqueSession("restate-ts");
    const invocation = await node.send({ build: 485, session, timeout_seconds: 1 });
    const record = await pendingOne(session);
    const result = await node.attach(invocation);
    assert.deepEqual([result.request_id, result.status, result.decision], [record.id, "expired", null]);
    assert.ok(result.note);
  });
});
