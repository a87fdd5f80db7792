/**
 * Tool approvals of the Vercel AI SDK (`ai` 6 and 7) answered by people through clarify.
 *
 * A `toolApproval` setting that says `'user-approval'` for a call (in AI SDK 6, a tool with
 * `needsApproval`) makes `generateText` / `streamText` stop with `tool-approval-request` parts
 * instead of running it.
 * `askForApprovals` raises one clarify approval per such request, waits for the people's
 * decisions, and returns the `role: 'tool'` message of `tool-approval-response` parts that the
 * next call expects; denials carry the person's reason, which the model sees.
 *
 * The types here are structural, so this module imports nothing from `ai` at run time and works
 * with whichever version the application has. Each approval is raised under an idempotency key
 * made from the SDK's `approvalId`: calling again for the same messages (after a restart, from
 * another process) finds the same approvals instead of asking twice.
 */

import { type ApprovalOptions, approvalRequest, type Decision, decide, type ToolCall } from "./approval.js";
import type { Client } from "./client.js";

export type { ApprovalOptions, Decision, ToolCall } from "./approval.js";

/** A tool call waiting for approval: the SDK's approval id and the call. */
export interface ToolApprovalRequest extends ToolCall {
  approvalId: string;
  /** Why it needs approval, when the `toolApproval` setting gave a reason. */
  approvalReason?: string;
}

/** A decision on one approval request. */
export interface ToolApprovalDecision extends ToolApprovalRequest, Decision {}

/** The `tool-approval-response` part the AI SDK reads from a `role: 'tool'` message. */
export interface ToolApprovalResponse {
  type: "tool-approval-response";
  approvalId: string;
  approved: boolean;
  reason?: string;
}

/** The message to append to the conversation before calling the model again. */
export interface ToolApprovalMessage {
  role: "tool";
  content: ToolApprovalResponse[];
}

/**
 * Where approval requests are read from: a `generateText` result or one of its steps (its
 * `content`), the messages of a conversation (`result.response.messages`, or the whole history,
 * model or UI messages), or a list of content parts (`await streamResult.content`).
 */
export type ApprovalSource = { readonly content: readonly unknown[] } | readonly unknown[];

/**
 * The approval requests in `source` still waiting for a response, in order. Requests the SDK
 * decided by itself (`isAutomatic`) and requests a `tool-approval-response` in `source` already
 * answers are left out.
 */
export function toolApprovalRequests(source: ApprovalSource): ToolApprovalRequest[] {
  const parts = partsOf(source);
  const calls = new Map<string, { toolName: string; input: unknown }>();
  const answered = new Set<string>();
  for (const part of parts) {
    if (part.type === "tool-call" && typeof part.toolCallId === "string" && typeof part.toolName === "string") {
      calls.set(part.toolCallId, { toolName: part.toolName, input: part.input });
    } else if (part.type === "tool-approval-response" && typeof part.approvalId === "string") {
      answered.add(part.approvalId);
    }
  }
  const requests: ToolApprovalRequest[] = [];
  for (const part of parts) {
    const request = approvalRequestOf(part, calls);
    if (request !== undefined && !answered.has(request.approvalId)) {
      answered.add(request.approvalId);
      requests.push(request);
    }
  }
  return requests;
}

/**
 * Asks people, through clarify, to decide every pending approval request in `source`, all at
 * once, and returns their decisions in the same order. For a chat UI built on `useChat`, send
 * each to `addToolApprovalResponse({ id: d.approvalId, approved: d.approved, reason: d.reason })`.
 */
export async function decideToolApprovals(
  client: Client,
  source: ApprovalSource,
  options: ApprovalOptions = {},
): Promise<ToolApprovalDecision[]> {
  const requests = toolApprovalRequests(source);
  // One signal for all, so aborting (or one failing) stops and cancels every wait.
  const controller = new AbortController();
  const signal = options.signal === undefined ? controller.signal : AbortSignal.any([options.signal, controller.signal]);
  try {
    return await Promise.all(
      requests.map(async (request) => {
        // The reason the approval setting gave is what the person should know, unless the
        // caller says otherwise.
        const shown =
          options.context === undefined && request.approvalReason !== undefined
            ? { ...options, context: request.approvalReason }
            : options;
        const body = approvalRequest(request, shown, { idempotencyKey: `ai-sdk:${request.approvalId}` });
        return { ...request, ...(await decide(client, body, signal)) };
      }),
    );
  } catch (error) {
    controller.abort(error);
    throw error;
  }
}

