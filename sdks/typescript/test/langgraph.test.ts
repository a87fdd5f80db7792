/**
 * LangGraph.js interrupts and LangChain.js's `humanInTheLoopMiddleware` with the real packages:
 * an agent from `createAgent`, whose `ChatOpenAI` model is the scripted OpenAI-compatible server,
 * stops before the tools the middleware guards; a person answers through a real clarify server;
 * the thread resumes with the decisions. Plain graphs interrupt with strings and clarify-shaped
 * questions.
 */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Annotation, END, MemorySaver, START, StateGraph, interrupt } from "@langchain/langgraph";
import { ChatOpenAI } from "@langchain/openai";
import { type AnyAgentMiddleware, createAgent, humanInTheLoopMiddleware, type InterruptOnConfig, tool } from "langchain";
import { z } from "zod";

import type { AnswerBody, RequestRecord } from "@clarify-hitl/client";
import {
  pendingInterrupts,
  resolveInterrupts,
  runWithHumans,
  submitInterrupts,
} from "@clarify-hitl/client/langgraph";

import { type ScriptedCall, ScriptedOpenAI } from "./scripted-openai.js";
import { answerNext, Server, uniqueSession } from "./support.js";

let server: Server;
const models: ScriptedOpenAI[] = [];

before(async () => {
  server = await Server.start();
});

after(async () => {
  await Promise.all(models.map((model) => model.close()));
  await server.close();
});

type Ran = [string, Record<string, string>][];
type InterruptOn = { [toolName: string]: boolean | InterruptOnConfig };

// Under `exactOptionalPropertyTypes`, which these tests keep on, LangChain.js's types make the
// middleware's options `never`; without that option no cast is needed.
const guard = humanInTheLoopMiddleware as unknown as (options: { interruptOn: InterruptOn }) => AnyAgentMiddleware;

/** An agent whose model makes `calls` in one turn, then answers with the tool results it read. */
async function agentCalling(calls: ScriptedCall[], interruptOn: InterruptOn, ran: Ran) {
  const model = await ScriptedOpenAI.start([{ calls }]);
  models.push(model);
  const writeFile = tool(
    async ({ path, content }) => {
      ran.push(["write_file", { path, content }]);
      return `wrote ${path}`;
    },
    { name: "write_file", description: "Write a file.", schema: z.object({ path: z.string(), content: z.string() }) },
  );
  const deleteFile = tool(
    async ({ path }) => {
      ran.push(["delete_file", { path }]);
      return `deleted ${path}`;
    },
    { name: "delete_file", description: "Delete a file.", schema: z.object({ path: z.string() }) },
  );
  const agent = createAgent({
    model: new ChatOpenAI({ model: "gpt-scripted", apiKey: "sk-scripted", configuration: { baseURL: model.baseURL } }),
    tools: [writeFile, deleteFile],
    middleware: [guard({ interruptOn })],
    checkpointer: new MemorySaver(),
  });
  return { agent, model };
}

/** Answers the next `count` requests of `session` in turn. */
async function people(session: string, count: number, answer: (record: RequestRecord) => AnswerBody) {
  for (let i = 0; i < count; i += 1) await answerNext(server.alice(), { session }, answer);
}

const user = (content: string) => ({ messages: [{ role: "user", content }] });

