/** The client against a real `clarify serve`: every method, its errors, and its waits. */

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, request as httpRequest, type Server as HttpServer } from "node:http";
import { after, before, describe, test } from "node:test";

import { ClarifyError, type ClarifyEvent, Client, isOutcome, type RequestRecord } from "@clarify-hitl/client";

import { answerNext, delay, freePort, Server, uniqueSession } from "./support.js";

let server: Server;

before(async () => {
  server = await Server.start();
});

after(async () => {
  await server?.close();
});

describe("ask and answer", () => {
  test("ask waits for the person's answer and returns the outcome", async () => {
    const session = uniqueSession("ask");
    const asked = server.agent().ask({
      question: "Which database should the service use?",
      choices: ["Postgres (recommended)", "SQLite"],
      session,
    });
    const { record } = await answerNext(server.alice(), { session }, { option: "postgres" });
    assert.deepEqual(
      record.questions[0]?.options?.map((o) => o.label),
      ["Postgres", "SQLite"],
    );
    assert.equal(record.questions[0]?.recommended, "postgres");
    const outcome = await asked;
    assert.equal(outcome.status, "answered");
    assert.equal(outcome.answered_by, "alice");
    assert.equal(outcome.questions[0]?.answer, "Postgres");
    assert.equal(outcome.questions[0]?.mode, "option");
  });

  test("get returns the record with its outcome once resolved", async () => {
    const agent = server.agent();
    const created = await agent.create({ question: "Ship it?", choices: ["yes", "no"], tags: ["release"] });
    assert.equal(created.status, "pending");
    assert.deepEqual(created.tags, ["release"]);
    assert.match(created.answer_url ?? "", /\/a\//);
    await server.alice().answer(created.id, { answers: { q1: { other: "tomorrow" } } });
    const record = await agent.get(created.id);
    assert.equal(record.status, "answered");
    assert.equal(record.outcome?.questions[0]?.answer, "tomorrow");
    assert.equal(record.outcome?.questions[0]?.mode, "other");
  });

  test("an approval comes back with its decision, scope and reason", async () => {
    const agent = server.agent();
    const created = await agent.create({
      questions: [
        {
          kind: "approval",
          text: "Drop the staging database?",
          action: { name: "drop_db", arguments: { name: "staging" } },
          scopes: ["once", "session"],
        },
      ],
    });
    await server.alice().answer(created.id, { decision: "deny", reason: "it is in use" });
    const record = await agent.wait(created.id);
    assert.equal(record.outcome?.questions[0]?.decision, "deny");
    assert.equal(record.outcome?.questions[0]?.reason, "it is in use");
  });

  test("a skip resolves the request as skipped, with a note for the model", async () => {
    const agent = server.agent();
    const created = await agent.create({ question: "Anything to add?" });
    const outcome = await server.alice().skip(created.id);
    assert.equal(outcome.status, "skipped");
    assert.ok((outcome.note ?? "").length > 0);
  });
});

describe("errors", () => {
  test("an unknown id is ClarifyError not_found 404", async () => {
    const error = await rejection(server.agent().get("no-such-request"));
    assert.equal(error.code, "not_found");
    assert.equal(error.status, 404);
  });

  test("an answer that does not fit is 422 and the request stays pending", async () => {
    const agent = server.agent();
    const created = await agent.create({ question: "Pick one", choices: ["a", "b"] });
    const error = await rejection(server.alice().answer(created.id, { option: "c" }));
    assert.equal(error.status, 422);
    assert.match(error.message, /c/);
    assert.equal((await agent.get(created.id)).status, "pending");
    const outcome = await server.alice().answer(created.id, { option: "b" });
    assert.ok(isOutcome(outcome));
    assert.equal(outcome.questions[0]?.answer, "b");
  });

  test("a quorum vote comes back as the pending record, the deciding one as the outcome", async () => {
    const created = await server.agent().create({
      questions: [{ text: "Rotate keys?", kind: "approval", action: { name: "rotate_keys", arguments: {} } }],
      approvals_required: 2,
    });
    const counted = await server.alice().answer(created.id, { decision: "approve" });
    assert.ok(!isOutcome(counted));
    assert.equal(counted.status, "pending");
    assert.deepEqual(counted.votes?.map((v) => v.by), ["alice"]);
    const again = await rejection(server.alice().answer(created.id, { decision: "approve" }));
    assert.equal(again.status, 409);
    assert.equal(again.code, "already_voted");
    const decided = await server.agent().answer(created.id, { decision: "approve" });
    assert.ok(isOutcome(decided));
    assert.equal(decided.status, "answered");
    assert.equal(decided.votes?.length, 2);
  });

  test("a second answer is 409 already_resolved, carrying the first resolution", async () => {
    const created = await server.agent().create({ question: "Pick one", choices: ["a", "b"] });
    await server.alice().answer(created.id, { option: "a" });
    const error = await rejection(server.alice().answer(created.id, { option: "b" }));
    assert.equal(error.status, 409);
    assert.equal(error.code, "already_resolved");
    assert.equal(error.record?.outcome?.questions[0]?.answer, "a");
    assert.equal(error.record?.outcome?.answered_by, "alice");
  });

  test("a wrong key is 401 with a message saying how to get one", async () => {
    const client = new Client({ url: server.url, token: "ck_wrong" });
    const error = await rejection(client.get("anything"));
    assert.equal(error.status, 401);
    assert.match(error.message, /CLARIFY_TOKEN/);
  });

  test("a responder may not create: 403", async () => {
    const error = await rejection(server.alice().create({ question: "May I?" }));
    assert.equal(error.status, 403);
  });

  test("nothing listening is `unreachable` at once, not retried", async () => {
    const client = new Client({ url: `http://127.0.0.1:${await freePort()}`, token: "ck_x" });
    const started = Date.now();
    const error = await rejection(client.create({ question: "Anyone?" }));
    assert.equal(error.code, "unreachable");
    assert.equal(error.status, null);
    assert.equal(error.sent, false);
    assert.match(error.message, /clarify serve/);
    assert.ok(Date.now() - started < 2_000, "a create nobody received is not retried");
  });

  test("the client reads CLARIFY_URL and CLARIFY_TOKEN", async () => {
    const saved = { url: process.env["CLARIFY_URL"], token: process.env["CLARIFY_TOKEN"] };
    process.env["CLARIFY_URL"] = `${server.url}/`;
    process.env["CLARIFY_TOKEN"] = server.adminKey;
    try {
      const client = new Client();
      assert.equal(client.url, server.url);
      const created = await client.create({ question: "From the environment?" });
      assert.equal(created.status, "pending");
    } finally {
      restoreEnv("CLARIFY_URL", saved.url);
      restoreEnv("CLARIFY_TOKEN", saved.token);
    }
  });
});

describe("create", () => {
  test("the same idempotency key returns the original request, whatever its status", async () => {
    const agent = server.agent();
    const key = uniqueSession("key");
    const first = await agent.create({ question: "Once only?" }, { idempotencyKey: key });
    await server.alice().answer(first.id, { text: "yes" });
    const again = await agent.create({ question: "Once only?" }, { idempotencyKey: key });
    assert.equal(again.id, first.id);
    assert.equal(again.status, "answered");
    const inBody = await agent.create({ question: "Once only?", idempotency_key: key });
    assert.equal(inBody.id, first.id, "a key in the body counts the same");
    const other = await agent.create({ question: "Once only?" }, { idempotencyKey: `${key}-other` });
    assert.notEqual(other.id, first.id);
  });

  test("a create whose reply was lost is sent again and asks once", async () => {
    const session = uniqueSession("lost-reply");
    const proxy = await replyDroppingProxy(server.port);
    try {
      const client = new Client({ url: proxy.url, token: server.adminKey });
      const record = await client.create({ question: "Asked once?", session });
      assert.equal(proxy.dropped, 1, "the first reply was dropped");
      assert.ok(proxy.creates >= 2, "the create was sent again");
      const listed: RequestRecord[] = [];
      for await (const r of server.agent().list({ session })) listed.push(r);
      assert.deepEqual(
        listed.map((r) => r.id),
        [record.id],
      );
    } finally {
      await proxy.close();
    }
  });
});

describe("list", () => {
  test("iterates every page, newest first", async () => {
    const agent = server.agent();
    const session = uniqueSession("list");
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await agent.create({ question: `Question ${i}`, session })).id);
    const page = await agent.listPage({ session, limit: 2 });
    assert.equal(page.requests.length, 2);
    assert.ok(page.next_cursor, "a first page of a longer list has a next cursor");
    const seen: string[] = [];
    for await (const record of agent.list({ session, limit: 2 })) seen.push(record.id);
    assert.deepEqual(seen, ids.reverse());
    await server.alice().answer(ids[0]!, { text: "done" });
    const pending: string[] = [];
    for await (const record of agent.list({ session, status: "pending" })) pending.push(record.id);
    assert.equal(pending.length, 4);
  });
});

