/**
 * The wire shapes of clarify's HTTP API, as TypeScript types.
 *
 * Field names are the server's (snake_case), so a record, an outcome or a request body reads the
 * same here, in the API reference and in the Python SDK. Fields a newer server adds pass through
 * untouched: the client never rebuilds objects, it returns what the server sent.
 *
 * Fields marked "v2" (forms, quorum votes, defaults on timeout) exist only on servers that build
 * them; they are optional here so the same types describe both.
 */

/** Where a request stands: `pending`, then exactly one of the other four. */
export type Status = "pending" | "answered" | "skipped" | "expired" | "cancelled";

/** The statuses a request ends in. */
export type ResolvedStatus = Exclude<Status, "pending">;

/** `form` is v2. */
export type QuestionKind = "open" | "single" | "multi" | "approval" | "form";

/** How long an approval is remembered. */
export type Scope = "once" | "session" | "always";

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export type JsonObject = { [key: string]: JsonValue };

/** One choice of a `single` or `multi` question. */
export interface Option {
  id: string;
  label: string;
  description?: string | null;
}

/** What an approval asks to do: a tool name and its arguments. */
export interface Action {
  name: string;
  arguments: JsonObject;
}

/** v2: one field of a `form` question. */
export interface FormField {
  id: string;
  label: string;
  type: "text" | "number" | "integer" | "boolean" | "choice" | "choices";
  required?: boolean;
  description?: string | null;
  default?: JsonValue;
  min_length?: number;
  max_length?: number;
  pattern?: string;
  format?: "email" | "url" | "date" | "datetime";
  minimum?: number;
  maximum?: number;
  options?: (string | Option)[];
  min_items?: number;
  max_items?: number;
}

/** A question as the server validated it (in a record). */
export interface Question {
  id: string;
  text: string;
  kind: QuestionKind;
  header?: string | null;
  options?: Option[] | null;
  allow_other?: boolean | null;
  recommended?: string | null;
  action?: Action | null;
  scopes?: Scope[] | null;
  allow_edit?: boolean | null;
  /** v2: the fields of a `form` question. */
  fields?: FormField[] | null;
}

/**
 * A question as an agent writes it. Options may be bare strings; `question` and `choices` are
 * accepted for `text` and `options` (the server coerces LLM-shaped input).
 */
export interface NewQuestion {
  id?: string;
  text?: string;
  question?: string;
  kind?: QuestionKind;
  header?: string;
  options?: (string | Option)[];
  choices?: (string | Option)[];
  allow_other?: boolean;
  recommended?: string;
  action?: Action;
  scopes?: Scope[];
  allow_edit?: boolean;
  /** v2 */
  fields?: FormField[];
  /** v2: a flat JSON Schema object, coerced into `fields`. */
  schema?: JsonObject;
}

/** v2: what an unanswered request resolves to when it times out. */
export type OnTimeout =
  | { decision: "approve" | "deny"; reason?: string }
  | { option: string }
  | "recommended";

/**
 * The body of `POST /v1/requests`: 1 to 5 `questions`, or one question given at the top level
 * as `question` (or `prompt`) with optional `choices`.
 */
export interface NewRequest {
  questions?: NewQuestion[];
  question?: string;
  prompt?: string;
  choices?: (string | Option)[];
  options?: (string | Option)[];
  multi_select?: boolean;
  context?: string | JsonObject;
  session?: string;
  agent?: string;
  tags?: string[];
  tool_call_id?: string;
  /** Absent: the server's default (an hour); `0`: never expires. */
  timeout_seconds?: number;
  allow_skip?: boolean;
  responders?: string[];
  callback_url?: string;
  idempotency_key?: string;
  /** Return an identical pending request of the same session instead of asking twice. */
  dedupe?: boolean;
  /** v2: approvals from this many responders (1 to 10) answer the request. */
  approvals_required?: number;
  /** v2 */
  on_timeout?: OnTimeout;
  /** v2 */
  remind_every_seconds?: number;
  /** v2 */
  escalate_after_seconds?: number;
  /** v2 */
  escalate_to?: string[];
}