describe("humanInTheLoopMiddleware", () => {
  test("two actions in one request: the person sees both, and a rejection's reason reaches the model", async () => {
    const session = uniqueSession("lg-two");
    const ran: Ran = [];
    const { agent, model } = await agentCalling(
      [
        { id: "call_0", name: "write_file", arguments: { path: "a.txt", content: "hi" } },
        { id: "call_1", name: "delete_file", arguments: { path: "b.txt" } },
      ],
      { write_file: true, delete_file: { allowedDecisions: ["approve", "reject"] } },
      ran,
    );
    const asked: RequestRecord[] = [];
    const person = people(session, 1, (record) => {
      asked.push(record);
      return { answers: { a1: { decision: "approve" }, a2: { decision: "deny", reason: "keep b.txt" } } };
    });
    await runWithHumans(agent, user("tidy up"), { configurable: { thread_id: session } }, server.agent());
    await person;

    assert.equal(asked.length, 1);
    const [record] = asked;
    assert.deepEqual(
      record?.questions.map((q) => [q.id, q.kind, q.action?.name, q.action?.arguments, q.allow_edit, q.text]),
      [
        ["a1", "approval", "write_file", { path: "a.txt", content: "hi" }, true, "Allow the agent to run write_file?"],
        ["a2", "approval", "delete_file", { path: "b.txt" }, false, "Allow the agent to run delete_file?"],
      ],
    );
    assert.equal(record?.session, session);
    assert.equal(record?.agent, "langgraph");
    // LangChain.js runs none of a batch's calls when one is rejected, and asks the model again
    // with the rejection.
    assert.deepEqual(ran, []);
    assert.equal(model.toolResults(1)["call_1"], "keep b.txt");
  });

  test("approved with edited arguments: the tool runs with the person's arguments", async () => {
    const session = uniqueSession("lg-edit");
    const ran: Ran = [];
    const { agent, model } = await agentCalling(
      [{ id: "call_0", name: "write_file", arguments: { path: "a.txt", content: "hi" } }],
      { write_file: true },
      ran,
    );
    const person = people(session, 1, () => ({
      decision: "approve",
      edited_arguments: { path: "c.txt", content: "hi" },
    }));
    const config = { configurable: { thread_id: session } };
    const output = await runWithHumans(agent, user("write"), config, server.agent());
    await person;
    assert.deepEqual(ran, [["write_file", { path: "c.txt", content: "hi" }]]);
    assert.deepEqual(model.toolResults(), { call_0: "wrote c.txt" });
    assert.equal(output.messages.at(-1)?.content, `results: {"call_0":"wrote c.txt"}`);
  });

  test("approved unchanged: the tool runs as called", async () => {
    const session = uniqueSession("lg-approve");
    const ran: Ran = [];
    const { agent } = await agentCalling(
      [{ id: "call_0", name: "write_file", arguments: { path: "a.txt", content: "x" } }],
      { write_file: { allowedDecisions: ["approve", "reject"], description: "Write into the repository?" } },
      ran,
    );
    const texts: string[] = [];
    const person = people(session, 1, (record) => {
      texts.push(record.questions[0]?.text ?? "");
      return { decision: "approve" };
    });
    await runWithHumans(agent, user("write"), { configurable: { thread_id: session } }, server.agent());
    await person;
    assert.deepEqual(ran, [["write_file", { path: "a.txt", content: "x" }]]);
    assert.deepEqual(texts, ["Write into the repository?"]);
  });

  test("changes requested: the call is rejected with the change asked for", async () => {
    const session = uniqueSession("lg-revise");
    const ran: Ran = [];
    const { agent, model } = await agentCalling(
      [{ id: "call_0", name: "delete_file", arguments: { path: "ledger.csv" } }],
      { delete_file: { allowedDecisions: ["approve", "reject"] } },
      ran,
    );
    const person = people(session, 1, () => ({ decision: "revise", reason: "archive it to old/ instead" }));
    await runWithHumans(agent, user("tidy up"), { configurable: { thread_id: session } }, server.agent());
    await person;
    assert.deepEqual(ran, []);
    assert.deepEqual(model.toolResults(), { call_0: "Changes requested: archive it to old/ instead" });
  });

  test("nobody answers in time: rejected with the outcome's note, and nothing runs", async () => {
    const session = uniqueSession("lg-expire");
    const ran: Ran = [];
    const { agent, model } = await agentCalling(
      [{ id: "call_0", name: "delete_file", arguments: { path: "all" } }],
      { delete_file: true },
      ran,
    );
    await runWithHumans(agent, user("delete"), { configurable: { thread_id: session } }, server.agent(), {
      timeout_seconds: 1,
    });
    assert.deepEqual(ran, []);
    const result = model.toolResults()["call_0"] ?? "";
    assert.match(result, /^delete_file was not run: nobody approved it \(expired\)\. /);
    assert.match(result, /did not answer within 1 second/);
  });
});

