/**
 * The Vercel AI SDK helper with the real `ai` package and its mock model: a `generateText` (and
 * `streamText`) loop stops at a tool needing approval, a person decides through clarify, and the
 * loop resumes with the decision.
 */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  convertToModelMessages,
  generateText,
  type ModelMessage,
  readUIMessageStream,
  stepCountIs,
  streamText,
  tool,
  type UIMessage,
} from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { z } from "zod";

import { Client, type RequestRecord } from "@clarify-hitl/client";
import {
  askForApprovals,
  decideToolApprovals,
  toolApprovalMessage,
  toolApprovalRequests,
} from "@clarify-hitl/client/ai-sdk";

import { type Prompt, scriptedModel, toolOutputs, usage } from "./scripted.js";
import { answerNext, Server, uniqueSession } from "./support.js";

let server: Server;

before(async () => {
  server = await Server.start();
});

after(async () => {
  await server?.close();
});

function deployTools(ran: string[]) {
  return {
    deploy: tool({
      description: "Deploy a release to an environment",
      inputSchema: z.object({ env: z.string() }),
      execute: async ({ env }) => {
        ran.push(env);
        return `deployed to ${env}`;
      },
    }),
  };
}

/** AI SDK 7's way to ask for approval: every `deploy` call needs a person's. */
const toolApproval = { deploy: "user-approval" } as const;

