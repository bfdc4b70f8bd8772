/**
 * `deno task bundle`: builds the agent into one JavaScript file, `dist/denolet.js`, the
 * program `deno task compile` puts in the binary and the side-by-side bench runs.
 *
 * `deno bundle` (esbuild, fetched from npm on first use) writes the bundle and a source
 * map, which is read and removed: linked, Deno would load it with the program and hold it
 * in memory (several MiB for the agent). A one-line preamble gives the bundle the map's
 * line table instead (lib/util/bundle_lines.ts), so the agent's klog caller still names
 * the `.ts` file and line. Comments and indentation are left out line for line (V8 holds the
 * program's text for as long as it runs), checked against esbuild's minified reading of both.
 * Measured in docs/benchmarks.md (idle RSS).
 *
 * `deno run <the options of deno task run> dist/denolet.js <flags>` runs it.
 *
 * @module
 */

import {
  BUNDLE_LINES_KEY,
  type BundleLines,
  bundleLinesOf,
  sourceLine,
} from "../lib/util/bundle_lines.ts";

const ROOT = new URL("../", import.meta.url).pathname;
/** The bundle, relative to the repository. */
export const BUNDLE = "dist/denolet.js";

/** The bundle's first line up to its table: the table goes where the logger finds it. */
const PREAMBLE_START = `globalThis[Symbol.for(${JSON.stringify(BUNDLE_LINES_KEY)})] = `;

/**
 * Builds {@link BUNDLE} from main.ts.
 * @returns the bundle's absolute path
 * @throws {Error} with `deno bundle`'s output when it fails
 */
export async function bundleAgent(): Promise<string> {
  const out = `${ROOT}${BUNDLE}`;
  await denoBundle(ROOT, "main.ts", ["--sourcemap=external", `--output=${out}`]);
  const map = JSON.parse(await Deno.readTextFile(`${out}.map`));
  await Deno.remove(`${out}.map`);
  const code = await Deno.readTextFile(out);
  // The map is esbuild's; `deno bundle` then rewrites lines near the top (esbuild's
  // require helper becomes a createRequire shim) without moving the mappings. main.ts's
  // last line ends the bundle: where it is against where the map puts it is the shift,
  // plus the preamble's line.
  const table = bundleLinesOf(map, await shiftOf(map, code) + 1);
  await Deno.writeTextFile(
    out,
    oneByteSource(
      `${PREAMBLE_START}${JSON.stringify(table)};\n${await checkedWithoutComments(code)}`,
    ),
  );
  return out;
}

/**
 * The line table a bundle built by {@link bundleAgent} carries in its first line.
 * @param code the bundle's text
 * @returns the table
 * @throws {Error} when the first line is not the preamble
 */
export function bundleLinesIn(code: string): BundleLines {
  const first = code.slice(0, code.indexOf("\n"));
  if (!first.startsWith(PREAMBLE_START) || !first.endsWith(";")) {
    throw new Error("the bundle's first line is not its line table");
  }
  return JSON.parse(first.slice(PREAMBLE_START.length, -1)) as BundleLines;
}

/**
 * Builds another program of the repository the way {@link BUNDLE} is built, without the
 * line table (for a program that does not log): the side-by-side bench's per-pod floor
 * (bench/_floor_loops.ts), so that it loads its code as the agent does.
 * @param entry the entry file, relative to the repository
 * @param out the bundle, relative to the repository (under dist/)
 * @returns the bundle's absolute path
 * @throws {Error} with `deno bundle`'s output when it fails
 */
export async function bundleProgram(entry: string, out: string): Promise<string> {
  const path = `${ROOT}${out}`;
  await denoBundle(ROOT, entry, [`--output=${path}`]);
  const code = await Deno.readTextFile(path);
  await Deno.writeTextFile(path, oneByteSource(await checkedWithoutComments(code)));
  return path;
}

