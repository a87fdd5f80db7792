/**
 * What asking through clarify adds to one tool approval in Mastra and in LangGraph.js, against
 * the framework's own in-process approval (a handler that approves at once).
 *
 * Each side runs the same agent against the same scripted OpenAI-compatible model (on
 * 127.0.0.1), from the run stopped at its approval to the run finished:
 * - Mastra: `agent.approveToolCallGenerate(...)` at once, against `resolveToolApprovals(...)`;
 * - LangGraph.js (`createAgent` with `humanInTheLoopMiddleware`): `graph.invoke(new Command({
 *   resume: { [id]: { decisions: [{ type: "approve" }] } } }))` at once, against
 *   `resolveInterrupts(...)` and the same `invoke` with its resume value.
 * On the clarify side a person approves each request as soon as its `request.created` event
 * arrives (`GET /v1/events`, one stream for the run): a create, the event, an answer and the
 * agent's wait returning, through a real `clarify serve` on SQLite.
 *
 * Run after `npm run build:test`, with CLARIFY_BIN naming a clarify binary:
 * `node build-test/bench-frameworks.js [rounds]` (default 40 approvals a side, after 5 unmeasured),
 * or `npm run bench:frameworks`. The two sides alternate, one approval each, and the added time is
 * the median of the pairs' differences.
 */

import { performance } from "node:perf_hooks";

import { createOpenAI } from "@ai-sdk/openai";
import { Command, MemorySaver } from "@langchain/langgraph";
import { ChatOpenAI } from "@langchain/openai";
import { Agent } from "@mastra/core/agent";
import { Mastra } from "@mastra/core/mastra";
import { InMemoryStore } from "@mastra/core/storage";
import { createTool } from "@mastra/core/tools";
import { type AnyAgentMiddleware, createAgent, humanInTheLoopMiddleware, type InterruptOnConfig, tool } from "langchain";
import { z } from "zod";

import type { Client } from "@clarify-hitl/client";
import { pendingInterrupts, resolveInterrupts } from "@clarify-hitl/client/langgraph";
import { resolveToolApprovals } from "@clarify-hitl/client/mastra";

import { ScriptedOpenAI, type Turn } from "./scripted-openai.js";
import { Server } from "./support.js";

const rounds = Number(process.argv[2] ?? 40);
const warmup = 5;

/** A scripted model that calls `deploy` on every first turn and answers after the tool ran. */
function deployTurns(count: number): Turn[] {
  const turns: Turn[] = [];
  for (let i = 0; i < count; i += 1) {
    turns.push({ calls: [{ id: `call_${i}`, name: "deploy", arguments: { env: "prod" } }] }, { text: "deployed" });
  }
  return turns;
}

/** Approves every request created from now on, as soon as its event arrives. */
function approveAtOnce(person: Client, signal: AbortSignal): Promise<void> {
  return (async () => {
    try {
      for await (const event of person.events({ signal })) {
        if (event.type === "request.created") {
          await person.answer(event.record.id, { decision: "approve" });
        }
      }
    } catch (error) {
      if (!signal.aborted) throw error;
    }
  })();
}

/**
 * Times both sides one approval after the other, alternating, so that a machine whose load
 * changes during the run weighs on both alike; returns each side's times, and the differences
 * of each pair, sorted.
 */
