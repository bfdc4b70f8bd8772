/**
 * `deno task compile`: builds `dist/denolet` with `deno compile` and the
 * permission set and runtime flags of `deno task run` (tools/run_task.ts), from
 * the agent's bundle (tools/bundle.ts: `dist/denolet.js`, its klog callers
 * mapped back to the `.ts` sources without a source map held in memory).
 *
 * `deno compile` appends the program to a `denort` runtime that it downloads
 * from dl.deno.land. Where that host cannot be reached, set `DENORT_BIN` to a
 * denort binary of the same Deno version (the `denort-<target>.zip` asset of
 * the Deno release, unpacked). The `deno` CLI itself is not a substitute: a
 * binary built on it ignores the appended program and behaves as `deno`, which
 * this tool detects and rejects.
 *
 * Extra arguments are passed to `deno compile` (e.g. `--target`).
 *
 * @module
 */

import { BUNDLE, bundleAgent } from "./bundle.ts";
import { compileOptions } from "./run_task.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const OUTPUT = "dist/denolet";
const decoder = new TextDecoder();

function fail(message: string): never {
  console.error(`compile: ${message}`);
  Deno.exit(1);
}

async function compile(extraArgs: string[]): Promise<void> {
  await bundleAgent().catch((err) => fail((err as Error).message));
  // The bundle is JavaScript built from the checked sources (`deno task check`); its JSDoc
  // still names the .ts modules it was built from, which a check of the bundle cannot find.
  const args = [
    "compile",
    ...compileOptions(),
    "--no-check",
    `--output=${OUTPUT}`,
    ...extraArgs,
    BUNDLE,
  ];
  console.error(`compile: deno ${args.join(" ")}`);
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    stdout: "inherit",
    stderr: "piped",
  }).output();
  const stderr = decoder.decode(out.stderr);
  await Deno.stderr.write(out.stderr);
  if (out.success) return;
  const denortBin = Deno.env.get("DENORT_BIN");
  if (!denortBin && /dl\.deno\.land|denort/.test(stderr)) {
    fail(
      `deno compile could not download the denort runtime (see the error above).\n` +
        `  Set DENORT_BIN to a denort binary of the same Deno version ` +
        `(${Deno.version.deno}), e.g. unpacked from\n` +
        `  https://dl.deno.land/release/v${Deno.version.deno}/denort-<target>.zip ` +
        `fetched on a machine that can reach it:\n` +
        `    DENORT_BIN=/path/to/denort deno task compile\n` +
        `  The deno CLI itself cannot serve as DENORT_BIN.`,
    );
  }
  fail(`deno compile failed with exit code ${out.code}`);
}

/** A binary built on the deno CLI instead of denort answers `--version` as deno does. */
async function verify(): Promise<void> {
  const out = await new Deno.Command(`${ROOT}${OUTPUT}`, {
    args: ["--version"],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(30_000),
  }).output();
  const text = decoder.decode(out.stdout).trim();
  if (out.success && text.startsWith("denolet ")) {
    console.error(`compile: ${OUTPUT}: ${text}`);
    return;
  }
  await Deno.remove(`${ROOT}${OUTPUT}`).catch(() => {});
  fail(
    `${OUTPUT} does not run as denolet (--version printed ${JSON.stringify(text)}); ` +
      `removed it. DENORT_BIN=${
        Deno.env.get("DENORT_BIN") ?? "(unset)"
      } must be a denort binary, not the deno CLI.`,
  );
}

if (import.meta.main) {
  await compile(Deno.args);
  await verify();
}
