/**
 * Test support: a real `clarify serve` (the binary named by `CLARIFY_BIN`) on a free port of
 * 127.0.0.1 over a SQLite file of its own, keys made with `clarify keys create`, and a person
 * who answers what an agent asks.
 */

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { type AnswerBody, Client, isOutcome, type Outcome, type RequestRecord } from "@clarify-hitl/client";

export function clarifyBin(): string {
  const bin = process.env["CLARIFY_BIN"];
  if (bin === undefined || bin === "" || !existsSync(bin)) {
    throw new Error(
      `CLARIFY_BIN must name a built clarify binary (got ${JSON.stringify(bin)}); run sdks/typescript/scripts/test, which builds one`,
    );
  }
  return bin;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

/** One `clarify serve` process; `restart` keeps its port and database. */
export class Server {
  readonly dir: string;
  readonly db: string;
  readonly port: number;
  readonly url: string;
  /** An admin key (agents' calls), and a responder key named `alice`. */
  readonly adminKey: string;
  readonly aliceKey: string;
  #child: ChildProcess | undefined;
  #stderr = "";

  private constructor(dir: string, port: number) {
    this.dir = dir;
    this.db = `sqlite://${join(dir, "clarify.db")}`;
    this.port = port;
    this.url = `http://127.0.0.1:${port}`;
    this.adminKey = this.createKey("admin", "sdk-agent");
    this.aliceKey = this.createKey("responder", "alice");
  }

  static async start(extra: string[] = []): Promise<Server> {
    const server = new Server(mkdtempSync(join(tmpdir(), "clarify-ts-")), await freePort());
    await server.launch(extra);
    return server;
  }

  createKey(role: string, name: string): string {
    return execFileSync(clarifyBin(), ["keys", "create", "--db", this.db, "--role", role, "--name", name, "--create"], {
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: "1" },
    }).trim();
  }

  /** A client acting as the agent (admin key). */
  agent(): Client {
    return new Client({ url: this.url, token: this.adminKey });
  }

  /** A client acting as the person `alice` (responder key). */
  alice(): Client {
    return new Client({ url: this.url, token: this.aliceKey });
  }

  get stderr(): string {
    return this.#stderr;
  }

  async launch(extra: string[] = []): Promise<void> {
    const child = spawn(clarifyBin(), ["serve", "--listen", `127.0.0.1:${this.port}`, "--db", this.db, ...extra], {
      env: { ...process.env, NO_COLOR: "1", RUST_LOG: "warn" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      this.#stderr += chunk;
    });
    this.#child = child;
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) {
        throw new Error(`clarify serve exited with ${child.exitCode}: ${this.#stderr}`);
      }
      try {
        const response = await fetch(`${this.url}/healthz`);
        if (response.ok) return;
      } catch {
        // Not listening yet.
      }
      await delay(50);
    }
    throw new Error(`clarify serve did not answer /healthz within 20 s: ${this.#stderr}`);
  }

  /** Stops the process: `SIGTERM` (graceful) or `SIGKILL` (a crash). */
  async stop(signal: "SIGTERM" | "SIGKILL" = "SIGTERM"): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill(signal);
    await exited;
  }

  async restart(signal: "SIGTERM" | "SIGKILL" = "SIGKILL"): Promise<void> {
    await this.stop(signal);
    await this.launch();
  }

  async close(): Promise<void> {
    await this.stop("SIGKILL");
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * What a person does: waits for the next pending request that `matches` (polling the list as
 * the inbox would), answers it, and returns the request and the outcome.
 */
export async function answerNext(
  person: Client,
  filter: { session: string },
  answer: AnswerBody | ((record: RequestRecord) => AnswerBody),
  within = 10_000,
): Promise<{ record: RequestRecord; outcome: Outcome }> {
  const deadline = Date.now() + within;
  while (Date.now() < deadline) {
    for await (const record of person.list({ status: "pending", session: filter.session })) {
      const body = typeof answer === "function" ? answer(record) : answer;
      const outcome = await person.answer(record.id, body);
      if (!isOutcome(outcome)) throw new Error(`answering ${record.id} did not resolve it`);
      return { record, outcome };
    }
    await delay(50);
  }
  throw new Error(`nothing was asked in session ${filter.session} within ${within} ms`);
}

let counter = 0;
/** A session name no other test uses. */
export function uniqueSession(name: string): string {
  counter += 1;
  return `${name}-${process.pid}-${counter}`;
}
