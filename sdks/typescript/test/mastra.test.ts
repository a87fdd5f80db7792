/**
 * Mastra's tool approvals with the real `@mastra/core`: an agent whose model (the scripted
 * OpenAI-compatible server, through the AI SDK's OpenAI provider) calls a tool created with
 * `requireApproval: true` stops, a person decides through a real clarify server, and the run
 * resumes with the decision.
 */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { createOpenAI } from "@ai-sdk/openai";
import { Agent } from "@mastra/core/agent";
import { Mastra } from "@mastra/core/mastra";
import { InMemoryStore } from "@mastra/core/storage";
import { createTool } from "@mastra/core/tools";
import { z } from "zod";

import type { RequestRecord } from "@clarify-hitl/client";
import { pendingToolApproval, resolveToolApprovals } from "@clarify-hitl/client/mastra";

import { type ScriptedCall, ScriptedOpenAI } from "./scripted-openai.js";
import { answerNext, delay, Server, uniqueSession } from "./support.js";

let server: Server;
const models: ScriptedOpenAI[] = [];

before(async () => {
  server = await Server.start();
});

after(async () => {
  await Promise.all(models.map((model) => model.close()));
  await server.close();
});

/** A release agent whose model makes `calls` in one turn; `ran` records the deploys that ran. */
async function releaseAgent(calls: ScriptedCall[], ran: { env: string }[]) {
  const model = await ScriptedOpenAI.start(calls.length > 0 ? [{ calls }] : []);
  models.push(model);
  const openai = createOpenAI({ baseURL: model.baseURL, apiKey: "sk-scripted" });
  const deploy = createTool({
    id: "deploy",
    description: "Deploy the release to an environment",
    inputSchema: z.object({ env: z.string() }),
    requireApproval: true,
    execute: async (input) => {
      ran.push(input);
      return `deployed to ${input.env}`;
    },
  });
  const mastra = new Mastra({
    agents: {
      releaseBot: new Agent({
        id: "release-bot",
        name: "Release bot",
        instructions: "You deploy releases.",
        model: openai.chat("gpt-scripted"),
        tools: { deploy },
      }),
    },
    storage: new InMemoryStore(),
    logger: false,
  });
  return { agent: mastra.getAgent("releaseBot"), model };
}

const prod: ScriptedCall = { id: "call_prod", name: "deploy", arguments: { env: "prod" } };
const staging: ScriptedCall = { id: "call_staging", name: "deploy", arguments: { env: "staging" } };