/** The `role: 'tool'` message answering the decided approval requests. */
export function toolApprovalMessage(decisions: readonly ToolApprovalDecision[]): ToolApprovalMessage {
  return {
    role: "tool",
    content: decisions.map((decision) => ({
      type: "tool-approval-response",
      approvalId: decision.approvalId,
      approved: decision.approved,
      ...(decision.reason === undefined ? {} : { reason: decision.reason }),
    })),
  };
}

/**
 * Asks people to decide every pending approval request in `source` and returns the message to
 * append before calling the model again, or `undefined` when nothing waits for approval.
 *
 * ```ts
 * let result = await generateText({ model, tools, messages });
 * messages.push(...result.response.messages);
 * const approvals = await askForApprovals(clarify, result, { session: "chat-7" });
 * if (approvals) {
 *   messages.push(approvals);
 *   result = await generateText({ model, tools, messages });
 * }
 * ```
 */
export async function askForApprovals(
  client: Client,
  source: ApprovalSource,
  options: ApprovalOptions = {},
): Promise<ToolApprovalMessage | undefined> {
  const decisions = await decideToolApprovals(client, source, options);
  return decisions.length === 0 ? undefined : toolApprovalMessage(decisions);
}

type Part = { readonly type?: unknown; readonly [field: string]: unknown };

function partsOf(source: ApprovalSource): Part[] {
  const items: readonly unknown[] = isArray(source) ? source : source.content;
  const parts: Part[] = [];
  for (const item of items) {
    if (!isRecord(item)) continue;
    if (typeof item.role === "string") {
      // A model message holds `content` (a string, or parts); a UI message holds `parts`.
      const inner = isArray(item.content) ? item.content : isArray(item.parts) ? item.parts : [];
      for (const part of inner) if (isRecord(part)) parts.push(part);
    } else {
      parts.push(item);
    }
  }
  return parts;
}

function approvalRequestOf(
  part: Part,
  calls: Map<string, { toolName: string; input: unknown }>,
): ToolApprovalRequest | undefined {
  if (part.type === "tool-approval-request") {
    if (part.isAutomatic === true || typeof part.approvalId !== "string") return undefined;
    // A result's content part carries the call; a message part refers to it by id.
    const embedded = isRecord(part.toolCall) ? part.toolCall : undefined;
    const toolCallId = embedded?.toolCallId ?? part.toolCallId;
    if (typeof toolCallId !== "string") return undefined;
    const call =
      embedded !== undefined && typeof embedded.toolName === "string"
        ? { toolName: embedded.toolName, input: embedded.input }
        : calls.get(toolCallId);
    if (call === undefined) return undefined;
    return {
      approvalId: part.approvalId,
      toolCallId,
      ...call,
      ...(typeof part.reason === "string" ? { approvalReason: part.reason } : {}),
    };
  }
  // A UI message's tool part: `tool-<name>` (or `dynamic-tool` with `toolName`), waiting in
  // state `approval-requested` with its `approval`.
  if (typeof part.type === "string" && part.state === "approval-requested" && isRecord(part.approval)) {
    const approval = part.approval;
    if (approval.isAutomatic === true || typeof approval.id !== "string") return undefined;
    if (typeof part.toolCallId !== "string") return undefined;
    const toolName =
      typeof part.toolName === "string"
        ? part.toolName
        : part.type.startsWith("tool-")
          ? part.type.slice("tool-".length)
          : undefined;
    if (toolName === undefined) return undefined;
    return { approvalId: approval.id, toolCallId: part.toolCallId, toolName, input: part.input };
  }
  return undefined;
}

function isArray(value: unknown): value is readonly unknown[] {
  return Array.isArray(value);
}

function isRecord(value: unknown): value is Part {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
