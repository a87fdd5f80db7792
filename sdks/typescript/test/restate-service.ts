/**
 * The TypeScript Restate service of `restate.test.ts`, run as a process of its own so a test can
 * kill it: `DeployTs/run` asks for an approval through `@clarify-hitl/client/restate` and, once
 * decided, records that it went on (a journaled step appending `<request id> <status> <when it
 * resumed>` to `CLARIFY_TEST_COMPLETIONS`), so a test can count how often the handler got past
 * its wait.
 * Prints `ready` once it listens on `PORT`.
 */

import { appendFileSync } from "node:fs";

import { Client, type NewRequest } from "@clarify-hitl/client";
import { ask } from "@clarify-hitl/client/restate";
import * as restate from "@restatedev/restate-sdk";

const env = process.env;
const clarify = new Client({ url: env["CLARIFY_URL"] ?? "", token: env["CLARIFY_TOKEN"] ?? "" });
const completions = env["CLARIFY_TEST_COMPLETIONS"] ?? "";

interface Order {
  build: number;
  session: string;
  timeout_seconds?: number;
}

const deploy = restate.service({
  name: "DeployTs",
  handlers: {
    run: async (ctx: restate.Context, order: Order) => {
      const fields: NewRequest = {
        questions: [
          {
            text: `Deploy build ${order.build} to production?`,
            kind: "approval",
            action: { name: "deploy", arguments: { build: order.build } },
          },
        ],
        session: order.session,
      };
      if (order.timeout_seconds !== undefined) fields.timeout_seconds = order.timeout_seconds;
      const outcome = await ask(ctx, clarify, fields);
      const resumed = Date.now() / 1000;
      await ctx.run("record the decision", async () => {
        appendFileSync(completions, `${outcome.request_id} ${outcome.status} ${resumed.toFixed(6)}\n`);
      });
      const first = outcome.questions[0];
      return {
        request_id: outcome.request_id,
        status: outcome.status,
        decision: first?.decision ?? null,
        reason: first?.reason ?? null,
        note: outcome.note ?? null,
      };
    },
  },
});

await restate.serve({ services: [deploy], port: Number(env["PORT"]) });
console.log("ready");