describe("resolveToolApprovals", () => {
  test("approved: the tool runs as called, and the model reads its result", async () => {
    const session = uniqueSession("mastra-approve");
    const ran: { env: string }[] = [];
    const { agent } = await releaseAgent([prod], ran);
    const suspended = await agent.generate("Deploy the release");
    assert.equal(suspended.finishReason, "suspended");
    assert.deepEqual(ran, []);

    const asked: RequestRecord[] = [];
    const person = answerNext(server.alice(), { session }, (record) => {
      asked.push(record);
      return { decision: "approve" };
    });
    const result = await resolveToolApprovals(server.agent(), agent, suspended, { session });
    await person;

    assert.deepEqual(ran, [{ env: "prod" }]);
    assert.equal(result.finishReason, "stop");
    assert.equal(result.text, `results: {"call_prod":"deployed to prod"}`);
    const [record] = asked;
    assert.equal(record?.agent, "Release bot");
    assert.equal(record?.tool_call_id, "call_prod");
    assert.deepEqual(
      record?.questions.map((q) => [q.kind, q.text, q.action, q.allow_edit]),
      [["approval", "Allow the agent to run deploy?", { name: "deploy", arguments: { env: "prod" } }, false]],
    );
  });

  test("denied with a reason: nothing runs, and the model's next request carries the reason", async () => {
    const session = uniqueSession("mastra-deny");
    const ran: { env: string }[] = [];
    const { agent, model } = await releaseAgent([prod], ran);
    const person = answerNext(server.alice(), { session }, { decision: "deny", reason: "not on a Friday" });
    const result = await resolveToolApprovals(server.agent(), agent, await agent.generate("Deploy"), {
      session,
      agent: "release pipeline",
      tags: ["deploy"],
    });
    const { record } = await person;

    assert.deepEqual(ran, []);
    assert.deepEqual(model.toolResults(), { call_prod: "not on a Friday" });
    assert.equal(result.text, `results: {"call_prod":"not on a Friday"}`);
    assert.equal(record.agent, "release pipeline");
    assert.deepEqual(record.tags, ["deploy"]);
  });

  test("two calls in one step: each decided on its own, the approved one runs", async () => {
    const session = uniqueSession("mastra-two");
    const ran: { env: string }[] = [];
    const { agent, model } = await releaseAgent([prod, staging], ran);
    const decided: string[] = [];
    const people = (async () => {
      for (let i = 0; i < 2; i += 1) {
        await answerNext(server.alice(), { session }, (record) =>
          record.tool_call_id === "call_prod" ? { decision: "revise", reason: "staging first" } : { decision: "approve" },
        );
      }
    })();
    const result = await resolveToolApprovals(server.agent(), agent, await agent.generate("Deploy"), { session }, {
      onDecision: (call, decision) => decided.push(`${call.toolCallId}:${decision.approved}`),
    });
    await people;

    assert.deepEqual(decided, ["call_prod:false", "call_staging:true"]);
    assert.deepEqual(ran, [{ env: "staging" }]);
    assert.deepEqual(model.toolResults(), {
      call_prod: "Changes requested: staging first",
      call_staging: "deployed to staging",
    });
    assert.equal(pendingToolApproval(result), undefined);
  });

  test("nobody answers in time: declined with the outcome's note, and nothing runs", async () => {
    const session = uniqueSession("mastra-expire");
    const ran: { env: string }[] = [];
    const { agent, model } = await releaseAgent([prod], ran);
    const result = await resolveToolApprovals(server.agent(), agent, await agent.generate("Deploy"), {
      session,
      timeout_seconds: 1,
    });
    assert.deepEqual(ran, []);
    const told = model.toolResults()["call_prod"] ?? "";
    assert.match(told, /^deploy was not run: nobody approved it \(expired\)\. /);
    assert.match(told, /did not answer within 1 second/);
    assert.equal(result.finishReason, "stop");
  });

  test("deciding the same suspended run again (a restarted process) finds the same request", async () => {
    const session = uniqueSession("mastra-again");
    const ran: { env: string }[] = [];
    const { agent } = await releaseAgent([prod], ran);
    const suspended = await agent.generate("Deploy");

    // The first process asks, and dies while waiting.
    const crash = new AbortController();
    const first = resolveToolApprovals(server.agent(), agent, suspended, { session }, { signal: crash.signal });
    await waitForPending(session);
    crash.abort(new Error("the process died"));
    await assert.rejects(first);

    // The next one finds the run still waiting in Mastra's storage, and decides it.
    const { runs } = await agent.listSuspendedRuns();
    assert.deepEqual(
      runs.map((run) => run.runId),
      [suspended.runId],
    );
    const person = answerNext(server.alice(), { session }, { decision: "approve" });
    const result = await resolveToolApprovals(server.agent(), agent, runs[0]!, { session });
    await person;
    assert.equal(pendingToolApproval(result), undefined);

    assert.deepEqual(ran, [{ env: "prod" }]);
    const requests = [];
    for await (const record of server.agent().list({ session })) requests.push(record);
    assert.equal(requests.length, 1);
    assert.equal(requests[0]?.status, "answered");
  });

  test("a finished run is returned as it is, without asking", async () => {
    const session = uniqueSession("mastra-done");
    const { agent } = await releaseAgent([], []);
    const finished = await agent.generate("Hello");
    const result = await resolveToolApprovals(server.agent(), agent, finished, { session });
    assert.equal(result, finished);
    const requests = await server.agent().listPage({ session });
    assert.equal(requests.requests.length, 0);
  });
});

async function waitForPending(session: string): Promise<void> {
  for (let i = 0; i < 200; i += 1) {
    const page = await server.agent().listPage({ session, status: "pending" });
    if (page.requests.length > 0) return;
    await delay(25);
  }
  throw new Error(`nothing was asked in session ${session}`);
}
