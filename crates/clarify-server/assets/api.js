// Calls to the server's JSON API from the page.
//
// Writes carry the session's CSRF token (the server refuses cookie-authenticated writes without
// it). A failure becomes an `ApiError` with the server's stable code and its message for a
// person, plus the body, so a `409 already_resolved` can show who answered first.

import { noteServerDate } from "./dom.js";

export class ApiError extends Error {
  constructor(status, code, message, body) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

let csrf = null;

/** The token to send as `X-CSRF-Token` on writes; `null` when logged out. */
export function useCsrf(token) {
  csrf = token || null;
}

/** Sends a request (with `extra` headers); resolves to the parsed JSON body (`null` when empty). */
export async function call(method, path, body, extra = {}) {
  const headers = { Accept: "application/json", ...extra };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && csrf) headers["X-CSRF-Token"] = csrf;
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
      cache: "no-store",
    });
  } catch {
    throw new ApiError(0, "unreachable", "The server could not be reached. Check your connection and try again.", null);
  }
  noteServerDate(response.headers.get("date"));
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) {
    const error = data && typeof data === "object" ? data.error : null;
    throw new ApiError(
      response.status,
      (error && error.code) || `http_${response.status}`,
      (error && error.message) || `The server answered ${response.status} ${response.statusText}.`,
      data,
    );
  }
  return data;
}

/** Reads an HTML fragment (a request's display); resolves to its text. */
export async function fragmentText(path) {
  let response;
  try {
    response = await fetch(path, { headers: { Accept: "text/html" }, credentials: "same-origin", cache: "no-store" });
  } catch {
    throw new ApiError(0, "unreachable", "The server could not be reached. Check your connection and try again.", null);
  }
  if (!response.ok) throw new ApiError(response.status, `http_${response.status}`, `The server answered ${response.status}.`, null);
  return response.text();
}
