/**
 * Tool approvals of the OpenAI Agents SDK for JavaScript (`@openai/agents`) answered by people
 * through clarify.
 *
 * A tool with `needsApproval` makes `run()` stop with `result.interruptions`. `approveInterruptions`
 * raises one clarify approval per interruption, waits for the people's decisions, and records
 * them on `result.state` (`approve`, or `reject` with the person's reason as the message the
 * model sees); `run(agent, result.state)` then goes on. A `session` or `always` scope approves the
 * tool for the rest of the run (`alwaysApprove`).
 *
 * The types here are structural, so this module imports nothing from `@openai/agents` at run
 * time. The Agents SDK has no way to run a call with edited arguments, so approvals are raised
 * without `allow_edit`.
 */

import { type ApprovalOptions, approvalRequest, type Decision, decide } from "./approval.js";
import type { Client } from "./client.js";
import type { Scope } from "./types.js";

export type { ApprovalOptions, Decision, ToolCall } from "./approval.js";

/** The parts of a `RunToolApprovalItem` this module reads. */
export interface ApprovalItem {
  readonly name?: string | undefined;
  readonly arguments?: string | undefined;
  readonly rawItem: { readonly callId?: string; readonly id?: string | undefined; readonly name?: string };
  readonly agent?: { readonly name?: string };
}

/** The parts of a `RunState` this module uses. */
export interface ApprovalState<Item> {
  approve(item: Item, options?: { alwaysApprove?: boolean }): void;
  reject(item: Item, options?: { alwaysReject?: boolean; message?: string }): void;
}

/** The parts of a `RunResult` (or `StreamedRunResult`, once completed) this module uses. */
export interface InterruptedResult<Item> {
  readonly interruptions?: readonly Item[] | undefined;
  readonly state: ApprovalState<Item>;
}

export interface AgentsApprovalOptions extends ApprovalOptions {
  /**
   * The scopes a person may choose; default `["once"]`. `session` and `always` approve the tool
   * for the rest of the run.
   */
  scopes?: Scope[];
}

/** A decision on one interruption. */
export interface InterruptionDecision<Item> extends Decision {
  item: Item;
}

/**
 * Asks people, through clarify, to decide every interruption of `result`, all at once; records
 * each decision on `result.state` and returns them in order. Resume with
 * `run(agent, result.state)`.
 */
export async function approveInterruptions<Item extends ApprovalItem>(
  client: Client,
  result: InterruptedResult<Item>,
  options: AgentsApprovalOptions = {},
): Promise<InterruptionDecision<Item>[]> {
  const items = result.interruptions ?? [];
  const controller = new AbortController();
  const signal = options.signal === undefined ? controller.signal : AbortSignal.any([options.signal, controller.signal]);
  let decisions: InterruptionDecision<Item>[];
  try {
    decisions = await Promise.all(
      items.map(async (item) => {
        const toolName = item.name ?? item.rawItem.name ?? "tool";
        const toolCallId = item.rawItem.callId ?? item.rawItem.id ?? "";
        const call = { toolCallId, toolName, input: parseArguments(item.arguments) };
        const agentName = options.agent ?? item.agent?.name;
        const body = approvalRequest(call, agentName === undefined ? options : { ...options, agent: agentName }, {
          idempotencyKey: await idempotencyKey(options.session, toolCallId, toolName, item.arguments),
          ...(options.scopes === undefined ? {} : { scopes: options.scopes }),
        });
        return { item, ...(await decide(client, body, signal)) };
      }),
    );
  } catch (error) {
    controller.abort(error);
    throw error;
  }
  for (const decision of decisions) {
    if (decision.approved) {
      result.state.approve(decision.item, { alwaysApprove: decision.scope === "session" || decision.scope === "always" });
    } else {
      result.state.reject(decision.item, decision.reason === undefined ? {} : { message: decision.reason });
    }
  }
  return decisions;
}

/**
 * Runs on until the agent finishes: while `result` has interruptions, asks people to decide them
 * and resumes with `resume(result.state)` (typically `(state) => run(agent, state)`).
 *
 * ```ts
 * const result = await runWithApprovals(clarify, await run(agent, "Deploy the release"),
 *   (state) => run(agent, state), { session: "chat-7" });
 * ```
 */
export async function runWithApprovals<Item extends ApprovalItem, Result extends InterruptedResult<Item>>(
  client: Client,
  result: Result,
  resume: (state: Result["state"]) => Promise<Result>,
  options: AgentsApprovalOptions = {},
): Promise<Result> {
  let current = result;
  while ((current.interruptions?.length ?? 0) > 0) {
    await approveInterruptions(client, current, options);
    current = await resume(current.state);
  }
  return current;
}

/** The call's arguments: the JSON object the model sent, or its text when it is not JSON. */
function parseArguments(text: string | undefined): unknown {
  if (text === undefined) return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * The same call in the same session always maps to the same approval, so asking again after a
 * restart finds it instead of asking twice. Call ids alone are not enough: scripted and some
 * hosted models reuse them.
 */
async function idempotencyKey(
  session: string | undefined,
  callId: string,
  name: string,
  args: string | undefined,
): Promise<string> {
  const text = JSON.stringify([session ?? null, callId, name, args ?? null]);
  const digest = await globalThis.crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  let hex = "";
  for (const byte of new Uint8Array(digest)) hex += byte.toString(16).padStart(2, "0");
  return `openai-agents:${hex}`;
}