describe("cancel and wait", () => {
  test("cancel resolves a pending request as cancelled; again is 409", async () => {
    const agent = server.agent();
    const created = await agent.create({ question: "Still needed?" });
    const cancelled = await agent.cancel(created.id);
    assert.equal(cancelled.status, "cancelled");
    const error = await rejection(agent.cancel(created.id));
    assert.equal(error.code, "already_resolved");
  });

  test("a responder extends a deadline within the server's bound", async () => {
    const agent = server.agent();
    const alice = server.alice();
    const created = await agent.create({ question: "Still needed?", timeout_seconds: 600 });
    const before = Date.parse(created.expires_at!);
    const moved = await alice.extend(created.id, "30m");
    assert.equal(Date.parse(moved.expires_at!) - before, 1_800_000);
    const again = await alice.extend(created.id, 60);
    assert.equal(Date.parse(again.expires_at!) - before, 1_860_000);
    const tooFar = await rejection(alice.extend(created.id, "2d"));
    assert.equal(tooFar.code, "extension_too_long");
    assert.equal((await agent.get(created.id)).expires_at, again.expires_at);
    await agent.cancel(created.id);
    const late = await rejection(alice.extend(created.id, "30m"));
    assert.equal(late.code, "already_resolved");
  });

  test("wait with a time limit returns the request still pending", async () => {
    const agent = server.agent();
    const created = await agent.create({ question: "Nobody answers this" });
    const started = Date.now();
    const record = await agent.wait(created.id, { timeoutSeconds: 1 });
    assert.equal(record.status, "pending");
    assert.ok(Date.now() - started >= 900);
  });

  test("a request that times out resolves as expired, with a note", async () => {
    const outcome = await server.agent().ask({ question: "Quick!", timeout_seconds: 1 });
    assert.equal(outcome.status, "expired");
    assert.match(outcome.note ?? "", /did not answer within 1 second/);
  });

  test("aborting ask stops waiting and cancels the request", async () => {
    const agent = server.agent();
    const session = uniqueSession("abort");
    const controller = new AbortController();
    const asked = agent.ask({ question: "Abandoned?", session }, { signal: controller.signal });
    let id: string | undefined;
    while (id === undefined) {
      for await (const record of agent.list({ session })) id = record.id;
      await delay(20);
    }
    controller.abort();
    await assert.rejects(asked, (error: unknown) => error instanceof Error && error.name === "AbortError");
    assert.equal((await agent.get(id)).status, "cancelled");
  });

  test("wait keeps waiting through a crash and restart of the server", async () => {
    const own = await Server.start();
    try {
      const agent = own.agent();
      const session = uniqueSession("restart");
      const created = await agent.create({ question: "Still there after a crash?", session });
      const waiting = agent.wait(created.id);
      await delay(300);
      await own.restart("SIGKILL");
      await own.alice().answer(created.id, { text: "yes" });
      const record = await waiting;
      assert.equal(record.status, "answered");
      assert.equal(record.outcome?.questions[0]?.answer, "yes");
    } finally {
      await own.close();
    }
  });
});

