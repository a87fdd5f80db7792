/**
 * `Client`: clarify's HTTP API over the global `fetch`.
 *
 * Every method takes an optional `AbortSignal`. The calls that wait (`wait`, `ask`, `events`)
 * survive the server going away for a while (a restart, a deploy, another instance taking over):
 * they reconnect with backoff, 200 ms doubling to 5 s, and carry on where they were. `create`
 * sends an idempotency key, so a create whose reply was lost is sent again without asking twice.
 */

import { ClarifyError } from "./errors.js";
import { parseSse } from "./sse.js";
import type {
  AnswerBody,
  ClarifyEvent,
  ListFilter,
  NewRequest,
  Outcome,
  Page,
  Record as RequestRecord,
} from "./types.js";

export interface ClientOptions {
  /** The server's address; default `CLARIFY_URL`, else `http://127.0.0.1:7420`. */
  url?: string;
  /** An API key; default `CLARIFY_TOKEN`. */
  token?: string;
  /** How long a call other than a long-poll or an event stream may take; default 30. */
  timeoutSeconds?: number;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof fetch;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export interface CreateOptions extends CallOptions {
  /** The request's idempotency key; default the body's `idempotency_key`, else a fresh one. */
  idempotencyKey?: string;
  /**
   * How long to keep sending the create again after the server was seen but the reply was lost
   * (a restart, `502`/`503`/`504`); default 120. `0` sends it once.
   */
  retrySeconds?: number;
}

export interface WaitOptions extends CallOptions {
  /**
   * How long to wait for the request to resolve before returning it still pending; default:
   * until it resolves (the server expires it at its own time limit).
   */
  timeoutSeconds?: number;
}

export interface AskOptions extends CreateOptions {
  /**
   * When the signal aborts the wait, cancel the request on the server, since nobody would
   * receive its answer; default true.
   */
  cancelOnAbort?: boolean;
}

export interface EventsOptions extends CallOptions {
  /** Resume after this event id (a `ClarifyEvent.id`); default: only events from now on. */
  lastEventId?: string;
}

const FIRST_BACKOFF_MS = 200;
const MAX_BACKOFF_MS = 5_000;
/** The server's longest long-poll. */
const MAX_POLL_SECONDS = 60;
/** Connection errors that mean no connection was made, so the call cannot have been seen. */
const NOT_SENT = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

export class Client {
  readonly url: string;
  readonly #token: string | undefined;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(options: ClientOptions = {}) {
    const env = globalThis.process?.env ?? {};
    const url = options.url ?? env["CLARIFY_URL"] ?? "http://127.0.0.1:7420";
    try {
      new URL(url);
    } catch {
      throw new ClarifyError(`invalid clarify URL ${JSON.stringify(url)}: give an absolute http(s) URL`, {
        code: "invalid_url",
      });
    }
    this.url = url.replace(/\/+$/, "");
    this.#token = options.token ?? env["CLARIFY_TOKEN"];
    this.#timeoutMs = (options.timeoutSeconds ?? 30) * 1000;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /**
   * Asks and waits: creates the request, waits until it resolves, and returns its outcome
   * (answered, skipped, expired or cancelled). Survives restarts of the server on the way.
   */
  async ask(body: NewRequest, options: AskOptions = {}): Promise<Outcome> {
    const record = await this.create(body, options);
    try {
      const resolved = await this.wait(record.id, pick(options, "signal"));
      return outcomeOf(resolved);
    } catch (error) {
      if (options.signal?.aborted && options.cancelOnAbort !== false) {
        await this.cancel(record.id, { signal: AbortSignal.timeout(5_000) }).catch(() => {});
      }
      throw error;
    }
  }

