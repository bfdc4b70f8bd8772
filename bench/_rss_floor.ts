/**
 * How low an idle agent's RSS can go on Deno (issue #19's idle RSS target): two
 * processes started with the agent's own `deno run` options (deno.json `tasks.run`),
 * each measured as the bench measures an agent, the highest VmRSS sampled each
 * second over a window after a settle:
 *
 * - **runtime**: the Deno runtime and nothing else (a script that only waits);
 * - **code**: the same with the agent's program loaded (the bundle of tools/bundle.ts, or
 *   main.ts, imported; its `import.meta.main` guard keeps it from starting): every module
 *   evaluated, no server, no CRI connection, no pod.
 *
 * An idle agent sits above both; the gap to "code" is what running costs.
 *
 * @module
 */

import { bundleAgent } from "../tools/bundle.ts";
import { runTaskOptions } from "../tools/run_task.ts";
import { sampleRss } from "./_proc.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** The two floors, MiB. */
export interface RssFloors {
  runtimeMiB: number;
  codeMiB: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function peakRss(source: string, settleS: number, windowS: number): Promise<number> {
  // In the repository, so the agent's permission set (-P=agent) lets it load main.ts.
  const script = `${ROOT}bench/.rss-floor-${crypto.randomUUID().slice(0, 8)}.ts`;
  await Deno.writeTextFile(script, source);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...runTaskOptions(), "--quiet", script],
    cwd: ROOT,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const stop = async () => {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    await child.status;
  };
  try {
    await sleep(settleS * 1000);
    const rss = sampleRss(child.pid, 1000);
    await sleep(windowS * 1000);
    return rss.stop(); // throws when the process has exited
  } catch (err) {
    await stop(); // its stderr ends once it has gone
    throw new Error(`the RSS floor script exited early: ${(await stderr).slice(-500)}`, {
      cause: err,
    });
  } finally {
    await stop();
    await stderr.catch(() => "");
    await Deno.remove(script).catch(() => {});
  }
}

/**
 * Measures both floors, one after the other.
 * @param program the agent's program, an absolute path (the bundle or main.ts)
 * @param settleS seconds before sampling (the bench's settle)
 * @param windowS seconds sampled, one sample a second
 * @returns the floors
 * @throws Error with the script's stderr when one exits before it is measured
 */
export async function idleRssFloors(
  program: string,
  settleS = 15,
  windowS = 20,
): Promise<RssFloors> {
  const wait = "setInterval(() => {}, 2 ** 30);\n";
  const runtimeMiB = await peakRss(wait, settleS, windowS);
  const codeMiB = await peakRss(`import ${JSON.stringify(program)};\n${wait}`, settleS, windowS);
  return { runtimeMiB, codeMiB };
}

if (import.meta.main) {
  // `--source`: main.ts as `deno task run` runs it, instead of the bundle.
  const program = Deno.args.includes("--source") ? `${ROOT}main.ts` : await bundleAgent();
  console.log(JSON.stringify({ program, ...await idleRssFloors(program) }));
}