async function timePairs(
  count: number,
  own: () => Promise<number>,
  viaClarify: () => Promise<number>,
): Promise<{ own: number[]; viaClarify: number[]; added: number[] }> {
  const times = { own: [] as number[], viaClarify: [] as number[], added: [] as number[] };
  for (let i = 0; i < warmup + count; i += 1) {
    const a = await own();
    const b = await viaClarify();
    if (i < warmup) continue;
    times.own.push(a);
    times.viaClarify.push(b);
    times.added.push(b - a);
  }
  for (const list of Object.values(times)) list.sort((x, y) => x - y);
  return times;
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

function report(name: string, times: { own: number[]; viaClarify: number[]; added: number[] }): void {
  const ms = (list: number[], q: number) => `${quantile(list, q).toFixed(1)} ms`;
  const fmt = (list: number[]) => `median ${ms(list, 0.5)}, p10 ${ms(list, 0.1)}, p90 ${ms(list, 0.9)}`;
  console.log(`${name}:`);
  console.log(`  framework's own approval (at once):            ${fmt(times.own)}`);
  console.log(`  through clarify (a person approving at once):  ${fmt(times.viaClarify)}`);
  console.log(`  added per approval (pairwise):                 ${fmt(times.added)}`);
}

async function mastraAgent(model: ScriptedOpenAI) {
  const openai = createOpenAI({ baseURL: model.baseURL, apiKey: "sk-scripted" });
  const deploy = createTool({
    id: "deploy",
    description: "Deploy the release",
    inputSchema: z.object({ env: z.string() }),
    requireApproval: true,
    execute: async ({ env }) => `deployed to ${env}`,
  });
  const agent = new Agent({
    id: "bench",
    name: "bench",
    instructions: "Deploy.",
    model: openai.chat("gpt-scripted"),
    tools: { deploy },
  });
  const mastra = new Mastra({ agents: { bench: agent }, storage: new InMemoryStore(), logger: false });
  return mastra.getAgent("bench");
}

async function benchMastra(server: Server): Promise<void> {
  const model = await ScriptedOpenAI.start(deployTurns(2 * (warmup + rounds)));
  const agent = await mastraAgent(model);
  const stop = new AbortController();
  const person = approveAtOnce(server.alice(), stop.signal);
  const client = server.agent();
  const times = await timePairs(
    rounds,
    async () => {
      const suspended = await agent.generate("Deploy");
      const payload = suspended.suspendPayload as { toolCallId: string };
      if (suspended.runId === undefined) throw new Error("the run did not stop at its approval");
      const start = performance.now();
      const done = await agent.approveToolCallGenerate({ runId: suspended.runId, toolCallId: payload.toolCallId });
      if (done.finishReason !== "stop") throw new Error(`the run ended with ${done.finishReason}`);
      return performance.now() - start;
    },
    async () => {
      const suspended = await agent.generate("Deploy");
      const start = performance.now();
      const done = await resolveToolApprovals(client, agent, suspended, { session: "bench-mastra" });
      if (done.finishReason !== "stop") throw new Error(`the run ended with ${done.finishReason}`);
      return performance.now() - start;
    },
  );
  stop.abort();
  await person;
  await model.close();
  report("Mastra", times);
}

async function benchLangGraph(server: Server): Promise<void> {
  const model = await ScriptedOpenAI.start(deployTurns(2 * (warmup + rounds)));
  const deploy = tool(async ({ env }) => `deployed to ${env}`, {
    name: "deploy",
    description: "Deploy the release",
    schema: z.object({ env: z.string() }),
  });
  const guard = humanInTheLoopMiddleware as unknown as (options: {
    interruptOn: { [name: string]: boolean | InterruptOnConfig };
  }) => AnyAgentMiddleware;
  const agent = createAgent({
    model: new ChatOpenAI({ model: "gpt-scripted", apiKey: "sk-scripted", configuration: { baseURL: model.baseURL } }),
    tools: [deploy],
    middleware: [guard({ interruptOn: { deploy: true } })],
    checkpointer: new MemorySaver(),
  });
  let thread = 0;
  const interrupted = async () => {
    thread += 1;
    const config = { configurable: { thread_id: `bench-${thread}` } };
    const output = await agent.invoke({ messages: [{ role: "user", content: "Deploy" }] }, config);
    const interrupts = await pendingInterrupts(agent, config, output);
    if (interrupts.length !== 1) throw new Error("the agent did not stop at its approval");
    return { config, interrupts };
  };
  const stop = new AbortController();
  const person = approveAtOnce(server.alice(), stop.signal);
  const client = server.agent();
  const times = await timePairs(
    rounds,
    async () => {
      const { config, interrupts } = await interrupted();
      const start = performance.now();
      await agent.invoke(new Command({ resume: { [interrupts[0]!.id!]: { decisions: [{ type: "approve" }] } } }), config);
      return performance.now() - start;
    },
    async () => {
      const { config, interrupts } = await interrupted();
      const start = performance.now();
      const resume = await resolveInterrupts(client, agent, config, {}, { interrupts });
      await agent.invoke(new Command({ resume }), config);
      return performance.now() - start;
    },
  );
  stop.abort();
  await person;
  await model.close();
  report("LangGraph.js (createAgent + humanInTheLoopMiddleware)", times);
}

const server = await Server.start();
try {
  console.log(`${rounds} approvals a side after ${warmup} unmeasured, on Node.js ${process.version}`);
  await benchMastra(server);
  await benchLangGraph(server);
} finally {
  await server.close();
}
