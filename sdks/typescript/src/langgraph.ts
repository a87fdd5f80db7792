/**
 * LangGraph.js and LangChain.js: answering a graph's interrupts through clarify.
 *
 * A LangGraph node pauses with `interrupt(value)`; the caller sees the pending interrupts (in
 * `__interrupt__` of the output, or the tasks of `graph.getState(config)`) and resumes the thread
 * with `new Command({ resume: { [interruptId]: value } })`. This module turns each interrupt into
 * one clarify request, and each outcome into the value the node expects:
 *
 * - LangChain.js's `humanInTheLoopMiddleware` (`createAgent({ middleware: [...] })`): every
 *   action request becomes an approval question, its arguments editable only when the tool's
 *   `allowedDecisions` include `edit`. The outcome comes back as `{ decisions: [...] }` in the
 *   same order: `approve`, `edit` (when the arguments were edited), `reject` with the person's
 *   reason (`Changes requested: <reason>` when they asked for changes). A request that was not
 *   answered (skipped, expired, cancelled) rejects every action with the outcome's note, so
 *   nothing runs unapproved.
 * - A clarify-shaped value (`{ question, choices }` or `{ questions: [...] }`, any create field
 *   beside them) or a plain string (an open question): resumed with the answer of its one
 *   question (the label, the list of labels, the text, or a form's values), or with the whole
 *   outcome when it has several questions or was not answered.
 *
 * Each request gets an idempotency key made of the thread id, the interrupt id and a digest of
 * its value, so running the same step again (after a crash, or from another process answering a
 * webhook) finds the same request instead of asking twice. `session` defaults to the thread id
 * and `agent` to `langgraph`.
 *
 * The types here are structural: only `runWithHumans` loads `@langchain/langgraph` (for its
 * `Command`), when it is called.
 */

import { type CreateFields, definedFields } from "./approval.js";
import type { Client } from "./client.js";
import type {
  JsonObject,
  JsonValue,
  NewQuestion,
  NewRequest,
  Outcome,
  QuestionOutcome,
  Record as RequestRecord,
} from "./types.js";

export type { CreateFields } from "./approval.js";

/** A pending interrupt: LangGraph's `Interrupt`. */
export interface Interrupt {
  readonly id?: string | undefined;
  readonly value?: unknown;
}

/** The parts of a run's config this module reads: the thread the interrupts belong to. */
export interface GraphConfig {
  configurable?: { [key: string]: unknown };
}

/** The parts of a graph's `StateSnapshot` this module reads. */
export interface GraphState {
  readonly values: unknown;
  readonly tasks: readonly { readonly interrupts: readonly Interrupt[] }[];
}

/**
 * The parts of a compiled graph (with a checkpointer) this module uses; a LangChain.js agent
 * from `createAgent` is one.
 */
export interface InterruptibleGraph {
  invoke(input: unknown, config: GraphConfig): Promise<unknown>;
  getState(config: GraphConfig): Promise<GraphState>;
}

/** What a graph's `invoke` resolves to: its state once it ends. */
export type GraphOutput<Graph extends InterruptibleGraph> = Awaited<ReturnType<Graph["invoke"]>>;

/** The resume value of each interrupt, by interrupt id, for `new Command({ resume })`. */
export type Resume = { [interruptId: string]: unknown };

/** A middleware decision on one action. */
export type HITLDecision =
  | { type: "approve" }
  | { type: "edit"; editedAction: { name: string; args: JsonObject } }
  | { type: "reject"; message: string };

export interface ResolveOptions {
  /**
   * The interrupts to answer; default: the thread's pending interrupts, from
   * `graph.getState(config)`.
   */
  interrupts?: readonly Interrupt[];
  /**
   * How long to wait for the people; `undefined` (the default) waits until every request is
   * resolved, `0` only looks.
   */
  timeoutSeconds?: number;
  /** Stops waiting; the requests stay pending, and asking again finds them. */
  signal?: AbortSignal;
}

/** An interrupt's value has a shape this module cannot turn into a request. */
export class UnsupportedInterruptError extends Error {
  override name = "UnsupportedInterruptError";
}

