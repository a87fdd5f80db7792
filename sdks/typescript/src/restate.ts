/**
 * Restate (`@restatedev/restate-sdk`): a handler asks a person through clarify and waits
 * durably for the outcome.
 *
 * `ask(ctx, client, fields)` does three things, each kept in Restate's journal so that a crash at
 * any point resumes instead of asking again:
 *
 * 1. It creates a Restate awakeable, a promise that something outside the invocation resolves.
 * 2. It creates the clarify request inside `ctx.run` (a journaled step), carrying
 *    `resume: {restate: {ingress, awakeable}}`. When the request resolves (answered, skipped,
 *    expired or cancelled), clarify POSTs its outcome to `<ingress>/restate/awakeables/<id>/resolve`
 *    through its webhook outbox, retrying until the Restate ingress takes it. The create's
 *    idempotency key is `restate-` and the awakeable's id, which Restate derives from the
 *    invocation id and the call's place in the journal: a step whose result was not journaled
 *    before a crash is run again by the retried invocation and finds the same request, and two
 *    `ask`s in one handler get two requests.
 * 3. It awaits the awakeable. Restate suspends the invocation meanwhile, so nothing holds a
 *    connection or a process for the hours a person may take; the outcome JSON is the `Outcome`
 *    returned.
 *
 * The ingress is where clarify reaches the Restate ingress (not where the handler runs):
 * `options.ingress`, else `CLARIFY_RESTATE_INGRESS`, else Restate's default
 * `http://127.0.0.1:8080`. clarify's outbound guard applies to it as to a `callback_url`.
 *
 * `fields` are the create's fields (`question`, `choices`, `questions`, `session`, `tags`,
 * `timeout_seconds`, `responders`, ...); `agent` defaults to `restate`. A create clarify refuses
 * (a `4xx` other than a rate limit) fails the invocation with a `TerminalError`; one that could
 * not reach clarify is retried by Restate like any failed step.
 *
 * `@restatedev/restate-sdk` is an optional peer dependency: the context's type here is
 * structural (the parts `ask` uses), and the SDK's `TerminalError` is loaded only when a create is
 * refused, so nothing else in this package loads Restate.
 */

import type { Client } from "./client.js";
import { ClarifyError } from "./errors.js";
import type { NewRequest, Outcome, Record } from "./types.js";

/** The Restate server's default ingress address. */
export const DEFAULT_INGRESS = "http://127.0.0.1:8080";

export interface RestateAskOptions {
  /** Where clarify reaches the Restate ingress; see the module's documentation. */
  ingress?: string;
}

/** The parts of a Restate handler's `Context` that `ask` uses (`restate.Context` fits). */
export interface RestateContext {
  awakeable<T>(): { readonly id: string; readonly promise: PromiseLike<T> };
  run<T>(name: string, action: () => Promise<T>): PromiseLike<T>;
}

/** The `resume` field of a create: where clarify sends the outcome when the request resolves. */
export interface RestateResume {
  restate: { ingress: string; awakeable: string };
}

function ingressOf(given: string | undefined): string {
  const env = globalThis.process?.env ?? {};
  const url = given ?? env["CLARIFY_RESTATE_INGRESS"] ?? DEFAULT_INGRESS;
  return url.replace(/\/+$/, "");
}

async function create(client: Client, body: NewRequest & { resume: RestateResume }): Promise<Record> {
  try {
    return await client.create(body);
  } catch (error) {
    if (error instanceof ClarifyError && !error.transient) {
      // Restate retries a failed step unless it throws the SDK's own TerminalError (checked
      // with instanceof), so that class is the one loaded; the specifier is a variable to keep
      // the SDK's declarations, which do not pass this package's strict options, out of its
      // build.
      const sdk = "@restatedev/restate-sdk";
      const { TerminalError } = (await import(sdk)) as { TerminalError: new (message: string) => Error };
      throw new TerminalError(`clarify refused the request: ${error.message}`);
    }
    throw error;
  }
}

/**
 * Asks a person through clarify from a Restate handler and resolves with the outcome once the
 * request resolves; see the module's documentation for what is journaled.
 *
 * ```ts
 * handlers: {
 *   deploy: async (ctx: restate.Context, version: string) => {
 *     const outcome = await ask(ctx, clarify, { question: `Deploy ${version}?`, choices: ["yes", "no"] });
 *     return outcome.questions[0]?.answer === "yes" ? "deployed" : "kept";
 *   },
 * }
 * ```
 */
export async function ask(
  ctx: RestateContext,
  client: Client,
  fields: NewRequest,
  options: RestateAskOptions = {},
): Promise<Outcome> {
  const awakeable = ctx.awakeable<Outcome>();
  const body = {
    agent: "restate",
    ...fields,
    idempotency_key: `restate-${awakeable.id}`,
    resume: { restate: { ingress: ingressOf(options.ingress), awakeable: awakeable.id } },
  };
  const record = await ctx.run("clarify: create request", () => create(client, body));
  if (record.outcome) {
    // Resolved at creation (a policy decided, or an idempotent create found an old answer): the
    // journal already holds the outcome, so the awakeable is not awaited.
    return record.outcome;
  }
  return await awakeable.promise;
}