  /**
   * Creates a request; returns its record (`201`), or the original record when its idempotency
   * key was seen before (whatever its status). The key is sent in the body; when the server was
   * reached but the reply was lost, the same create is sent again for up to `retrySeconds`.
   */
  async create(body: NewRequest, options: CreateOptions = {}): Promise<RequestRecord> {
    const key = options.idempotencyKey ?? body.idempotency_key ?? newIdempotencyKey();
    const payload = { ...body, idempotency_key: key };
    const deadline = Date.now() + (options.retrySeconds ?? 120) * 1000;
    let backoff = FIRST_BACKOFF_MS;
    let seen = false;
    for (;;) {
      try {
        return await this.#send<RequestRecord>("POST", "/v1/requests", { body: payload, signal: options.signal });
      } catch (error) {
        if (!(error instanceof ClarifyError)) throw error;
        seen ||= error.sent;
        const delay = retryDelay(error, backoff);
        if (!seen || !error.transient || Date.now() + delay > deadline) throw error;
        await sleep(delay, options.signal);
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    }
  }

  /** The request's record, with its outcome once resolved. */
  async get(id: string, options: CallOptions = {}): Promise<RequestRecord> {
    return this.#send("GET", `/v1/requests/${segment(id)}`, options);
  }

  /**
   * Every request matching the filter, newest first, fetching page after page as the loop
   * goes on.
   */
  async *list(filter: ListFilter = {}, options: CallOptions = {}): AsyncGenerator<RequestRecord> {
    let cursor = filter.cursor;
    for (;;) {
      const page = await this.listPage({ ...filter, ...(cursor === undefined ? {} : { cursor }) }, options);
      yield* page.requests;
      if (page.next_cursor == null || page.requests.length === 0) return;
      cursor = page.next_cursor;
    }
  }

  /** One page of requests, newest first, with the cursor of the next. */
  async listPage(filter: ListFilter = {}, options: CallOptions = {}): Promise<Page> {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(filter)) {
      if (value !== undefined) query.set(name, String(value));
    }
    const suffix = query.size > 0 ? `?${query}` : "";
    return this.#send("GET", `/v1/requests${suffix}`, options);
  }

  /**
   * Answers a request (or skips it with `{ skip: true }`); returns the outcome. An answer that
   * does not fit is `422` and leaves the request pending; a resolved one is `409
   * already_resolved`, with the winning `record` on the error. On a quorum request
   * (`approvals_required` above 1) the answer is this key's vote: while more approvals are
   * needed the result is the record, still pending, with its `votes` (tell them apart with
   * `isOutcome`); a second vote is `409 already_voted`.
   */
  async answer(
    id: string,
    body: AnswerBody,
    options: CallOptions = {},
  ): Promise<Outcome | RequestRecord> {
    return this.#send("POST", `/v1/requests/${segment(id)}/answer`, { ...options, body });
  }

  /** Skips a request (when it allows skipping); returns the outcome, status `skipped`. */
  async skip(id: string, options: CallOptions = {}): Promise<Outcome> {
    const result = await this.answer(id, { skip: true }, options);
    if (!isOutcome(result)) {
      throw new ClarifyError("the server answered a skip without an outcome", {
        code: "protocol",
        status: null,
      });
    }
    return result;
  }

  /** Cancels a pending request; `409 already_resolved` when it is not pending. */
  async cancel(id: string, options: CallOptions = {}): Promise<RequestRecord> {
    return this.#send("POST", `/v1/requests/${segment(id)}/cancel`, { ...options, body: {} });
  }

  /**
   * Moves a pending request's deadline `by` later (`"30m"`, `"2h"`, `"1d"`, or seconds), as
   * someone who may answer it, up to the server's `[decisions] max_extension`; returns the record
   * with its new `expires_at`. `400 extension_too_long` or `invalid_extension` when it may not
   * move that far, `409 already_resolved` when it is no longer pending.
   */
  async extend(id: string, by: string | number, options: CallOptions = {}): Promise<RequestRecord> {
    return this.#send("POST", `/v1/requests/${segment(id)}/extend`, { ...options, body: { by } });
  }