const MAX_QUESTIONS = 5;

/** The requests one interrupt needs, and how their outcomes become its resume value. */
interface Plan {
  interruptId: string;
  bodies: NewRequest[];
  resume(outcomes: Outcome[]): unknown;
}

/**
 * The interrupts a run stopped at: `__interrupt__` of its output when given, else the thread's
 * pending interrupts.
 */
export async function pendingInterrupts(
  graph: InterruptibleGraph,
  config: GraphConfig,
  output?: unknown,
): Promise<Interrupt[]> {
  if (isObject(output)) {
    const found = (output as { __interrupt__?: unknown }).__interrupt__;
    return Array.isArray(found) ? (found as Interrupt[]) : [];
  }
  return interruptsOf(await graph.getState(config));
}

/**
 * Raises the requests for `interrupts` and returns their records without waiting (for a
 * webhook-driven resume: give `callback_url`, then call `resolveInterrupts` when it fires).
 */
export async function submitInterrupts(
  client: Client,
  interrupts: readonly Interrupt[],
  config: GraphConfig,
  fields: CreateFields = {},
  options: { signal?: AbortSignal } = {},
): Promise<RequestRecord[]> {
  const records: RequestRecord[] = [];
  for (const plan of await plansFor(interrupts, config, fields)) {
    for (const body of plan.bodies) records.push(await client.create(body, signalOnly(options.signal)));
  }
  return records;
}

/**
 * Asks about every pending interrupt of the thread (or `options.interrupts`) and returns the
 * resume mapping `{ [interruptId]: value }` for `new Command({ resume })`, or `undefined` when
 * some request is still pending after `options.timeoutSeconds`. `fields` are create fields for
 * every request (`responders`, `callback_url`, `timeout_seconds`, `tags`, ...).
 */
export async function resolveInterrupts(
  client: Client,
  graph: InterruptibleGraph,
  config: GraphConfig,
  fields: CreateFields = {},
  options: ResolveOptions = {},
): Promise<Resume | undefined> {
  const interrupts = options.interrupts ?? interruptsOf(await graph.getState(config));
  const plans = await plansFor(interrupts, config, fields);
  const created: RequestRecord[][] = [];
  for (const plan of plans) {
    const records: RequestRecord[] = [];
    for (const body of plan.bodies) records.push(await client.create(body, signalOnly(options.signal)));
    created.push(records);
  }
  const resume: Resume = {};
  for (const [index, plan] of plans.entries()) {
    const outcomes: Outcome[] = [];
    for (const record of created[index] ?? []) {
      const done =
        record.status !== "pending"
          ? record
          : await client.wait(record.id, {
              ...signalOnly(options.signal),
              ...(options.timeoutSeconds === undefined ? {} : { timeoutSeconds: options.timeoutSeconds }),
            });
      if (done.outcome == null) return undefined;
      outcomes.push(done.outcome);
    }
    resume[plan.interruptId] = plan.resume(outcomes);
  }
  return resume;
}

/**
 * Runs a compiled graph (with a checkpointer) to its end, asking people through clarify for
 * every interrupt on the way, and returns the final output.
 *
 * Pass `input` `null` to continue a thread that is already waiting at interrupts (after a
 * restart): the same requests are found again by their idempotency keys.
 *
 * ```ts
 * const config = { configurable: { thread_id: "chat-7" } };
 * const output = await runWithHumans(agent, { messages: [{ role: "user", content: "Tidy up" }] },
 *   config, clarify);
 * ```
 */
export async function runWithHumans<Graph extends InterruptibleGraph>(
  graph: Graph,
  input: unknown,
  config: GraphConfig,
  client: Client,
  fields: CreateFields = {},
): Promise<GraphOutput<Graph>> {
  let output = input === null || input === undefined ? undefined : await graph.invoke(input, config);
  for (;;) {
    const interrupts =
      output === undefined ? interruptsOf(await graph.getState(config)) : await pendingInterrupts(graph, config, output);
    if (interrupts.length === 0) return (output ?? (await graph.getState(config)).values) as GraphOutput<Graph>;
    const resume = await resolveInterrupts(client, graph, config, fields, { interrupts });
    if (resume === undefined) throw new Error("a request is still pending after the timeout");
    output = await graph.invoke(await command(resume), config);
  }
}