describe("events", () => {
  test("resumes after the last event id with no gap and no repeat", async () => {
    const agent = server.agent();
    const session = uniqueSession("events");
    const events = await listening(agent);
    const first = await agent.create({ question: "First", session });
    const created = await nextIn(events, session);
    assert.deepEqual([created.type, created.record.id], ["request.created", first.id]);
    await events.return?.(undefined);

    // While nobody listens: an answer and another request.
    await server.alice().answer(first.id, { text: "one" });
    const second = await agent.create({ question: "Second", session });
    const resumed = agent.events({ lastEventId: created.id })[Symbol.asyncIterator]();
    const a = await nextIn(resumed, session);
    const b = await nextIn(resumed, session);
    await resumed.return?.(undefined);
    assert.deepEqual(
      [a.type, a.record.id, a.record.status, b.type, b.record.id],
      ["request.answered", first.id, "answered", "request.created", second.id],
    );
    assert.ok(Number(a.id) > Number(created.id));
  });

  test("the iterator reconnects through a server restart and misses nothing", async () => {
    const own = await Server.start();
    try {
      const agent = own.agent();
      const session = uniqueSession("events-restart");
      const events = await listening(agent);
      const before = await agent.create({ question: "Before the restart", session });
      assert.equal((await nextIn(events, session)).record.id, before.id);
      const reading = nextIn(events, session);
      await own.restart("SIGTERM");
      const during = await agent.create({ question: "After the restart", session });
      await own.alice().answer(during.id, { text: "ok" });
      const b = await reading;
      const c = await nextIn(events, session);
      assert.deepEqual(
        [b.type, b.record.id, c.type, c.record.id],
        ["request.created", during.id, "request.answered", during.id],
      );
      await events.return?.(undefined);
    } finally {
      await own.close();
    }
  });

  test("aborting the signal ends the iteration", async () => {
    const controller = new AbortController();
    const stream = server.agent().events({ signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    await assert.rejects(async () => {
      for await (const _ of stream) {
        // Only the abort ends this loop.
      }
    }, (error: unknown) => error instanceof Error && error.name === "AbortError");
  });
});

/**
 * An event iterator known to be connected: a stream starts at the newest event when it connects,
 * so marker requests are created until one arrives.
 */
async function listening(client: Client): Promise<AsyncIterator<ClarifyEvent>> {
  const iterator = client.events()[Symbol.asyncIterator]();
  const next = iterator.next();
  const markers = uniqueSession("marker");
  for (let i = 0; i < 100; i++) {
    await client.create({ question: "Is the stream connected?", session: markers });
    if ((await Promise.race([next, delay(100).then(() => undefined)])) !== undefined) return iterator;
  }
  throw new Error("the event stream did not connect");
}

/** The next event of one session, skipping the others. */
async function nextIn(iterator: AsyncIterator<ClarifyEvent>, session: string): Promise<ClarifyEvent> {
  for (;;) {
    const result = await iterator.next();
    if (result.done === true) throw new Error("the event stream ended");
    if (result.value.record.session === session) return result.value;
  }
}

async function rejection(promise: Promise<unknown>): Promise<ClarifyError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ClarifyError, `a ClarifyError, got ${String(error)}`);
    return error;
  }
  assert.fail("the call succeeded");
}

