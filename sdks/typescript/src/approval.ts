/**
 * What the framework helpers share: the clarify approval raised for one tool call, and what its
 * outcome means for the call (approved, or denied with a reason the model may read).
 */

import type { Client } from "./client.js";
import type { JsonObject, NewRequest, Outcome, Scope } from "./types.js";

/** One tool call a framework wants a person to approve. */
export interface ToolCall {
  toolCallId: string;
  toolName: string;
  /** The call's arguments as the model gave them. */
  input: unknown;
}

/** How the helpers raise approvals. Every field is optional. */
export interface ApprovalOptions {
  /** The conversation or run; shown to the person, and a filter in the inbox. */
  session?: string;
  /** Who asks; shown to the person. */
  agent?: string;
  /** What the person should know to decide (text, or a JSON object shown pretty-printed). */
  context?: string | JsonObject;
  tags?: string[];
  /** Only these responders may answer. */
  responders?: string[];
  /** How long the person has; absent: the server's default (an hour), `0`: no limit. */
  timeoutSeconds?: number;
  /** Where the outcome is POSTed once resolved. */
  callbackUrl?: string;
  /** The question's text for a call; default "Allow <tool>?". */
  text?: (call: ToolCall) => string;
  /**
   * Stops waiting. The approvals stay pending, and asking again for the same calls picks them up
   * (`Client.cancel` them if nobody should answer any more).
   */
  signal?: AbortSignal;
}

/** What became of one approval. */
export interface Decision {
  approved: boolean;
  /**
   * The person's reason, or for an unanswered approval the note saying what happened. When the
   * person asked for changes it reads `Changes requested: <reason>`, so that a model can tell it
   * from a plain denial and try again with the change.
   */
  reason: string | undefined;
  /** The person asked for changes (`revise`) instead of denying outright. */
  changesRequested: boolean;
  /** How long the person allowed it for, when approved. */
  scope: Scope | undefined;
  /** The whole outcome, for logs or a model. */
  outcome: Outcome;
}

/** The request body of an approval for one tool call. */
export function approvalRequest(
  call: ToolCall,
  options: ApprovalOptions,
  extra: { idempotencyKey: string; scopes?: Scope[] },
): NewRequest {
  const body: NewRequest = {
    questions: [
      {
        kind: "approval",
        text: options.text?.(call) ?? `Allow ${call.toolName}?`,
        action: { name: call.toolName, arguments: argumentsObject(call.input) },
        ...(extra.scopes === undefined ? {} : { scopes: extra.scopes }),
      },
    ],
    tool_call_id: call.toolCallId,
    idempotency_key: extra.idempotencyKey,
  };
  if (options.session !== undefined) body.session = options.session;
  if (options.agent !== undefined) body.agent = options.agent;
  if (options.context !== undefined) body.context = options.context;
  if (options.tags !== undefined) body.tags = options.tags;
  if (options.responders !== undefined) body.responders = options.responders;
  if (options.timeoutSeconds !== undefined) body.timeout_seconds = options.timeoutSeconds;
  if (options.callbackUrl !== undefined) body.callback_url = options.callbackUrl;
  return body;
}

/**
 * Raises the approval (or finds it again, by its idempotency key) and waits for its outcome. An
 * abort stops the wait but leaves the approval pending, so that asking again picks it up.
 */
export async function decide(client: Client, body: NewRequest, signal: AbortSignal | undefined): Promise<Decision> {
  const outcome = await client.ask(body, { cancelOnAbort: false, ...(signal === undefined ? {} : { signal }) });
  return decisionOf(outcome);
}

/**
 * What an approval's outcome means. Only an approval runs the call: a denial, a skip, an expiry
 * or a cancellation refuses it. An expiry whose `on_timeout` default approves (v2) runs it too,
 * since that is what the person who set the default asked for.
 */
export function decisionOf(outcome: Outcome): Decision {
  const question = outcome.questions[0];
  const decided = outcome.status === "answered" || question?.default_applied === true || outcome.default_applied === true;
  const approved = decided && question?.decision === "approve";
  let reason: string | undefined;
  const changesRequested = decided && question?.decision === "revise";
  if (changesRequested) {
    reason = `Changes requested: ${question?.reason ?? ""}`.trim();
  } else if (outcome.status === "answered" || (decided && question?.decision != null)) {
    reason = question?.reason ?? undefined;
  } else {
    reason = outcome.note ?? `the approval was ${outcome.status}`;
  }
  return {
    approved,
    reason,
    changesRequested,
    scope: approved ? (question?.scope ?? "once") : undefined,
    outcome,
  };
}

/** Action arguments must be a JSON object; anything else is wrapped as `{ input }`. */
function argumentsObject(input: unknown): JsonObject {
  if (isObject(input)) return input as JsonObject;
  return { input: (input ?? null) as JsonObject[string] };
}

function isObject(value: unknown): value is object {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The create fields a framework helper passes through to every request it raises (`agent`,
 * `session`, `tags`, `responders`, `timeout_seconds`, `callback_url`, ...), as the HTTP API
 * spells them. What is asked (`questions` and the like) and the idempotency key come from the
 * framework's own objects.
 */
export type CreateFields = Omit<
  NewRequest,
  "questions" | "question" | "prompt" | "choices" | "options" | "multi_select" | "idempotency_key"
>;

/** `fields` without the ones left undefined, so they do not override a default. */
export function definedFields(fields: CreateFields): CreateFields {
  const defined: { [name: string]: unknown } = {};
  for (const [name, value] of Object.entries(fields)) if (value !== undefined) defined[name] = value;
  return defined as CreateFields;
}