/** v2: one responder's decision on a quorum approval. */
export interface Vote {
  by: string;
  decision: "approve" | "deny" | "revise";
  scope?: Scope | null;
  reason?: string | null;
  at: string;
}

/** v2: a form's answer, by field id. */
export type FormValues = { [fieldId: string]: JsonValue };

/** What became of one question. */
export interface QuestionOutcome {
  id: string;
  question: string;
  kind: QuestionKind;
  choices_offered: string[];
  /** The option label(s) or text; a form's values (v2); null when not answered. */
  answer: string | string[] | FormValues | null;
  /** `form` and `default` are v2. */
  mode?: "option" | "other" | "text" | "decision" | "form" | "default" | null;
  decision?: "approve" | "deny" | "revise" | null;
  scope?: Scope | null;
  edited_arguments?: JsonObject | null;
  reason?: string | null;
  /** v2: the `on_timeout` default stands in for an answer. */
  default_applied?: boolean;
}

/** What an agent receives once a request resolves. */
export interface Outcome {
  request_id: string;
  status: ResolvedStatus;
  questions: QuestionOutcome[];
  answered_by?: string | null;
  resolved_at: string;
  /** For statuses other than `answered`: what happened, in words for a model. */
  note?: string | null;
  /** v2 */
  votes?: Vote[];
  /** v2 */
  default_applied?: boolean;
  /** The signed receipt of the decision (a compact JWS); check it with `verifyReceipt`. */
  receipt?: string | null;
}

/** A request as the API returns it. */
export interface Record {
  id: string;
  status: Status;
  questions: Question[];
  context?: string | JsonObject | null;
  session?: string | null;
  agent?: string | null;
  tags: string[];
  tool_call_id?: string | null;
  allow_skip: boolean;
  timeout_seconds: number;
  responders?: string[] | null;
  callback_url?: string | null;
  created_at: string;
  /** null when it never expires. */
  expires_at?: string | null;
  /** The signed answer link, shown to the creator and admins. */
  answer_url?: string | null;
  answered_by?: string | null;
  resolved_at?: string | null;
  /** Present once resolved. */
  outcome?: Outcome | null;
  /** v2 */
  approvals_required?: number;
  /** v2: votes so far on a quorum approval. */
  votes?: Vote[];
  /** Once resolved: the signed receipt of the decision (a compact JWS); see `verifyReceipt`. */
  receipt?: string | null;
}

/** The answer to one question, by kind. */
export type QuestionAnswer =
  | { option: string }
  | { other: string }
  | { options: string[]; other?: string }
  | { text: string }
  | {
      /** `revise` ("request changes") needs a `reason`. */
      decision: "approve" | "deny" | "revise";
      scope?: Scope;
      edited_arguments?: JsonObject;
      reason?: string;
    }
  /** v2 */
  | { values: FormValues };

/**
 * The body of `POST /v1/requests/{id}/answer`: every question's answer by id, a skip, or (for a
 * one-question request) the answer itself.
 */
export type AnswerBody = { answers: { [questionId: string]: QuestionAnswer } } | { skip: true } | QuestionAnswer;

/** One page of `GET /v1/requests`, newest first. */
export interface Page {
  requests: Record[];
  next_cursor?: string | null;
}

/** Filters of `GET /v1/requests`. */
export interface ListFilter {
  status?: Status;
  session?: string;
  agent?: string;
  tag?: string;
  /** Records per page. */
  limit?: number;
  /** Start after this cursor (a `next_cursor`). */
  cursor?: string;
}

/** The SSE event names of `GET /v1/events`; `request.voted` is v2. */
export type EventType =
  | "request.created"
  | "request.answered"
  | "request.skipped"
  | "request.expired"
  | "request.cancelled"
  | "request.voted"
  | "request.reminded"
  | "request.warned"
  | "request.extended"
  | "request.refused"
  | "request.escalated";

/** One event of the stream: its log sequence, its name, and the record as it was sent. */
export interface ClarifyEvent {
  /** The event's sequence in the log; resume after it with `events({ lastEventId })`. */
  id: string;
  type: EventType | (string & {});
  record: Record;
}