const Pick = Annotation.Root({
  colour: Annotation<unknown>(),
  name: Annotation<unknown>(),
  both: Annotation<unknown>(),
});

function clarifyShapedGraph() {
  return new StateGraph(Pick)
    .addNode("ask", () => {
      const colour = interrupt({ question: "Which colour?", choices: ["red", "blue"] });
      const name = interrupt("Your name?");
      const both = interrupt({
        questions: [
          { id: "x", question: "X?" },
          { id: "y", question: "Y?" },
        ],
      });
      return { colour, name, both };
    })
    .addEdge(START, "ask")
    .addEdge("ask", END)
    .compile({ checkpointer: new MemorySaver() });
}

function answerClarifyShaped(record: RequestRecord): AnswerBody {
  if (record.questions[0]?.kind === "single") return { option: "blue" };
  if (record.questions.length === 2) return { answers: { x: { text: "1" }, y: { text: "2" } } };
  return { text: "Ada" };
}

describe("plain interrupts", () => {
  test("clarify-shaped interrupts resume with their answers", async () => {
    const session = uniqueSession("lg-shaped");
    const person = people(session, 3, answerClarifyShaped);
    const output = (await runWithHumans(
      clarifyShapedGraph(),
      { colour: null, name: null, both: null },
      { configurable: { thread_id: session } },
      server.agent(),
    )) as { colour: unknown; name: unknown; both: { status: string; questions: { answer: unknown }[] } };
    await person;
    assert.equal(output.colour, "blue");
    assert.equal(output.name, "Ada");
    assert.equal(output.both.status, "answered");
    assert.deepEqual(
      output.both.questions.map((q) => q.answer),
      ["1", "2"],
    );
  });

  test("asking again about the same interrupt finds the same request", async () => {
    const session = uniqueSession("lg-again");
    const graph = clarifyShapedGraph();
    const config = { configurable: { thread_id: session } };
    const output = await graph.invoke({ colour: null, name: null, both: null }, config);
    const interrupts = await pendingInterrupts(graph, config, output);
    const first = await submitInterrupts(server.agent(), interrupts, config);
    // A restarted process reads the interrupts from the checkpoint, and asks again.
    const again = await submitInterrupts(server.agent(), await pendingInterrupts(graph, config), config);
    assert.deepEqual(
      again.map((r) => r.id),
      first.map((r) => r.id),
    );
    assert.equal(await resolveInterrupts(server.agent(), graph, config, {}, { timeoutSeconds: 0 }), undefined);
    await server.alice().answer(first[0]!.id, { option: "red" });
    const resume = await resolveInterrupts(server.agent(), graph, config, {}, { timeoutSeconds: 0 });
    assert.deepEqual(resume, { [interrupts[0]!.id!]: "red" });
    const page = await server.agent().listPage({ session });
    assert.equal(page.requests.length, 1);
  });

  test("a thread waiting after a restart goes on with input null", async () => {
    const session = uniqueSession("lg-continue");
    const graph = clarifyShapedGraph();
    const config = { configurable: { thread_id: session } };
    await graph.invoke({ colour: null, name: null, both: null }, config);
    const person = people(session, 3, answerClarifyShaped);
    const output = (await runWithHumans(graph, null, config, server.agent(), { tags: ["resumed"] })) as {
      colour: unknown;
      name: unknown;
    };
    await person;
    assert.deepEqual([output.colour, output.name], ["blue", "Ada"]);
    const page = await server.agent().listPage({ session });
    assert.deepEqual(
      page.requests.map((r) => r.tags),
      [["resumed"], ["resumed"], ["resumed"]],
    );
  });
});