  /**
   * Waits until the request resolves and returns its record, long-polling (60 s a call) and
   * reconnecting while the server is unreachable. With `timeoutSeconds`, returns the record as
   * it is then, possibly still pending.
   */
  async wait(id: string, options: WaitOptions = {}): Promise<RequestRecord> {
    const deadline = options.timeoutSeconds === undefined ? Infinity : Date.now() + options.timeoutSeconds * 1000;
    let backoff = FIRST_BACKOFF_MS;
    for (;;) {
      const left = Math.max(0, Math.ceil((deadline - Date.now()) / 1000));
      const seconds = Math.min(MAX_POLL_SECONDS, left);
      try {
        const record = await this.#send<RequestRecord>(
          "GET",
          `/v1/requests/${segment(id)}/wait?timeout_seconds=${seconds}`,
          { signal: options.signal, timeoutMs: (seconds + 15) * 1000 },
        );
        if (record.status !== "pending" || Date.now() >= deadline) return record;
        backoff = FIRST_BACKOFF_MS;
      } catch (error) {
        if (!(error instanceof ClarifyError) || !error.transient) throw error;
        const delay = retryDelay(error, backoff);
        if (Date.now() + delay > deadline) throw error;
        await sleep(delay, options.signal);
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    }
  }

  /**
   * The event stream (`GET /v1/events`) of the caller's tenant, as an async iterator. When the
   * connection ends or breaks it reconnects with `Last-Event-ID`, so no event is missed or
   * repeated; leave the loop (or abort the signal) to close it.
   */
  async *events(options: EventsOptions = {}): AsyncGenerator<ClarifyEvent> {
    let lastEventId = options.lastEventId;
    let backoff = FIRST_BACKOFF_MS;
    for (;;) {
      const headers: { [name: string]: string } = { accept: "text/event-stream" };
      if (lastEventId !== undefined) headers["last-event-id"] = lastEventId;
      let failure: ClarifyError;
      try {
        const response = await this.#fetchChecked("GET", "/v1/events", { headers, signal: options.signal });
        if (response.body === null) throw invalidResponse(this.url, response.status);
        for await (const message of parseSse(response.body)) {
          lastEventId = message.id ?? lastEventId;
          if (message.event === "message" || message.id === undefined) continue;
          let record: RequestRecord;
          try {
            record = JSON.parse(message.data) as RequestRecord;
          } catch {
            throw invalidResponse(this.url, response.status);
          }
          backoff = FIRST_BACKOFF_MS;
          yield { id: message.id, type: message.event, record };
        }
        // The server ended the stream (it is shutting down): connect again, after a pause
        // that grows while streams keep ending without an event.
        failure = new ClarifyError(`${this.url} closed the event stream`, { code: "unreachable", sent: true });
      } catch (error) {
        if (options.signal?.aborted) throw options.signal.reason;
        failure = error instanceof ClarifyError ? error : this.#unreachable(error, true);
        if (!failure.transient) throw failure;
      }
      await sleep(retryDelay(failure, backoff), options.signal);
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    }
  }

  /** The tenant's webhook signing secret, for `verifyWebhook`. */
  async webhookSecret(options: CallOptions = {}): Promise<string> {
    const body = await this.#send<{ secret: string }>("GET", "/v1/webhook-secret", options);
    return body.secret;
  }