function restoreEnv(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

/**
 * An HTTP proxy in front of the server that forwards the first `POST /v1/requests` but breaks
 * the connection instead of returning its reply, as a crash or a network cut would.
 */
async function replyDroppingProxy(
  upstreamPort: number,
): Promise<{ url: string; dropped: number; creates: number; close: () => Promise<void> }> {
  const state = { dropped: 0, creates: 0 };
  const proxy: HttpServer = createServer((incoming: IncomingMessage, outgoing) => {
    const isCreate = incoming.method === "POST" && incoming.url === "/v1/requests";
    if (isCreate) state.creates += 1;
    const upstream = httpRequest(
      { host: "127.0.0.1", port: upstreamPort, method: incoming.method, path: incoming.url, headers: incoming.headers },
      (reply) => {
        if (isCreate && state.dropped === 0) {
          state.dropped += 1;
          reply.resume();
          reply.on("end", () => outgoing.socket?.destroy());
          return;
        }
        outgoing.writeHead(reply.statusCode ?? 502, reply.headers);
        reply.pipe(outgoing);
      },
    );
    incoming.pipe(upstream);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => proxy.listen(port, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    get dropped() {
      return state.dropped;
    },
    get creates() {
      return state.creates;
    },
    close: () =>
      new Promise<void>((resolve) => {
        proxy.closeAllConnections();
        proxy.close(() => resolve());
      }),
  };
}
