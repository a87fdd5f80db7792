/**
 * A scripted model for the OpenAI Agents SDK: it makes the given function calls, one turn each,
 * then answers with the tool outputs it was sent.
 *
 * The SDK's tests use it, and so does the handbook's OpenAI Agents SDK page
 * (`docs/src/agents/openai-agents.md`), whose TypeScript sample runs in the suite with
 * `openaiAgentsPageModel()` in place of the model the page names: the page's hidden set-up copies
 * this file beside the sample, which imports it.
 */

import { type AgentInputItem, type Model, type ModelRequest, type ModelResponse, Usage } from "@openai/agents";

/**
 * A model that makes the given function calls, one turn each, then answers with the tool outputs
 * it was sent.
 */
export class ScriptedModel implements Model {
  readonly inputs: AgentInputItem[][] = [];
  #turn = 0;
  constructor(private readonly calls: { callId: string; name: string; arguments: object }[]) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.inputs.push(typeof request.input === "string" ? [] : [...request.input]);
    const call = this.calls[this.#turn++];
    if (call !== undefined) {
      return {
        usage: new Usage(),
        output: [
          {
            type: "function_call",
            callId: call.callId,
            name: call.name,
            arguments: JSON.stringify(call.arguments),
            status: "completed",
          },
        ],
      };
    }
    return {
      usage: new Usage(),
      output: [
        {
          type: "message",
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: `results: ${JSON.stringify(this.outputs())}` }],
        },
      ],
    };
  }

  getStreamedResponse(): AsyncIterable<never> {
    throw new Error("the scripted model does not stream");
  }

  /** The function call outputs the model was last sent, by call id. */
  outputs(): { [callId: string]: unknown } {
    const outputs: { [callId: string]: unknown } = {};
    for (const item of this.inputs.at(-1) ?? []) {
      if (item.type === "function_call_result") outputs[item.callId] = item.output;
    }
    return outputs;
  }
}

/** The OpenAI Agents SDK page's model: asked to deploy, it calls `deploy` with `{ env: "prod" }`. */
export function openaiAgentsPageModel(): Model {
  return new ScriptedModel([{ callId: "call-1", name: "deploy", arguments: { env: "prod" } }]);
}
