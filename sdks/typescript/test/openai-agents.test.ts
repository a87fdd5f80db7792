/**
 * The OpenAI Agents SDK helper with the real `@openai/agents` package and a scripted model: a
 * run stops at a tool needing approval, a person decides through clarify, and the run resumes.
 */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Agent, type Model, run, setTracingDisabled, tool } from "@openai/agents";
import { z } from "zod";

import { approveInterruptions, runWithApprovals } from "@clarify-hitl/client/openai-agents";

import { ScriptedModel } from "./scripted-agents.js";
import { answerNext, Server, uniqueSession } from "./support.js";

setTracingDisabled(true);

let server: Server;

before(async () => {
  server = await Server.start();
});

after(async () => {
  await server?.close();
});

function deployAgent(model: Model, ran: string[]) {
  const deploy = tool({
    name: "deploy",
    description: "Deploy a release to an environment",
    parameters: z.object({ env: z.string() }),
    needsApproval: true,
    execute: async ({ env }) => {
      ran.push(env);
      return `deployed to ${env}`;
    },
  });
  return new Agent({ name: "release-bot", instructions: "Deploy releases.", model, tools: [deploy] });
}

describe("interruptions", () => {
  test("approved: the tool runs and the run finishes", async () => {
    const session = uniqueSession("agents-approve");
    const ran: string[] = [];
    const model = new ScriptedModel([{ callId: "call-a1", name: "deploy", arguments: { env: "prod" } }]);
    const agent = deployAgent(model, ran);

    const result = await run(agent, "Deploy to prod");
    assert.equal(result.interruptions.length, 1);
    const approving = approveInterruptions(server.agent(), result, { session });
    const { record } = await answerNext(server.alice(), { session }, { decision: "approve" });
    assert.deepEqual(record.questions[0]?.action, { name: "deploy", arguments: { env: "prod" } });
    assert.equal(record.tool_call_id, "call-a1");
    assert.equal(record.agent, "release-bot", "the agent's name is who asks");
    const [decision] = await approving;
    assert.equal(decision?.approved, true);

    const resumed = await run(agent, result.state);
    assert.deepEqual(ran, ["prod"]);
    assert.equal(resumed.interruptions.length, 0);
    assert.match(String(resumed.finalOutput), /deployed to prod/);
  });

  test("rejected with a reason: the tool does not run and the model reads the reason", async () => {
    const session = uniqueSession("agents-reject");
    const ran: string[] = [];
    const model = new ScriptedModel([{ callId: "call-r1", name: "deploy", arguments: { env: "prod" } }]);
    const agent = deployAgent(model, ran);

    const result = await run(agent, "Deploy to prod");
    const approving = approveInterruptions(server.agent(), result, { session });
    await answerNext(server.alice(), { session }, { decision: "deny", reason: "release freeze until Monday" });
    const [decision] = await approving;
    assert.deepEqual([decision?.approved, decision?.reason], [false, "release freeze until Monday"]);

    const resumed = await run(agent, result.state);
    assert.deepEqual(ran, []);
    assert.match(JSON.stringify(model.outputs()), /release freeze until Monday/);
    assert.match(String(resumed.finalOutput), /release freeze until Monday/);
  });

  test("changes requested: the tool does not run and the model reads what to change", async () => {
    const session = uniqueSession("agents-revise");
    const ran: string[] = [];
    const model = new ScriptedModel([{ callId: "call-v1", name: "deploy", arguments: { env: "prod" } }]);
    const agent = deployAgent(model, ran);

    const result = await run(agent, "Deploy to prod");
    const approving = approveInterruptions(server.agent(), result, { session });
    await answerNext(server.alice(), { session }, { decision: "revise", reason: "deploy to staging first" });
    const [decision] = await approving;
    assert.deepEqual(
      [decision?.approved, decision?.changesRequested, decision?.reason],
      [false, true, "Changes requested: deploy to staging first"],
    );

    await run(agent, result.state);
    assert.deepEqual(ran, []);
    assert.match(JSON.stringify(model.outputs()), /Changes requested: deploy to staging first/);
  });

  test("runWithApprovals runs to the end; a session scope approves the tool for the rest of the run", async () => {
    const session = uniqueSession("agents-loop");
    const ran: string[] = [];
    const model = new ScriptedModel([
      { callId: "call-l1", name: "deploy", arguments: { env: "staging" } },
      { callId: "call-l2", name: "deploy", arguments: { env: "prod" } },
    ]);
    const agent = deployAgent(model, ran);

    const running = (async () =>
      runWithApprovals(server.agent(), await run(agent, "Deploy to staging, then prod"), (state) => run(agent, state), {
        session,
        scopes: ["once", "session"],
      }))();
    const { record } = await answerNext(server.alice(), { session }, { decision: "approve", scope: "session" });
    assert.deepEqual(record.questions[0]?.scopes, ["once", "session"]);
    const final = await running;
    assert.deepEqual(ran, ["staging", "prod"], "the second call needed no second approval");
    let asked = 0;
    for await (const _ of server.agent().list({ session })) asked += 1;
    assert.equal(asked, 1);
    assert.match(String(final.finalOutput), /deployed to prod/);
  });

  test("a restarted agent finds the same approval instead of asking twice", async () => {
    const session = uniqueSession("agents-again");
    const model = new ScriptedModel([{ callId: "call-s1", name: "deploy", arguments: { env: "prod" } }]);
    const agent = deployAgent(model, []);
    const result = await run(agent, "Deploy to prod");
    // The run state survives as a string, as an agent that stops and starts again keeps it.
    const saved = result.state.toString();

    const first = approveInterruptions(server.agent(), result, { session });
    const { RunState } = await import("@openai/agents");
    const restored = await RunState.fromString(agent, saved);
    const again = approveInterruptions(
      server.agent(),
      { interruptions: restored.getInterruptions(), state: restored },
      { session },
    );
    await answerNext(server.alice(), { session }, { decision: "approve" });
    const [[a], [b]] = await Promise.all([first, again]);
    assert.equal(a?.outcome.request_id, b?.outcome.request_id);
    let asked = 0;
    for await (const _ of server.agent().list({ session })) asked += 1;
    assert.equal(asked, 1);
  });

  test("nobody answers in time: rejected with the note", async () => {
    const session = uniqueSession("agents-expire");
    const ran: string[] = [];
    const model = new ScriptedModel([{ callId: "call-e1", name: "deploy", arguments: { env: "prod" } }]);
    const agent = deployAgent(model, ran);
    const result = await run(agent, "Deploy to prod");
    const [decision] = await approveInterruptions(server.agent(), result, { session, timeoutSeconds: 1 });
    assert.equal(decision?.approved, false);
    assert.equal(decision?.outcome.status, "expired");
    await run(agent, result.state);
    assert.deepEqual(ran, []);
    assert.match(JSON.stringify(model.outputs()), /did not answer within 1 second/);
  });
});
