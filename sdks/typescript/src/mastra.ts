/**
 * Tool approvals of Mastra (`@mastra/core`) answered by people through clarify.
 *
 * A tool created with `requireApproval: true` (or every tool, with the agent's
 * `requireToolApproval`) makes `agent.generate()` stop before running it: the result's
 * `finishReason` is `'suspended'` and its `suspendPayload` names the call (`toolCallId`,
 * `toolName`, `args`). `resolveToolApprovals` raises one clarify approval for that call, waits
 * for the person's decision, and resumes the run with Mastra's own
 * `agent.approveToolCallGenerate()` or `agent.declineToolCallGenerate({ reason })`, whose reason
 * the model reads in place of the tool's result. Mastra suspends once per pending call, so a step
 * with several calls is decided one call after the other, until the run ends or stops for
 * something other than an approval (a tool that called `suspend()` itself), and the last result
 * is returned.
 *
 * Mastra resumes an approved call with the arguments the model gave, so the approvals are raised
 * without `allow_edit`. A request nobody answered (skipped, expired, cancelled) declines the call
 * with the outcome's note (`deploy was not run: nobody approved it (expired). The human did not
 * answer within ...`), so nothing runs unapproved. Each approval is raised under an
 * idempotency key made from Mastra's run id and the call id: deciding the same suspended run
 * again (after a restart, from `agent.listSuspendedRuns()`) finds the same request instead of
 * asking twice.
 *
 * The types here are structural, so this module imports nothing from `@mastra/core` at run time.
 */

import { type CreateFields, type Decision, decide, definedFields } from "./approval.js";
import type { Client } from "./client.js";
import type { JsonObject, NewRequest } from "./types.js";

export type { CreateFields, Decision } from "./approval.js";

/** The tool call a suspended run waits on an approval for (`result.suspendPayload`). */
export interface ToolApprovalPayload {
  toolCallId: string;
  toolName: string;
  /** The arguments the model gave. */
  args?: unknown;
}

/** The parts of a `generate()` result (Mastra's `FullOutput`) this module reads. */
export interface AgentResult {
  readonly finishReason?: string | undefined;
  readonly runId?: string | undefined;
  readonly suspendPayload?: unknown;
}

/**
 * The parts of a suspended run as `agent.listSuspendedRuns()` lists it (Mastra's `AgentRun`),
 * which is how a restarted process finds the runs still waiting.
 */
export interface SuspendedRun {
  readonly runId: string;
  readonly toolCalls: readonly {
    readonly toolCallId?: string | undefined;
    readonly toolName?: string | undefined;
    readonly args?: unknown;
    readonly requiresApproval: boolean;
  }[];
}

/** The parts of a Mastra `Agent` this module uses. */
export interface ApprovingAgent<Result extends AgentResult> {
  readonly name?: string;
  approveToolCallGenerate(options: { runId: string; toolCallId?: string }): Promise<Result>;
  declineToolCallGenerate(options: { runId: string; toolCallId?: string; reason?: string }): Promise<Result>;
}

export interface ResolveOptions {
  /**
   * Stops waiting for the person. The approval stays pending, and deciding the same run again
   * finds it.
   */
  signal?: AbortSignal;
  /** Told of each decision, before the run resumes with it (for logs, or a UI). */
  onDecision?: (call: ToolApprovalPayload, decision: Decision) => void;
}

/**
 * The tool call `result` (or a suspended run listed by `agent.listSuspendedRuns()`) waits on an
 * approval for, or `undefined` when it is not suspended for one (it finished, or a tool
 * suspended itself for other input).
 */
