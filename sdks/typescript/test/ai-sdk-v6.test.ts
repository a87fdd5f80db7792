/**
 * The Vercel AI SDK helper with AI SDK 6 (installed as `ai-v6`), whose approval parts are the
 * same as 7's: an approval runs the tool, a denial's reason reaches the model.
 */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { generateText, type ModelMessage, stepCountIs, tool } from "ai-v6";
import { MockLanguageModelV3 } from "ai-v6/test";
import { z } from "zod";

import { askForApprovals } from "@clarify-hitl/client/ai-sdk";

import { answerNext, Server, uniqueSession } from "./support.js";

let server: Server;

before(async () => {
  server = await Server.start();
});

after(async () => {
  await server?.close();
});

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

type Prompt = { role: string; content: unknown }[];

function scripted() {
  let turn = 0;
  const seen: Prompt[] = [];
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      turn += 1;
      seen.push(options.prompt as Prompt);
      if (turn === 1) {
        return {
          content: [{ type: "tool-call" as const, toolCallId: "call-6", toolName: "deploy", input: '{"env":"prod"}' }],
          finishReason: { unified: "tool-calls" as const, raw: undefined },
          usage,
          warnings: [],
        };
      }
      return {
        content: [{ type: "text" as const, text: "done" }],
        finishReason: { unified: "stop" as const, raw: undefined },
        usage,
        warnings: [],
      };
    },
  });
  return { model, seen };
}

for (const [decision, expected] of [
  [{ decision: "approve" as const }, { type: "text", value: "deployed to prod" }],
  [
    { decision: "deny" as const, reason: "release freeze until Monday" },
    { type: "execution-denied", reason: "release freeze until Monday" },
  ],
] as const) {
  test(`ai 6: ${decision.decision} reaches the model`, async () => {
    const session = uniqueSession("ai6");
    const ran: string[] = [];
    const tools = {
      deploy: tool({
        description: "Deploy a release",
        inputSchema: z.object({ env: z.string() }),
        needsApproval: true,
        execute: async ({ env }: { env: string }) => {
          ran.push(env);
          return `deployed to ${env}`;
        },
      }),
    };
    const { model, seen } = scripted();
    const messages: ModelMessage[] = [{ role: "user", content: "Deploy to prod" }];
    const first = await generateText({ model, tools, messages, stopWhen: stepCountIs(5) });
    messages.push(...first.response.messages);
    const asking = askForApprovals(server.agent(), first, { session });
    await answerNext(server.alice(), { session }, decision);
    messages.push((await asking)!);
    await generateText({ model, tools, messages, stopWhen: stepCountIs(5) });
    assert.deepEqual(ran, decision.decision === "approve" ? ["prod"] : []);
    const results = seen
      .at(-1)!
      .flatMap((m) => (m.role === "tool" && Array.isArray(m.content) ? (m.content as { output: unknown }[]) : []));
    assert.deepEqual(
      results.map((part) => part.output),
      [expected],
    );
  });
}