  async #send<T>(
    method: string,
    path: string,
    options: { body?: unknown; signal?: AbortSignal | undefined; timeoutMs?: number },
  ): Promise<T> {
    const response = await this.#fetchChecked(method, path, options);
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      throw this.#unreachable(error, true);
    }
    try {
      return JSON.parse(text) as T;
    } catch {
      throw invalidResponse(this.url, response.status);
    }
  }

  /** Sends one call; returns a `2xx` response, and turns everything else into a `ClarifyError`. */
  async #fetchChecked(
    method: string,
    path: string,
    options: {
      body?: unknown;
      headers?: { [name: string]: string };
      signal?: AbortSignal | undefined;
      timeoutMs?: number;
    },
  ): Promise<Response> {
    const headers: { [name: string]: string } = { accept: "application/json", ...options.headers };
    if (this.#token !== undefined) headers["authorization"] = `Bearer ${this.#token}`;
    if (options.body !== undefined) headers["content-type"] = "application/json";
    // Event streams have no time limit; every other call has one.
    const isStream = headers["accept"] === "text/event-stream";
    const timeout = isStream ? undefined : AbortSignal.timeout(options.timeoutMs ?? this.#timeoutMs);
    const signals = [options.signal, timeout].filter((s): s is AbortSignal => s !== undefined);
    const init: RequestInit = { method, headers };
    if (options.body !== undefined) init.body = JSON.stringify(options.body);
    if (signals.length > 0) init.signal = signals.length === 1 ? signals[0]! : AbortSignal.any(signals);
    let response: Response;
    try {
      response = await this.#fetch(`${this.url}${path}`, init);
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      if (timeout?.aborted) {
        throw new ClarifyError(`${this.url} did not reply in time`, { code: "unreachable", sent: true });
      }
      throw this.#unreachable(error, false);
    }
    if (response.ok) return response;
    const text = await response.text().catch(() => "");
    let code = "unknown";
    let message = `HTTP ${response.status} from ${this.url}`;
    let record: RequestRecord | undefined;
    try {
      const parsed = JSON.parse(text) as { error?: { code?: unknown; message?: unknown }; record?: unknown };
      if (typeof parsed.error?.code === "string") code = parsed.error.code;
      if (typeof parsed.error?.message === "string") message = parsed.error.message;
      if (typeof parsed.record === "object" && parsed.record !== null) record = parsed.record as RequestRecord;
    } catch {
      // Not clarify's JSON (a proxy's page, say): the status and the URL say enough.
    }
    if (response.status === 401) {
      message += "; set CLARIFY_TOKEN to an API key";
      // The server's own message may already say how to make one.
      if (!message.includes("clarify keys create")) message += " (create one with `clarify keys create`)";
    }
    const retryAfter = Number(response.headers.get("retry-after") ?? Number.NaN);
    throw new ClarifyError(message, {
      code,
      status: response.status,
      ...(record === undefined ? {} : { record }),
      ...(Number.isFinite(retryAfter) && retryAfter >= 0 ? { retryAfter } : {}),
    });
  }

  /** A failure to get any reply; `connected` says whether a connection was made. */
  #unreachable(error: unknown, connected: boolean): ClarifyError {
    const code = errorCode(error);
    const sent = connected || code === undefined || !NOT_SENT.has(code);
    const detail = code ?? (error instanceof Error ? error.message : String(error));
    const message = sent
      ? `the connection to ${this.url} broke before the reply came (${detail})`
      : `nothing answers at ${this.url} (${detail}); is \`clarify serve\` running there? Set CLARIFY_URL to its address`;
    return new ClarifyError(message, { code: "unreachable", sent, cause: error });
  }
}

/** The outcome of a resolved record. */
function outcomeOf(record: RequestRecord): Outcome {
  if (record.outcome == null) {
    throw new ClarifyError(`request ${record.id} is ${record.status} but has no outcome`, {
      code: "protocol",
      status: 200,
    });
  }
  return record.outcome;
}

function invalidResponse(url: string, status: number): ClarifyError {
  return new ClarifyError(`HTTP ${status} with a body that is not clarify's JSON; is ${url} a clarify server?`, {
    code: "protocol",
    status,
  });
}

/** The wait before trying again: the server's `Retry-After` when it gave one (up to a minute). */
function retryDelay(error: ClarifyError, backoff: number): number {
  return error.retryAfter === undefined ? backoff : Math.min(error.retryAfter, 60) * 1000;
}

/** The `code` of a Node network error, looking through fetch's `cause` and aggregate errors. */
function errorCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e !== null && typeof e === "object" && depth < 5; depth++) {
    const candidate = e as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof candidate.code === "string") return candidate.code;
    if (Array.isArray(candidate.errors) && candidate.errors.length > 0) e = candidate.errors[0];
    else e = candidate.cause;
  }
  return undefined;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function newIdempotencyKey(): string {
  return `clarify-${globalThis.crypto.randomUUID()}`;
}

/** A request id as one URL path segment. */
function segment(id: string): string {
  return encodeURIComponent(id);
}

function pick<T extends object, K extends keyof T>(object: T, key: K): Pick<T, K> {
  return (key in object ? { [key]: object[key] } : {}) as Pick<T, K>;
}

/** Whether an answer's result is the outcome (the request is resolved) rather than the record
 * of a quorum request that still needs approvals. */
export function isOutcome(result: Outcome | RequestRecord): result is Outcome {
  return "request_id" in result;
}