export function pendingToolApproval(result: AgentResult | SuspendedRun): ToolApprovalPayload | undefined {
  // A `generate()` result has `toolCalls` too (the calls the model made); a listed run has no
  // `finishReason`.
  if (!("finishReason" in result) && "toolCalls" in result) {
    const call = result.toolCalls.find((c) => c.requiresApproval);
    if (call?.toolCallId === undefined || call.toolName === undefined) return undefined;
    return { toolCallId: call.toolCallId, toolName: call.toolName, args: call.args };
  }
  if (result.finishReason !== "suspended") return undefined;
  const payload = result.suspendPayload;
  // A tool that called `suspend()` itself is suspended with its own payload beside the call;
  // only an approval suspends with the call alone.
  if (!isObject(payload) || "suspendPayload" in payload) return undefined;
  const { toolCallId, toolName, args } = payload as { toolCallId?: unknown; toolName?: unknown; args?: unknown };
  if (typeof toolCallId !== "string" || typeof toolName !== "string") return undefined;
  return { toolCallId, toolName, args };
}

/**
 * Asks people, through clarify, to approve or decline each tool call the run waits on, resumes
 * the run with each decision, and returns the result once it no longer waits on an approval.
 * `fields` are create fields for every request (`agent` defaults to the agent's name).
 *
 * The agent must be registered on a `Mastra` instance with storage, where Mastra keeps the
 * suspended run. `result` may also be a run `agent.listSuspendedRuns()` lists: a process that
 * restarted while a person was deciding finds its runs there, and deciding one finds the same
 * request.
 *
 * ```ts
 * const agent = mastra.getAgent("releaseBot");
 * const result = await resolveToolApprovals(clarify, agent, await agent.generate("Deploy"),
 *   { session: "chat-7" });
 * console.log(result.text);
 * ```
 */
export async function resolveToolApprovals<Result extends AgentResult>(
  client: Client,
  agent: ApprovingAgent<Result>,
  result: Result,
  fields?: CreateFields,
  options?: ResolveOptions,
): Promise<Result>;
export async function resolveToolApprovals<Result extends AgentResult>(
  client: Client,
  agent: ApprovingAgent<Result>,
  result: Result | SuspendedRun,
  fields?: CreateFields,
  options?: ResolveOptions,
): Promise<Result | SuspendedRun>;
export async function resolveToolApprovals<Result extends AgentResult>(
  client: Client,
  agent: ApprovingAgent<Result>,
  result: Result | SuspendedRun,
  fields: CreateFields = {},
  options: ResolveOptions = {},
): Promise<Result | SuspendedRun> {
  let current = result;
  for (;;) {
    const call = pendingToolApproval(current);
    const runId = current.runId;
    if (call === undefined || runId === undefined) return current;
    const decision = await decide(client, approvalBody(agent, runId, call, fields), options.signal);
    options.onDecision?.(call, decision);
    const target = { runId, toolCallId: call.toolCallId };
    const reason = refusal(call, decision);
    current = decision.approved
      ? await agent.approveToolCallGenerate(target)
      : await agent.declineToolCallGenerate(reason === undefined ? target : { ...target, reason });
  }
}

/**
 * What the model reads in place of the tool's result when the call was not approved: the
 * person's reason, or for a request nobody answered, that the tool did not run and why.
 */
function refusal(call: ToolApprovalPayload, decision: Decision): string | undefined {
  const { outcome } = decision;
  const defaulted = outcome.default_applied === true || outcome.questions[0]?.default_applied === true;
  if (outcome.status === "answered" || defaulted) return decision.reason;
  return `${call.toolName} was not run: nobody approved it (${outcome.status}). ${outcome.note ?? ""}`.trim();
}

function approvalBody(
  agent: { readonly name?: string },
  runId: string,
  call: ToolApprovalPayload,
  fields: CreateFields,
): NewRequest {
  return {
    agent: agent.name ?? "mastra",
    ...definedFields(fields),
    questions: [
      {
        kind: "approval",
        header: call.toolName.slice(0, 32),
        text: `Allow the agent to run ${call.toolName}?`,
        action: { name: call.toolName, arguments: argumentsObject(call.args) },
      },
    ],
    tool_call_id: call.toolCallId,
    idempotency_key: `mastra:${runId}:${call.toolCallId}`,
  };
}

/** Action arguments must be a JSON object; anything else is wrapped as `{ input }`. */
function argumentsObject(args: unknown): JsonObject {
  if (isObject(args)) return args as JsonObject;
  return { input: (args ?? null) as JsonObject[string] };
}

function isObject(value: unknown): value is object {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
