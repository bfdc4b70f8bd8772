/**
 * `deno task bundle`: builds the agent into one JavaScript file, `dist/denolet.js`, the
 * program `deno task compile` puts in the binary and the side-by-side bench runs.
 *
 * `deno bundle` (esbuild, fetched from npm on first use) writes the bundle and a source
 * map, which is read and removed: linked, Deno would load it with the program and hold it
 * in memory (several MiB for the agent). A one-line preamble gives the bundle the map's
 * line table instead (lib/util/bundle_lines.ts), so the agent's klog caller still names
 * the `.ts` file and line. Measured in docs/benchmarks.md (idle RSS).
 *
 * `deno run <the options of deno task run> dist/denolet.js <flags>` runs it.
 *
 * @module
 */

import { BUNDLE_LINES_KEY, bundleLinesOf, sourceLine } from "../lib/util/bundle_lines.ts";

const ROOT = new URL("../", import.meta.url).pathname;
/** The bundle, relative to the repository. */
export const BUNDLE = "dist/denolet.js";

/**
 * Builds {@link BUNDLE} from main.ts.
 * @returns the bundle's absolute path
 * @throws {Error} with `deno bundle`'s output when it fails
 */
export async function bundleAgent(): Promise<string> {
  const out = `${ROOT}${BUNDLE}`;
  const cmd = await new Deno.Command(Deno.execPath(), {
    args: [
      "bundle",
      "--quiet",
      "--platform=deno",
      "--sourcemap=external",
      `--output=${out}`,
      "main.ts",
    ],
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!cmd.success) {
    const text = new TextDecoder().decode(cmd.stderr) + new TextDecoder().decode(cmd.stdout);
    throw new Error(`deno bundle main.ts exited ${cmd.code}:\n${text.trim()}`);
  }
  const map = JSON.parse(await Deno.readTextFile(`${out}.map`));
  await Deno.remove(`${out}.map`);
  const code = await Deno.readTextFile(out);
  // The map is esbuild's; `deno bundle` then rewrites lines near the top (esbuild's
  // require helper becomes a createRequire shim) without moving the mappings. main.ts's
  // last line ends the bundle: where it is against where the map puts it is the shift,
  // plus the preamble's line.
  const table = bundleLinesOf(map, await shiftOf(map, code) + 1);
  const preamble = `globalThis[Symbol.for(${JSON.stringify(BUNDLE_LINES_KEY)})] = ${
    JSON.stringify(table)
  };\n`;
  await Deno.writeTextFile(out, oneByteSource(preamble + code));
  return out;
}

/**
 * The program's text with every character above U+00FF written as a `\uXXXX` escape.
 *
 * V8 keeps a script's source in memory for as long as its functions may be compiled, and
 * keeps it as one byte a character only when every character fits in Latin-1: one arrow
 * in a JSDoc comment makes the whole bundle two bytes a character (3.3 MB instead of
 * 1.7 MB for the agent). The escape means the same character in a string, template,
 * regular expression or identifier, and is inert in a comment; lines do not move, so the
 * line table still holds.
 * @throws {Error} for such a character after a backslash or on a line with a raw template
 *   (`String.raw`), where the escape would change the text
 */
export function oneByteSource(code: string): string {
  return code.split("\n").map((line, i) => {
    if (!/[\u0100-\uffff]/.test(line)) return line;
    return line.replace(/[\u0100-\uffff]/g, (c, at: number) => {
      if (line.includes("String.raw") || line[at - 1] === "\\") {
        throw new Error(`${BUNDLE}:${i + 1}: ${JSON.stringify(c)} cannot be escaped here`);
      }
      return `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
    });
  }).join("\n");
}

/**
 * How many lines the bundle has above where its map puts them, found with main.ts's last
 * line, which ends the bundle.
 * @throws {Error} when the line is not where both can be found
 */
async function shiftOf(map: { sources: string[]; mappings: string }, code: string) {
  const main = (await Deno.readTextFile(`${ROOT}main.ts`)).trimEnd().split("\n");
  const anchor = main.at(-1)!.trim();
  const at = code.split("\n").findLastIndex((l) => l.trim() === anchor) + 1;
  const table = bundleLinesOf(map);
  for (let g = map.mappings.split(";").length; at > 0 && g > 0; g--) {
    const src = sourceLine(table, g);
    if (src?.line === main.length && /(^|\/)main\.ts$/.test(src.file)) return at - g;
  }
  throw new Error(
    `${BUNDLE}: main.ts's last line ${JSON.stringify(anchor)} is not in the bundle (line ${at}) ` +
      `or not in its source map`,
  );
}

if (import.meta.main) {
  try {
    const path = await bundleAgent();
    console.error(`bundle: ${BUNDLE} (${(await Deno.stat(path)).size} bytes)`);
  } catch (err) {
    console.error(`bundle: ${(err as Error).message}`);
    Deno.exit(1);
  }
}