describe("generateText", () => {
  test("approved: the tool runs and the model sees its result", async () => {
    const session = uniqueSession("ai-approve");
    const ran: string[] = [];
    const tools = deployTools(ran);
    const { model, prompts } = scriptedModel([{ toolName: "deploy", input: { env: "prod" } }]);
    const messages: ModelMessage[] = [{ role: "user", content: "Deploy the release to prod" }];

    // An approval setting may say why; the person is shown that as the request's context.
    const why = {
      deploy: ({ env }: { env: string }) =>
        env === "prod" ? { type: "user-approval" as const, reason: "production deploys need a person" } : "approved",
    } as const;
    let result = await generateText({ model, tools, messages, stopWhen: stepCountIs(5), toolApproval: why });
    assert.deepEqual(ran, [], "nothing runs before the approval");
    messages.push(...result.response.messages);

    const asking = askForApprovals(server.agent(), result, { session, agent: "release-bot" });
    const { record } = await answerNext(server.alice(), { session }, { decision: "approve" });
    assertApprovalRecord(record, "deploy", { env: "prod" }, "call-1");
    assert.equal(record.agent, "release-bot");
    assert.equal(record.context, "production deploys need a person");
    const approvals = await asking;
    assert.ok(approvals);
    assert.deepEqual(approvals.content.map((p) => [p.type, p.approved]), [["tool-approval-response", true]]);

    messages.push(approvals);
    result = await generateText({ model, tools, messages, stopWhen: stepCountIs(5), toolApproval: why });
    assert.deepEqual(ran, ["prod"]);
    assert.deepEqual(toolOutputs(prompts.at(-1)!), { "call-1": { type: "text", value: "deployed to prod" } });
    assert.match(result.text, /deployed to prod/);
    assert.deepEqual(toolApprovalRequests([...messages, ...result.response.messages]), [], "nothing waits any more");
  });

  test("denied with a reason: the tool does not run and the model reads the reason", async () => {
    const session = uniqueSession("ai-deny");
    const ran: string[] = [];
    const tools = deployTools(ran);
    const { model, prompts } = scriptedModel([{ toolName: "deploy", input: { env: "prod" } }]);
    const messages: ModelMessage[] = [{ role: "user", content: "Deploy the release to prod" }];

    const first = await generateText({ model, tools, messages, stopWhen: stepCountIs(5), toolApproval });
    messages.push(...first.response.messages);
    // The history is enough: the approval request is read from the messages.
    const asking = askForApprovals(server.agent(), messages, { session });
    await answerNext(server.alice(), { session }, { decision: "deny", reason: "release freeze until Monday" });
    const approvals = await asking;
    assert.deepEqual(approvals?.content.map((p) => [p.approved, p.reason]), [[false, "release freeze until Monday"]]);

    messages.push(approvals!);
    const second = await generateText({ model, tools, messages, stopWhen: stepCountIs(5), toolApproval });
    assert.deepEqual(ran, []);
    assert.deepEqual(toolOutputs(prompts.at(-1)!), {
      "call-1": { type: "execution-denied", reason: "release freeze until Monday" },
    });
    assert.match(second.text, /release freeze until Monday/);
  });

  test("changes requested: the tool does not run and the model reads what to change", async () => {
    const session = uniqueSession("ai-revise");
    const ran: string[] = [];
    const tools = deployTools(ran);
    const { model, prompts } = scriptedModel([{ toolName: "deploy", input: { env: "prod" } }]);
    const messages: ModelMessage[] = [{ role: "user", content: "Deploy the release to prod" }];

    const first = await generateText({ model, tools, messages, stopWhen: stepCountIs(5), toolApproval });
    messages.push(...first.response.messages);
    const asking = askForApprovals(server.agent(), messages, { session });
    await answerNext(server.alice(), { session }, { decision: "revise", reason: "deploy to staging first" });
    const approvals = await asking;
    assert.deepEqual(approvals?.content.map((p) => [p.approved, p.reason]), [
      [false, "Changes requested: deploy to staging first"],
    ]);

    messages.push(approvals!);
    await generateText({ model, tools, messages, stopWhen: stepCountIs(5), toolApproval });
    assert.deepEqual(ran, []);
    assert.deepEqual(toolOutputs(prompts.at(-1)!), {
      "call-1": { type: "execution-denied", reason: "Changes requested: deploy to staging first" },
    });
  });

  test("nobody answers in time: denied, and the model is told so", async () => {
    const session = uniqueSession("ai-expire");
    const ran: string[] = [];
    const { model } = scriptedModel([{ toolName: "deploy", input: { env: "prod" } }]);
    const tools = deployTools(ran);
    const result = await generateText({ model, tools, prompt: "Deploy", stopWhen: stepCountIs(5), toolApproval });
    const [decision] = await decideToolApprovals(server.agent(), result, { session, timeoutSeconds: 1 });
    assert.equal(decision?.approved, false);
    assert.equal(decision?.outcome.status, "expired");
    assert.match(decision?.reason ?? "", /did not answer within 1 second/);
  });

  test("two calls at once, decided separately; asking again finds the same approvals", async () => {
    const session = uniqueSession("ai-two");
    const ran: string[] = [];
    const tools = deployTools(ran);
    const { model } = scriptedModel([
      { toolName: "deploy", input: { env: "staging" } },
      { toolName: "deploy", input: { env: "prod" } },
    ]);
    const prompt = "Deploy everywhere";
    const result = await generateText({ model, tools, prompt, stopWhen: stepCountIs(5), toolApproval });
    const requests = toolApprovalRequests(result);
    assert.deepEqual(
      requests.map((r) => [r.toolCallId, r.toolName, r.input]),
      [
        ["call-1", "deploy", { env: "staging" }],
        ["call-2", "deploy", { env: "prod" }],
      ],
    );

    // Two processes ask for the same approvals (a restarted agent, a second worker).
    const one = decideToolApprovals(server.agent(), result, { session });
    const other = decideToolApprovals(new Client({ url: server.url, token: server.adminKey }), result, { session });
    const answer = (record: RequestRecord) =>
      record.questions[0]?.action?.arguments["env"] === "prod"
        ? { decision: "deny" as const, reason: "not on a Friday" }
        : { decision: "approve" as const };
    await answerNext(server.alice(), { session }, answer);
    await answerNext(server.alice(), { session }, answer);
    const [a, b] = await Promise.all([one, other]);
    assert.deepEqual(a, b);
    assert.deepEqual(
      a.map((d) => [d.toolCallId, d.approved, d.reason]),
      [
        ["call-1", true, undefined],
        ["call-2", false, "not on a Friday"],
      ],
    );
    let asked = 0;
    for await (const _ of server.agent().list({ session })) asked += 1;
    assert.equal(asked, 2, "each call was asked once");
    assert.deepEqual(toolApprovalMessage(a).content, [
      { type: "tool-approval-response", approvalId: requests[0]!.approvalId, approved: true },
      { type: "tool-approval-response", approvalId: requests[1]!.approvalId, approved: false, reason: "not on a Friday" },
    ]);
  });

  test("nothing to approve: no message, and nothing asked", async () => {
    const session = uniqueSession("ai-none");
    const { model } = scriptedModel([]);
    const result = await generateText({ model, prompt: "Hello", tools: deployTools([]), toolApproval });
    assert.equal(await askForApprovals(server.agent(), result, { session }), undefined);
    for await (const _ of server.agent().list({ session })) assert.fail("nothing should be asked");
  });
});

