/**
 * A Server-Sent Events parser over a fetch response body, as the HTML standard describes the
 * format (fields `event`, `data`, `id`; comments; CR, LF or CRLF line ends). Hand-written
 * because the package has no runtime dependencies and Node has no EventSource that sends
 * `Authorization` headers; reconnection lives in the client, which knows the last event id.
 */

/** One dispatched event. `id` is the last event id seen so far on this stream, if any. */
export interface SseMessage {
  event: string;
  data: string;
  id: string | undefined;
}

export async function* parseSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "";
  let data: string[] = [];
  let id: string | undefined;
  // A CR at the end of a chunk may be the first half of a CRLF split across chunks.
  let pendingCr = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      let text = decoder.decode(value, { stream: true });
      if (pendingCr && text.startsWith("\n")) text = text.slice(1);
      buffer += text;
      pendingCr = buffer.endsWith("\r");
      const lines = buffer.split(/\r\n|\r|\n/);
      buffer = lines.pop() ?? "";
      for (const line of lines) {
        if (line === "") {
          if (data.length > 0) yield { event: event || "message", data: data.join("\n"), id };
          event = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon === -1 ? line : line.slice(0, colon);
        let value = colon === -1 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "event") event = value;
        else if (field === "data") data.push(value);
        else if (field === "id" && !value.includes("\0")) id = value;
      }
    }
  } finally {
    // Stops the download when the consumer leaves early; harmless when the stream has ended.
    await reader.cancel().catch(() => {});
  }
}
