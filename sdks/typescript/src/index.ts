/**
 * `@clarify-hitl/client`: ask people questions and approvals from an agent, through a clarify
 * server, and wait for the answers without losing them.
 *
 * The helpers for agent frameworks live in subpaths: `@clarify-hitl/client/ai-sdk` (the Vercel
 * AI SDK), `@clarify-hitl/client/openai-agents` (the OpenAI Agents SDK),
 * `@clarify-hitl/client/mastra` (Mastra) and `@clarify-hitl/client/langgraph` (LangGraph.js and
 * LangChain.js).
 */

export {
  type AskOptions,
  type CallOptions,
  Client,
  type ClientOptions,
  type CreateOptions,
  type EventsOptions,
  isOutcome,
  type WaitOptions,
} from "./client.js";
export { ClarifyError } from "./errors.js";
export {
  argumentsSha256,
  canonicalJson,
  type Jwk,
  type Jwks,
  type ReceiptApproval,
  type ReceiptClaims,
  type ReceiptRefusal,
  ReceiptVerificationError,
  type VerifyReceiptOptions,
  verifyReceipt,
} from "./receipt.js";
export type * from "./types.js";
export type { Record as RequestRecord } from "./types.js";
export {
  type VerifyWebhookOptions,
  verifyWebhook,
  type WebhookHeaders,
  WebhookVerificationError,
} from "./webhook.js";