// A specifier in a variable, so that the declarations this package ships do not name
// @langchain/langgraph, which is an optional peer dependency.
const LANGGRAPH = "@langchain/langgraph";

async function command(resume: Resume): Promise<unknown> {
  const { Command } = (await import(LANGGRAPH)) as { Command: new (fields: { resume: Resume }) => unknown };
  return new Command({ resume });
}

function interruptsOf(state: GraphState): Interrupt[] {
  return state.tasks.flatMap((task) => [...task.interrupts]);
}

function threadId(config: GraphConfig): string {
  const thread = config.configurable?.thread_id;
  if (thread === undefined || thread === null || thread === "") {
    throw new Error("the graph's config needs configurable.thread_id: interrupts are resumed by thread");
  }
  return String(thread);
}

async function plansFor(interrupts: readonly Interrupt[], config: GraphConfig, fields: CreateFields): Promise<Plan[]> {
  const thread = threadId(config);
  return Promise.all(interrupts.map((interrupt) => planFor(interrupt, thread, fields)));
}

async function planFor(interrupt: Interrupt, thread: string, fields: CreateFields): Promise<Plan> {
  const interruptId = interrupt.id;
  if (typeof interruptId !== "string") {
    throw new UnsupportedInterruptError("expected a LangGraph interrupt with an id");
  }
  const value = interrupt.value;
  const base: NewRequest = {
    session: thread,
    agent: "langgraph",
    ...definedFields(fields),
    idempotency_key: `langgraph:${thread}:${interruptId}:${await digest(value)}`,
  };
  if (typeof value === "string") {
    return { interruptId, bodies: [{ ...base, question: value }], resume: (o) => answerOrOutcome(o[0]) };
  }
  if (isObject(value)) {
    if ("actionRequests" in value) return middlewarePlan(interruptId, value, base);
    if ("question" in value || "prompt" in value || "questions" in value) {
      return { interruptId, bodies: [{ ...base, ...(value as NewRequest) }], resume: (o) => answerOrOutcome(o[0]) };
    }
  }
  throw new UnsupportedInterruptError(
    `interrupt ${interruptId} has a value clarify cannot ask about (${describe(value)}); interrupt with a string, ` +
      "a { question, choices } object, or use humanInTheLoopMiddleware",
  );
}

interface Action {
  qid: string;
  name: string;
  args: JsonObject;
  allowed: string[];
}

function middlewarePlan(interruptId: string, value: object, base: NewRequest): Plan {
  const { actionRequests, reviewConfigs } = value as { actionRequests?: unknown; reviewConfigs?: unknown };
  if (!Array.isArray(actionRequests) || actionRequests.length === 0) {
    throw new UnsupportedInterruptError("a humanInTheLoopMiddleware interrupt without actions");
  }
  const allowedByName = new Map<string, string[]>();
  for (const config of Array.isArray(reviewConfigs) ? reviewConfigs : []) {
    if (isObject(config)) {
      const { actionName, allowedDecisions } = config as { actionName?: unknown; allowedDecisions?: unknown };
      if (typeof actionName === "string" && Array.isArray(allowedDecisions)) {
        allowedByName.set(actionName, allowedDecisions.filter((d): d is string => typeof d === "string"));
      }
    }
  }
  const actions: Action[] = [];
  const questions: NewQuestion[] = [];
  actionRequests.forEach((request: unknown, i) => {
    const { name, args, description } = (isObject(request) ? request : {}) as {
      name?: unknown;
      args?: unknown;
      description?: unknown;
    };
    if (typeof name !== "string") throw new UnsupportedInterruptError(`actionRequests[${i}] has no tool name`);
    const action: Action = {
      qid: `a${i + 1}`,
      name,
      args: isObject(args) ? (args as JsonObject) : {},
      allowed: allowedByName.get(name) ?? ["approve", "reject"],
    };
    actions.push(action);
    questions.push({
      id: action.qid,
      kind: "approval",
      header: name.slice(0, 32),
      text: questionText(name, typeof description === "string" ? description : undefined),
      action: { name, arguments: action.args },
      allow_edit: action.allowed.includes("edit"),
    });
  });
  const bodies: NewRequest[] = [];
  for (let i = 0; i < questions.length; i += MAX_QUESTIONS) {
    bodies.push({ ...base, questions: questions.slice(i, i + MAX_QUESTIONS) });
  }
  return {
    interruptId,
    bodies,
    resume: (outcomes) => ({
      decisions: actions.map((action, index) => {
        const outcome = outcomes[Math.floor(index / MAX_QUESTIONS)];
        if (outcome === undefined) throw new Error(`no outcome for ${action.name}`);
        return decisionFor(outcome, action);
      }),
    }),
  };
}

