/**
 * The `deno run` options of `deno task run` (deno.json `tasks.run`): the
 * permission set and the runtime flags the agent always runs with. The test
 * harness (tests/integration/_agent.ts) starts the agent with exactly these,
 * and `deno task compile` bakes the runtime flags into the binary, so the
 * three ways of running denolet cannot drift apart.
 *
 * @module
 */

const ROOT = new URL("../", import.meta.url).pathname;

/** The parts of deno.json read by tools and tests. */
export interface DenoJson {
  tasks: Record<string, string>;
  /** Permission sets by name: kind → true or a list of scopes. */
  permissions: Record<string, Record<string, unknown>>;
}

/**
 * deno.json (JSONC) without its whole-line `//` comments, parsed.
 * @returns the config object
 */
export function readDenoJson(): DenoJson {
  const text = Deno.readTextFileSync(`${ROOT}deno.json`);
  return JSON.parse(text.split("\n").filter((l) => !/^\s*\/\//.test(l)).join("\n"));
}

/**
 * The options between `deno run` and `main.ts` in `tasks.run`.
 * @returns e.g. `["-P=agent", "--no-code-cache", "--v8-flags=..."]`
 * @throws {Error} when the task is not `deno run <options> main.ts`
 */
export function runTaskOptions(): string[] {
  const task = readDenoJson().tasks.run ?? "";
  const words = task.trim().split(/\s+/);
  if (words[0] !== "deno" || words[1] !== "run" || words.at(-1) !== "main.ts") {
    throw new Error(`deno.json tasks.run must be "deno run <options> main.ts", not "${task}"`);
  }
  return words.slice(2, -1);
}

/**
 * The options of `tasks.run` that `deno compile` also takes and bakes into
 * the binary: the permission set, `--v8-flags` and `--no-code-cache`.
 * @returns the options, in the task's order
 */
export function compileOptions(): string[] {
  return runTaskOptions().filter((o) =>
    o.startsWith("-P=") || o.startsWith("--v8-flags=") || o === "--no-code-cache"
  );
}
