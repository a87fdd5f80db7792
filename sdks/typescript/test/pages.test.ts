/**
 * The handbook's Mastra and LangGraph.js pages run as they show: each page's sample program
 * (after its `<!-- check: file agent.ts -->`, with its `<!-- check: replace ... -->` edits, which
 * put the scripted model in place of OpenAI) is built with the page's `tsc` command and run
 * against a real clarify server, a person answers as the page's `answered-by` line says, and the
 * program prints what the page's `<!-- check: output -->` block shows.
 */

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";

import type { AnswerBody } from "@clarify-hitl/client";

import { delay, Server } from "./support.js";

const run = promisify(execFile);
const here = fileURLToPath(new URL(".", import.meta.url));
const pages = fileURLToPath(new URL("../../../docs/src/agents/", import.meta.url));
const tsc = fileURLToPath(new URL("../node_modules/.bin/tsc", import.meta.url));

let server: Server;

before(async () => {
  server = await Server.start();
});

after(async () => {
  await server.close();
});

/** What a page's directives and blocks say about its sample program. */
interface Sample {
  program: string;
  build: string[];
  answer: AnswerBody;
  output: string;
}

function sampleOf(page: string): Sample {
  const text = readFileSync(`${pages}${page}`, "utf8");
  const block = (from: number, lang: string) => {
    const start = text.indexOf("```" + lang + "\n", from);
    assert.notEqual(start, -1, `${page}: no \`\`\`${lang} block after offset ${from}`);
    const body = start + lang.length + 4;
    return { text: text.slice(body, text.indexOf("```", body)), end: text.indexOf("```", body) + 3 };
  };
  const file = text.indexOf("<!-- check: file agent.ts -->");
  assert.notEqual(file, -1, `${page}: no sample program`);
  const source = block(file, "ts");
  let program = source.text;
  const directives = text.slice(file, text.indexOf("```ts", file));
  for (const [, from, to] of directives.matchAll(/<!-- check: replace `(.*)` by `(.*)` -->/g)) {
    assert.ok(program.includes(from!), `${page}: the sample has no \`${from}\``);
    program = program.replace(from!, to!);
  }
  const build = block(source.end, "sh").text.trim();
  assert.match(build, /^npx tsc /, `${page}: the sample is not built with tsc`);
  const answeredBy = /<!-- check: answered-by check_answer (?:--approve|--body '(.*)') -->/.exec(text);
  assert.ok(answeredBy, `${page}: nobody answers the sample`);
  const answer = (answeredBy[1] === undefined ? { decision: "approve" } : JSON.parse(answeredBy[1])) as AnswerBody;
  const output = block(text.indexOf("<!-- check: output -->"), "text").text;
  return { program, build: build.split(/\s+/).slice(2), answer, output };
}

async function runPage(page: string, name: string): Promise<void> {
  const sample = sampleOf(page);
  // Beside the compiled tests, so the sample finds this package and its frameworks as an
  // application would find them in its node_modules, and the scripted model beside it.
  const dir = `${here}page-${name}/`;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  writeFileSync(`${dir}agent.ts`, sample.program);
  copyFileSync(`${here}scripted-openai.js`, `${dir}scripted-openai.js`);
  writeFileSync(
    `${dir}scripted-openai.d.ts`,
    "export declare function mastraPageModel(): Promise<string>;\n" +
      "export declare function langgraphPageModel(): Promise<string>;\n",
  );
  // A reader's project has no tsconfig.json; this folder is inside the package, which has one.
  await run(tsc, ["--ignoreConfig", ...sample.build], { cwd: dir });

  const session = name === "langgraph" ? "chat-42" : "chat-7";
  const person = (async () => {
    for (let i = 0; i < 400; i += 1) {
      const page = await server.alice().listPage({ status: "pending", session });
      const [record] = page.requests;
      if (record !== undefined) return server.alice().answer(record.id, sample.answer);
      await delay(50);
    }
    throw new Error(`the ${name} page's program asked nothing`);
  })();
  const { stdout } = await run("node", ["agent.js"], {
    cwd: dir,
    env: { ...process.env, CLARIFY_URL: server.url, CLARIFY_TOKEN: server.adminKey },
  });
  await person;
  assert.equal(stdout, sample.output);
}

describe("the handbook's framework pages", () => {
  test("Mastra: the sample prints what the page shows", async () => {
    await runPage("mastra.md", "mastra");
  });

  test("LangGraph.js: the sample prints what the page shows", async () => {
    await runPage("langgraph-js.md", "langgraph");
  });
});