describe("streamText and UI messages", () => {
  test("a chat UI's approval-requested part is decided and the stream resumes", async () => {
    const session = uniqueSession("ai-ui");
    const ran: string[] = [];
    const tools = deployTools(ran);
    let turn = 0;
    const model = new MockLanguageModelV4({
      doStream: async (options) => {
        turn += 1;
        const outputs = toolOutputs(options.prompt as Prompt);
        const parts =
          turn === 1
            ? [
                { type: "stream-start" as const, warnings: [] },
                { type: "tool-call" as const, toolCallId: "call-ui", toolName: "deploy", input: '{"env":"prod"}' },
                { type: "finish" as const, finishReason: { unified: "tool-calls" as const, raw: undefined }, usage },
              ]
            : [
                { type: "stream-start" as const, warnings: [] },
                { type: "text-start" as const, id: "t" },
                { type: "text-delta" as const, id: "t", delta: `results: ${JSON.stringify(outputs)}` },
                { type: "text-end" as const, id: "t" },
                { type: "finish" as const, finishReason: { unified: "stop" as const, raw: undefined }, usage },
              ];
        return { stream: new ReadableStream({ start: (c) => (parts.forEach((p) => c.enqueue(p)), c.close()) }) };
      },
    });

    // What a chat route streams to the browser, as `useChat` assembles it.
    const history: UIMessage[] = [{ id: "u1", role: "user", parts: [{ type: "text", text: "Deploy to prod" }] }];
    const first = streamText({ model, tools, toolApproval, messages: await convertToModelMessages(history) });
    let assistant: UIMessage | undefined;
    for await (const message of readUIMessageStream({ stream: first.toUIMessageStream() })) assistant = message;
    assert.ok(assistant);
    history.push(assistant);

    const asking = decideToolApprovals(server.agent(), history, { session });
    await answerNext(server.alice(), { session }, { decision: "approve" });
    const [decision] = await asking;
    assert.equal(decision?.toolName, "deploy");
    assert.deepEqual(decision?.input, { env: "prod" });

    // What `addToolApprovalResponse({ id, approved, reason })` does to the part in the browser.
    for (const part of assistant.parts) {
      if ("approval" in part && part.state === "approval-requested" && part.approval.id === decision?.approvalId) {
        Object.assign(part, { state: "approval-responded", approval: { id: part.approval.id, approved: true } });
      }
    }
    assert.deepEqual(toolApprovalRequests(history), [], "the responded part no longer waits");
    const second = streamText({ model, tools, toolApproval, messages: await convertToModelMessages(history) });
    assert.match(await second.text, /deployed to prod/);
    assert.deepEqual(ran, ["prod"]);
  });
});

function assertApprovalRecord(record: RequestRecord, name: string, args: object, toolCallId: string): void {
  const question = record.questions[0];
  assert.equal(question?.kind, "approval");
  assert.equal(question?.text, `Allow ${name}?`);
  assert.deepEqual(question?.action, { name, arguments: args });
  assert.equal(record.tool_call_id, toolCallId);
}