/**
 * A bundle without its comments ({@link withoutComments}), once {@link sameProgram} has
 * found it the same program.
 * @param code the bundle as `deno bundle` wrote it
 * @returns the lean bundle
 * @throws {Error} when leaving the comments out changed the program
 */
async function checkedWithoutComments(code: string): Promise<string> {
  const lean = withoutComments(code);
  await sameProgram(code, lean);
  return lean;
}

/**
 * Runs `deno bundle` (for Deno, quietly) on one entry file.
 * @param cwd where the entry is
 * @param entry the file, relative to `cwd`
 * @param options more options (output, source map, minify)
 * @throws {Error} with its output when it fails
 */
async function denoBundle(cwd: string, entry: string, options: string[]): Promise<void> {
  const cmd = await new Deno.Command(Deno.execPath(), {
    args: ["bundle", "--quiet", "--platform=deno", ...options, entry],
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!cmd.success) {
    const text = new TextDecoder().decode(cmd.stderr) + new TextDecoder().decode(cmd.stdout);
    throw new Error(
      `deno bundle ${options.join(" ")} ${entry} exited ${cmd.code}:\n${text.trim()}`,
    );
  }
}

/**
 * Checks that `lean` is `code`'s program: esbuild minifies both (`deno bundle --minify`,
 * which drops comments and layout) to the same text, or the build stops. Where
 * {@link withoutComments} misreads the text (a `/` it takes for a division where it
 * starts a regular expression, say), the two differ.
 * @throws {Error} naming the first line where the minified programs differ
 */
export async function sameProgram(code: string, lean: string): Promise<void> {
  await Deno.mkdir(`${ROOT}dist`, { recursive: true });
  const dir = await Deno.makeTempDir({ dir: `${ROOT}dist`, prefix: ".same-" });
  try {
    const minified: string[] = [];
    for (const [name, text] of [["full.js", code], ["lean.js", lean]] as const) {
      await Deno.writeTextFile(`${dir}/${name}`, text);
      const out = `${dir}/${name}.min.js`;
      await denoBundle(dir, name, ["--minify", `--output=${out}`]);
      minified.push(await Deno.readTextFile(out));
    }
    if (minified[0] !== minified[1]) {
      const [a, b] = minified.map((m) => m.split("\n"));
      const at = a!.findIndex((l, i) => l !== b![i]);
      throw new Error(
        `${BUNDLE}: without its comments the bundle is another program (minified line ${
          at + 1
        } differs)`,
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Words after which a `/` starts a regular expression, not a division. */
const BEFORE_REGEX = new Set([
  "return",
  "typeof",
  "instanceof",
  "in",
  "of",
  "new",
  "delete",
  "void",
  "throw",
  "case",
  "do",
  "else",
  "yield",
  "await",
]);

/**
 * The program's text without its comments and the indentation of its lines, line for
 * line: a removed comment leaves its line breaks, so every statement stays on the line the
 * bundle's line table gives it. Kept: comments esbuild reads (`@__PURE__`,
 * `@__NO_SIDE_EFFECTS__`) and legal ones (`/*!`, `@license`, `@preserve`), and the text of
 * strings, templates and regular expressions, indentation inside templates included.
 * @throws {Error} at an unterminated string, template, regular expression or comment
 */
export function withoutComments(code: string): string {
  const out: string[] = [];
  const n = code.length;
  /** Open `${` of templates: the depth of `{` in each, to find the `}` that closes it. */
  const templates: number[] = [];
  let regexAllowed = true;
  let lineStart = true;
  let i = 0;
  let from = 0; // the start of text not yet copied
  const fail = (what: string, at: number): never => {
    const line = code.slice(0, at).split("\n").length;
    throw new Error(`line ${line}: unterminated ${what}`);
  };
  const copy = (to: number) => {
    out.push(code.slice(from, to));
    from = to;
  };
  /** Drops the blanks that end what has been copied (before a removed comment). */
  const dropBlanks = () => {
    while (out.length > 0 && /^[ \t]*$/.test(out[out.length - 1]!)) out.pop();
    if (out.length > 0) out.push(out.pop()!.replace(/[ \t]+$/, ""));
  };
  /** Skips a quoted string or a template's text from `i` (after the opening quote). */
  const skipQuoted = (quote: string): void => {
    for (; i < n; i++) {
      const c = code[i];
      if (c === "\\") i++;
      else if (c === quote) return void i++;
      else if (quote === "`" && c === "$" && code[i + 1] === "{") {
        templates.push(0);
        return void (i += 2);
      } else if (quote !== "`" && c === "\n") break;
    }
    fail(quote === "`" ? "template" : "string", i);
  };
  while (i < n) {
    const c = code[i]!;
    if (lineStart) {
      // Indentation: dropped (the line is code here, never inside a string or template).
      let j = i;
      while (code[j] === " " || code[j] === "\t") j++;
      copy(i);
      from = j;
      i = j;
      lineStart = false;
      continue;
    }
    if (c === "\n") {
      // Trailing blanks go too.
      let e = i;
      while (e > from && (code[e - 1] === " " || code[e - 1] === "\t")) e--;
      copy(e);
      from = i;
      i++;
      lineStart = true;
      continue;
    }
    if (c === " " || c === "\t" || c === "\r") {
      i++;
      continue;
    }
    if (c === "/" && code[i + 1] === "/") {
      const end = code.indexOf("\n", i);
      copy(i);
      dropBlanks();
      i = from = end < 0 ? n : end;
      continue;
    }
    if (c === "/" && code[i + 1] === "*") {
      const end = code.indexOf("*/", i + 2);
      if (end < 0) fail("comment", i);
      const text = code.slice(i, end + 2);
      if (/^\/\*!|@license|@preserve|[@#]__PURE__|@__NO_SIDE_EFFECTS__/.test(text)) {
        i = end + 2;
        continue;
      }
      copy(i);
      const breaks = text.split("\n").length - 1;
      if (breaks > 0) dropBlanks();
      out.push("\n".repeat(breaks));
      i = from = end + 2;
      if (breaks > 0) lineStart = true;
      continue;
    }
    if (c === "'" || c === '"' || c === "`") {
      i++;
      skipQuoted(c);
      regexAllowed = false;
      continue;
    }
    if (c === "/" && regexAllowed) {
      let inClass = false;
      for (i++; i < n; i++) {
        const d = code[i];
        if (d === "\\") i++;
        else if (d === "[") inClass = true;
        else if (d === "]") inClass = false;
        else if (d === "/" && !inClass) break;
        else if (d === "\n") fail("regular expression", i);
      }
      if (i >= n) fail("regular expression", i);
      i++;
      while (i < n && /[a-z]/i.test(code[i]!)) i++; // flags
      regexAllowed = false;
      continue;
    }
    if (c === "{" && templates.length) templates[templates.length - 1]!++;
    if (c === "}" && templates.length) {
      if (templates[templates.length - 1] === 0) {
        templates.pop();
        i++;
        skipQuoted("`");
        regexAllowed = false;
        continue;
      }
      templates[templates.length - 1]!--;
    }
    if (/[A-Za-z0-9_$\\]/.test(c) || c.charCodeAt(0) > 0x7f) {
      let j = i;
      while (j < n && (/[A-Za-z0-9_$\\]/.test(code[j]!) || code.charCodeAt(j) > 0x7f)) j++;
      const word = code.slice(i, j);
      // A member's name (`x.return`) is not the keyword.
      regexAllowed = BEFORE_REGEX.has(word) && code[i - 1] !== ".";
      i = j;
      continue;
    }
    regexAllowed = !(c === ")" || c === "]" || c === "}");
    if ((c === "+" || c === "-") && code[i + 1] === c) {
      i += 2; // `x++ / 2`
      regexAllowed = false;
      continue;
    }
    i++;
  }
  copy(n);
  return out.join("");
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
