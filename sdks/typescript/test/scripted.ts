/**
 * A scripted model for the Vercel AI SDK: the `ai` package's own mock model, calling the tools it
 * is given on its first turn, then answering with what the tools returned.
 *
 * The SDK's tests use it, and so does the handbook's AI SDK page (`docs/src/agents/ai-sdk.md`),
 * whose sample program runs in the suite with `aiSdkPageModel()` in place of the model the page
 * names: the page's hidden set-up copies this file beside the sample, which imports it.
 */

import { MockLanguageModelV4 } from "ai/test";

export const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

export type Prompt = { role: string; content: unknown }[];

/**
 * A model that calls the tools it is given on its first turn, then answers with what the tools
 * returned, as the prompt shows it.
 */
export function scriptedModel(calls: { toolName: string; input: object }[]) {
  const prompts: Prompt[] = [];
  const model = new MockLanguageModelV4({
    doGenerate: async (options) => {
      prompts.push(options.prompt as Prompt);
      if (prompts.length === 1) {
        return {
          content: calls.map((call, i) => ({
            type: "tool-call" as const,
            toolCallId: `call-${i + 1}`,
            toolName: call.toolName,
            input: JSON.stringify(call.input),
          })),
          finishReason: { unified: "tool-calls" as const, raw: undefined },
          usage,
          warnings: [],
        };
      }
      return {
        content: [{ type: "text" as const, text: `results: ${JSON.stringify(toolOutputs(options.prompt as Prompt))}` }],
        finishReason: { unified: "stop" as const, raw: undefined },
        usage,
        warnings: [],
      };
    },
  });
  return { model, prompts };
}

/** The tool results the model was sent, by call id. */
export function toolOutputs(prompt: Prompt): { [callId: string]: unknown } {
  const outputs: { [callId: string]: unknown } = {};
  for (const message of prompt) {
    if (message.role !== "tool" || !Array.isArray(message.content)) continue;
    for (const part of message.content as { type: string; toolCallId: string; output: unknown }[]) {
      if (part.type === "tool-result") outputs[part.toolCallId] = part.output;
    }
  }
  return outputs;
}

/** The AI SDK page's model: asked to deploy, it calls `deploy` with `{ env: "prod" }`. */
export function aiSdkPageModel() {
  return scriptedModel([{ toolName: "deploy", input: { env: "prod" } }]).model;
}
