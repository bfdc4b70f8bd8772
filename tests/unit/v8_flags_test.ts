import assert from "node:assert/strict";
import { AGENT_V8_FLAGS } from "../../tools/v8_flags.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** deno.json's tasks (its // comment lines dropped). */
async function tasks(): Promise<Record<string, string>> {
  const text = await Deno.readTextFile(`${ROOT}deno.json`);
  return JSON.parse(text.split("\n").filter((l) => !/^\s*\/\//.test(l)).join("\n")).tasks;
}

Deno.test("deno task run and deno task bench start with the agent's V8 flags", async () => {
  const t = await tasks();
  const flag = `--v8-flags=${AGENT_V8_FLAGS}`;
  assert.ok(t.run?.split(/\s+/).includes(flag), `run: ${t.run}`);
  assert.ok(t.bench?.split(/\s+/).includes(flag), `bench: ${t.bench}`);
});
