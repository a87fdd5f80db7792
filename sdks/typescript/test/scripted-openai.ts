/**
 * A scripted model behind the real OpenAI Chat Completions API, on a free port of 127.0.0.1: the
 * frameworks that speak to OpenAI (Mastra through the AI SDK's OpenAI provider, LangChain.js
 * through `ChatOpenAI`) reach it through their own base URL setting, exactly as they would reach
 * OpenAI.
 *
 * Each request is answered by the next turn of the script: tool calls, or a text. Once the script
 * is spent the model answers with the tool results it was sent, so a test can read what a tool
 * returned (or the reason a person gave for refusing it) in the final text, and every request
 * body is kept for a test to assert on. Both the plain JSON reply and the `stream: true` reply
 * (server-sent chunks ending in `data: [DONE]`, with usage when `stream_options.include_usage`
 * asks) are spoken.
 *
 * The SDK's tests use it, and so do the handbook's Mastra and LangGraph.js pages
 * (`docs/src/agents/mastra.md`, `docs/src/agents/langgraph-js.md`), whose sample programs run
 * with the base URL of `mastraPageModel()` or `langgraphPageModel()` in place of OpenAI's: the
 * pages' hidden set-up copies this file beside the sample, which imports it.
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

/** One tool call the model makes; `arguments` is sent as JSON text, as OpenAI sends it. */
export interface ScriptedCall {
  id: string;
  name: string;
  arguments: object;
}

/** One turn of the script: tool calls (in one assistant message), or a text. */
export type Turn = { calls: ScriptedCall[] } | { text: string };

/** A message of a Chat Completions request, as far as the tests read it. */
export interface ChatMessage {
  role: string;
  content?: unknown;
  tool_call_id?: string;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
}

/** A Chat Completions request body, as far as the tests read it. */
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
}

export class ScriptedOpenAI {
  /** Every request the model was sent, in order. */
  readonly requests: ChatRequest[] = [];
  readonly #server: Server;
  readonly #turns: Turn[];

  private constructor(turns: Turn[]) {
    this.#turns = [...turns];
    this.#server = createServer((request, response) => {
      this.#handle(request, response).catch((error: unknown) => {
        response.writeHead(500, { "content-type": "application/json" });
        response.end(JSON.stringify({ error: { message: String(error) } }));
      });
    });
  }

  /** Starts a model that plays `turns`, then answers with the tool results it was sent. */
  static async start(turns: Turn[]): Promise<ScriptedOpenAI> {
    const model = new ScriptedOpenAI(turns);
    await new Promise<void>((resolve) => model.#server.listen(0, "127.0.0.1", resolve));
    return model;
  }

  /** The base URL an OpenAI client is given (`.../v1`). */
  get baseURL(): string {
    const address = this.#server.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    return `http://127.0.0.1:${port}/v1`;
  }

  /** The tool results of the last request the model was sent, by call id. */
  toolResults(index = this.requests.length - 1): { [callId: string]: string } {
    return toolResultsOf(this.requests[index]);
  }

  /** Lets the process end while the model still listens (for a program that never closes it). */
  unref(): this {
    this.#server.unref();
    // The connections it accepts too: the program's own HTTP client keeps them open for a while.
    this.#server.on("connection", (socket) => socket.unref());
    return this;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    let text = "";
    for await (const chunk of request) text += String(chunk);
    if (request.method !== "POST" || !(request.url ?? "").endsWith("/chat/completions")) {
      response.writeHead(404, { "content-type": "application/json" });
      const message = `the scripted model serves only POST /v1/chat/completions, not ${request.method} ${request.url}`;
      response.end(JSON.stringify({ error: { message } }));
      return;
    }
    const body = JSON.parse(text) as ChatRequest;
    this.requests.push(body);
    const turn = this.#turns.shift() ?? { text: `results: ${JSON.stringify(toolResultsOf(body))}` };
    const message =
      "calls" in turn
        ? {
            role: "assistant",
            content: null,
            tool_calls: turn.calls.map((call) => ({
              id: call.id,
              type: "function",
              function: { name: call.name, arguments: JSON.stringify(call.arguments) },
            })),
          }
        : { role: "assistant", content: turn.text };
    const finish = "calls" in turn ? "tool_calls" : "stop";
    const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
    const id = `chatcmpl-${this.requests.length}`;
    const created = Math.floor(Date.now() / 1000);
    if (body.stream !== true) {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(
        JSON.stringify({
          id,
          object: "chat.completion",
          created,
          model: body.model,
          choices: [{ index: 0, message, finish_reason: finish, logprobs: null }],
          usage,
        }),
      );
      return;
    }
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    const chunk = (delta: object, finishReason: string | null, extra: object = {}) =>
      `data: ${JSON.stringify({
        id,
        object: "chat.completion.chunk",
        created,
        model: body.model,
        choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }],
        ...extra,
      })}\n\n`;
    let out = chunk({ role: "assistant", content: "" }, null);
    if ("calls" in turn) {
      turn.calls.forEach((call, index) => {
        const fn = { name: call.name, arguments: JSON.stringify(call.arguments) };
        out += chunk({ tool_calls: [{ index, id: call.id, type: "function", function: fn }] }, null);
      });
    } else {
      out += chunk({ content: turn.text }, null);
    }
    out += chunk({}, finish);
    if (body.stream_options?.include_usage === true) {
      const last = { id, object: "chat.completion.chunk", created, model: body.model, choices: [], usage };
      out += `data: ${JSON.stringify(last)}\n\n`;
    }
    out += "data: [DONE]\n\n";
    response.end(out);
  }
}

/** The tool results in a request's messages, by call id. */
export function toolResultsOf(request: ChatRequest | undefined): { [callId: string]: string } {
  const results: { [callId: string]: string } = {};
  for (const message of request?.messages ?? []) {
    if (message.role === "tool" && typeof message.tool_call_id === "string") {
      const { content } = message;
      results[message.tool_call_id] = typeof content === "string" ? content : JSON.stringify(content);
    }
  }
  return results;
}

/** The Mastra page's model: asked to deploy, it calls `deploy` with `{ env: "prod" }`. */
export async function mastraPageModel(): Promise<string> {
  const model = await ScriptedOpenAI.start([{ calls: [{ id: "call_1", name: "deploy", arguments: { env: "prod" } }] }]);
  return model.unref().baseURL;
}

/**
 * The LangGraph.js page's model: asked to tidy the reports, it calls `write_file` and
 * `execute_sql` in one turn.
 */
export async function langgraphPageModel(): Promise<string> {
  const model = await ScriptedOpenAI.start([
    {
      calls: [
        { id: "call_1", name: "write_file", arguments: { path: "reports/summary.txt", content: "2 reports" } },
        { id: "call_2", name: "execute_sql", arguments: { query: "DELETE FROM reports WHERE year < 2020" } },
      ],
    },
  ]);
  return model.unref().baseURL;
}
