/**
 * The one error type the client throws (besides an `AbortError` when the caller's signal fires).
 *
 * A refusal from the server carries its stable `code` (`not_found`, `already_resolved`,
 * `unknown_option`, ...) and HTTP `status`. The client has two codes of its own: `unreachable`
 * (no reply: nothing answers, or the connection broke; `status` null) and `protocol` (the reply
 * was not clarify's JSON).
 */

import type { Record as RequestRecord } from "./types.js";

export class ClarifyError extends Error {
  override name = "ClarifyError";
  /** The server's stable error code, or `unreachable` / `protocol`. */
  readonly code: string;
  /** The HTTP status; null when there was no reply. */
  readonly status: number | null;
  /** On `409 already_resolved`: the request as it was resolved first. */
  readonly record: RequestRecord | undefined;
  /**
   * For `unreachable`: whether the call may have reached the server (false when no connection
   * was made, so nothing can have happened there).
   */
  readonly sent: boolean;
  /** The server's `Retry-After`, in seconds, when it gave one (`429`, `503`). */
  readonly retryAfter: number | undefined;

  constructor(
    message: string,
    details: {
      code: string;
      status?: number | null;
      record?: RequestRecord;
      sent?: boolean;
      retryAfter?: number;
      cause?: unknown;
    },
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = details.code;
    this.status = details.status ?? null;
    this.record = details.record;
    this.sent = details.sent ?? details.status != null;
    this.retryAfter = details.retryAfter;
  }

  /**
   * A failure worth trying again: no reply, a gateway in between, a store out of reach, too many
   * waiters or calls for now.
   */
  get transient(): boolean {
    return this.status === null ? this.code === "unreachable" : [429, 502, 503, 504].includes(this.status);
  }
}
