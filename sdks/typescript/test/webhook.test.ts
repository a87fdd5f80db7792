/** `verifyWebhook` against a real delivery from `clarify serve`. */

import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders } from "node:http";
import { after, before, test } from "node:test";

import { ClarifyError, verifyWebhook, WebhookVerificationError } from "@clarify-hitl/client";

import { freePort, Server } from "./support.js";

let server: Server;

before(async () => {
  // The receiver listens on 127.0.0.1, which the outbound guard refuses unless allowed.
  server = await Server.start(["--outbound-allow", "127.0.0.0/8"]);
});

after(async () => {
  await server?.close();
});

test("a real delivery verifies; a changed body, another secret or an old signature does not", async () => {
  const deliveries: { headers: IncomingHttpHeaders; body: Buffer }[] = [];
  let delivered: () => void = () => {};
  const arrived = new Promise<void>((resolve) => {
    delivered = resolve;
  });
  const receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      deliveries.push({ headers: request.headers, body: Buffer.concat(chunks) });
      response.writeHead(204).end();
      delivered();
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve) => receiver.listen(port, "127.0.0.1", resolve));
  try {
    const agent = server.agent();
    const created = await agent.create({
      question: "Notify me?",
      choices: ["yes", "no"],
      callback_url: `http://127.0.0.1:${port}/hook`,
    });
    await server.alice().answer(created.id, { option: "yes" });
    await Promise.race([
      arrived,
      new Promise((_, reject) => setTimeout(() => reject(new Error("no delivery within 15 s")), 15_000)),
    ]);
    const delivery = deliveries[0]!;
    const secret = await agent.webhookSecret();
    const outcome = JSON.parse(delivery.body.toString("utf8")) as { request_id: string; status: string };
    assert.equal(outcome.request_id, created.id);
    assert.equal(delivery.headers["clarify-event"], "request.answered");

    // Node's IncomingHttpHeaders, a fetch Headers, bytes or text: all the same delivery.
    const verified = await verifyWebhook(secret, delivery.headers, delivery.body);
    assert.equal(verified.request_id, created.id);
    assert.equal(verified.questions[0]?.answer, "yes");
    const fetchHeaders = new Headers({ "Clarify-Signature": String(delivery.headers["clarify-signature"]) });
    assert.deepEqual(await verifyWebhook(secret, fetchHeaders, delivery.body.toString("utf8")), verified);

    const changed = delivery.body.toString("utf8").replace('"answered"', '"skipped"');
    assert.notEqual(changed, delivery.body.toString("utf8"));
    await refused(verifyWebhook(secret, delivery.headers, changed), /no Clarify-Signature matches/);
    await refused(verifyWebhook(`${secret}x`, delivery.headers, delivery.body), /no Clarify-Signature matches/);
    await refused(verifyWebhook(secret, {}, delivery.body), /no Clarify-Signature header/);
    // The delivery was signed a moment before these checks: on a loaded machine, seconds before,
    // so the offsets named are ten minutes give or take those seconds.
    const tenMinutesLater = Date.now() + 10 * 60 * 1000;
    await refused(
      verifyWebhook(secret, delivery.headers, delivery.body, { now: tenMinutesLater }),
      /signed (599|60\d) s ago, outside the 300 s tolerance/,
    );
    const tenMinutesEarlier = Date.now() - 10 * 60 * 1000;
    await refused(
      verifyWebhook(secret, delivery.headers, delivery.body, { now: tenMinutesEarlier }),
      /signed (59\d|60[01]) s in the future, outside/,
    );
    const late = await verifyWebhook(secret, delivery.headers, delivery.body, {
      now: tenMinutesLater,
      toleranceSeconds: Infinity,
    });
    assert.equal(late.request_id, created.id);
  } finally {
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  }
});

test("malformed signature headers are refused with the reason", async () => {
  for (const [header, reason] of [
    ["", /no Clarify-Signature header/],
    ["t=abc,v1=00", /not a number/],
    ["v1=00", /needs both/],
    ["t=1", /needs both/],
    ["t=1,v1=", /needs both/],
    ["garbage", /needs both/],
  ] as const) {
    await refused(verifyWebhook("secret", { "clarify-signature": header }, "{}"), reason);
  }
});

async function refused(verifying: Promise<unknown>, reason: RegExp): Promise<void> {
  await assert.rejects(verifying, (error: unknown) => {
    assert.ok(error instanceof WebhookVerificationError, String(error));
    assert.ok(error instanceof ClarifyError);
    assert.equal(error.code, "invalid_signature");
    assert.match(error.message, reason);
    return true;
  });
}