// The middleware's own description when the tool's config gives none:
// `${descriptionPrefix}\n\nTool: ${name}\nArgs: ${JSON.stringify(args, null, 2)}`.
const DEFAULT_PREFIX = "Tool execution requires approval";
const TOOL_AND_ARGS = /\n\nTool: (?<name>[^\n]*)\nArgs: [\s\S]*$/;

/**
 * What the person reads above the approval. The arguments are the action's, which every surface
 * shows (and lets edit) as it shows every approval's, so the middleware's default description,
 * which repeats them, is cut to its prefix, and its default prefix to a question of ours.
 */
function questionText(name: string, description: string | undefined): string {
  if (description === undefined || description === "") return `Allow the agent to run ${name}?`;
  const tail = TOOL_AND_ARGS.exec(description);
  if (tail === null || tail.groups?.["name"] !== name) return description;
  const prefix = description.slice(0, tail.index).trim();
  return prefix === "" || prefix === DEFAULT_PREFIX ? `Allow the agent to run ${name}?` : prefix;
}

/** The middleware decision for one action, from the outcome of its question. */
function decisionFor(outcome: Outcome, action: Action): HITLDecision {
  const { name, args, allowed } = action;
  if (outcome.status !== "answered") {
    return reject(`${name} was not run: nobody approved it (${outcome.status}). ${outcome.note ?? ""}`.trim());
  }
  const question = outcome.questions.find((q) => q.id === action.qid);
  if (question?.decision === "approve") {
    const edited = question.edited_arguments ?? undefined;
    if (edited !== undefined && !sameJson(edited, args) && allowed.includes("edit")) {
      return { type: "edit", editedAction: { name, args: edited } };
    }
    if (allowed.includes("approve")) return { type: "approve" };
    return { type: "edit", editedAction: { name, args: edited ?? args } };
  }
  return reject(refusal(question) ?? `The person denied ${name}.`);
}

function reject(message: string): HITLDecision {
  return { type: "reject", message };
}

/** What the agent reads when an approval was not approved: the reason, or the change asked for. */
function refusal(question: QuestionOutcome | undefined): string | undefined {
  if (question?.decision === "revise") return `Changes requested: ${question.reason ?? ""}`.trim();
  if (question?.decision === "deny") return question.reason ?? undefined;
  return undefined;
}

function answerOrOutcome(outcome: Outcome | undefined): unknown {
  if (outcome === undefined) return undefined;
  const [only, ...rest] = outcome.questions;
  if (outcome.status === "answered" && only !== undefined && rest.length === 0) return only.answer;
  return outcome;
}

/** A short digest of an interrupt's value: the same value gives the same key, key order aside. */
async function digest(value: unknown): Promise<string> {
  const bytes = new TextEncoder().encode(canonicalJson(value));
  const hash = await globalThis.crypto.subtle.digest("SHA-256", bytes);
  let hex = "";
  for (const byte of new Uint8Array(hash)) hex += byte.toString(16).padStart(2, "0");
  return hex.slice(0, 16);
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (isObject(value)) {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value ?? null) ?? "null";
}

function sameJson(a: JsonValue, b: JsonValue): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

function signalOnly(signal: AbortSignal | undefined): { signal?: AbortSignal } {
  return signal === undefined ? {} : { signal };
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function isObject(value: unknown): value is object {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
