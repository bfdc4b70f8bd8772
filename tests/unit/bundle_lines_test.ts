/**
 * The bundle's line table (lib/util/bundle_lines.ts): built from a source map's
 * mappings, it answers each bundle line with its source file and line.
 */

import assert from "node:assert/strict";
import { bundleLinesOf, sourceLine } from "../../lib/util/bundle_lines.ts";
import { oneByteSource, sameProgram, withoutComments } from "../../tools/bundle.ts";

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Base64 VLQ of one number (the test's own encoder, after the source map spec). */
function vlq(n: number): string {
  let v = n < 0 ? (-n << 1) | 1 : n << 1;
  let out = "";
  do {
    let digit = v & 31;
    v >>>= 5;
    if (v > 0) digit |= 32;
    out += B64[digit];
  } while (v > 0);
  return out;
}

/**
 * Mappings for generated lines, each a list of segments [column, source, line (0-based)]
 * (or [column] alone, unmapped).
 */
function mappings(lines: number[][][]): string {
  let src = 0, line = 0, col = 0;
  return lines.map((segs) => {
    let genCol = 0;
    return segs.map((s) => {
      const [c, sIdx, sLine] = s as [number, number?, number?];
      let text = vlq(c! - genCol);
      genCol = c!;
      if (sIdx !== undefined) {
        text += vlq(sIdx - src) + vlq(sLine! - line) + vlq(0 - col);
        src = sIdx;
        line = sLine!;
        col = 0;
      }
      return text;
    }).join(",");
  }).join(";");
}

Deno.test("bundle lines: each line's first mapped segment, runs interpolated", () => {
  const map = {
    sources: ["../lib/a.ts", "../main.ts"],
    mappings: mappings([
      [[0]], // line 1: helpers, unmapped
      [[0, 0, 9]], // a.ts:10
      [[2, 0, 10], [8, 1, 3]], // a.ts:11 (first segment wins)
      [], // blank: inside the run, a.ts:12
      [[0, 0, 12]], // a.ts:13, the same run
      [[0, 1, 0]], // main.ts:1
      [[4, 0, 2]], // a.ts:3, back in a.ts
    ]),
  };
  const t = bundleLinesOf(map);
  const at = (n: number) => sourceLine(t, n);
  assert.equal(at(1), undefined);
  assert.deepEqual(at(2), { file: "../lib/a.ts", line: 10 });
  assert.deepEqual(at(3), { file: "../lib/a.ts", line: 11 });
  assert.deepEqual(at(4), { file: "../lib/a.ts", line: 12 });
  assert.deepEqual(at(5), { file: "../lib/a.ts", line: 13 });
  assert.deepEqual(at(6), { file: "../main.ts", line: 1 });
  assert.deepEqual(at(7), { file: "../lib/a.ts", line: 3 });
  assert.deepEqual(at(100), { file: "../lib/a.ts", line: 96 });
  // Three runs: a.ts from line 2, main.ts at 6, a.ts at 7.
  assert.equal(atob(t.runs).length, 3 * 6);
});

Deno.test("bundle lines: a shift moves every line, dropping those above the first", () => {
  const map = {
    sources: ["../main.ts"],
    mappings: mappings([[[0, 0, 0]], [[0, 0, 1]], [[0, 0, 5]]]),
  };
  assert.deepEqual(sourceLine(bundleLinesOf(map, 2), 3), { file: "../main.ts", line: 1 });
  assert.deepEqual(sourceLine(bundleLinesOf(map, 2), 5), { file: "../main.ts", line: 6 });
  const up = bundleLinesOf(map, -1);
  assert.deepEqual(sourceLine(up, 1), { file: "../main.ts", line: 2 });
  assert.deepEqual(sourceLine(up, 2), { file: "../main.ts", line: 6 });
});

Deno.test("bundle lines: refuses what the table cannot hold, and bad VLQ", () => {
  const far = { sources: ["../a.ts"], mappings: mappings([[[0, 0, 70_000]]]) };
  assert.throws(() => bundleLinesOf(far), /beyond uint16/);
  assert.throws(
    () => bundleLinesOf({ sources: ["a"], mappings: "AA!A" }),
    /"!" is not Base64 VLQ/,
  );
  assert.equal(sourceLine(bundleLinesOf({ sources: [], mappings: "" }), 1), undefined);
});

Deno.test("bundle source: characters above Latin-1 escaped, meaning and lines kept", async () => {
  const code = [
    "// a comment with an arrow → and an ellipsis …",
    'const s = "a→b", μ = 2; // μ (U+03BC) in an identifier',
    "const t = `−${μ}…`;",
    'export const out = [s, t, /→+/u.test("→→"), /[←-↓]/.test("↑"), "µ"];',
  ].join("\n");
  const escaped = oneByteSource(code);
  assert.ok(![...escaped].some((c) => c.charCodeAt(0) > 0xff), escaped);
  assert.equal(escaped.split("\n").length, 4);
  assert.match(escaped, /"µ"/, "Latin-1 is left as it is");
  const mod = await import(`data:text/javascript,${encodeURIComponent(escaped)}`);
  assert.deepEqual(mod.out, ["a→b", "−2…", true, true, "µ"]);
  assert.throws(() => oneByteSource("String.raw`→`"), /denolet\.js:1: "→" cannot be escaped/);
  assert.throws(() => oneByteSource('x;\n"\\→"'), /denolet\.js:2: "→" cannot be escaped/);
});

Deno.test("bundle source: comments and indentation left out line for line, the program kept", async () => {
  const code = [
    "/**",
    " * A doc comment over three lines.",
    " */",
    "export const out = []; // a line comment",
    "    out.push('// not a comment', \"/* nor this */\");",
    "  out.push(`a template",
    "    keeps its indentation ${ { k: `// inner ${1 + 1}` }.k } and /* this */`);",
    "  out.push(/\\/\\/|\\/\\*[/]*/.test('//'), /[/*]/.source);",
    "  let a = 8, b = 2, c = 2; /* one */ /* two",
    "  three */ out.push(a / b / c, a++ / 2, ({ return: 6 }).return / 3);",
    "  out.push((() => { return /x/g.flags; })(), typeof /y/);",
    "/*! legal: kept */ const f = /* @__PURE__ */ Object.keys({});",
    "out.push(f.length);",
  ].join("\n");
  const lean = withoutComments(code);
  assert.equal(lean.split("\n").length, code.split("\n").length, lean);
  assert.doesNotMatch(
    lean,
    /doc comment|a line comment|\/\* one|three \*\/|^ (?! {3}keeps)| $/m,
    lean,
  );
  assert.match(lean, /\/\*! legal: kept \*\/ const f = \/\* @__PURE__ \*\/ Object/);
  assert.match(lean, /^ {4}keeps its indentation/m, "a template's text is the program's");
  assert.equal(lean.split("\n")[9], "out.push(a / b / c, a++ / 2, ({ return: 6 }).return / 3);");
  const run = async (text: string) =>
    (await import(`data:text/javascript,${encodeURIComponent(text)}`)).out;
  assert.deepEqual(await run(lean), await run(code));
  assert.deepEqual(await run(lean), [
    "// not a comment",
    "/* nor this */",
    "a template\n    keeps its indentation // inner 2 and /* this */",
    true,
    "[/*]",
    2,
    4,
    2,
    "g",
    "object",
    0,
  ]);
  assert.throws(() => withoutComments("x;\n'open"), /line 2: unterminated string/);
  assert.throws(() => withoutComments("x; /* open"), /line 1: unterminated comment/);
});

Deno.test("bundle source: a text that is not the same program stops the build", async () => {
  const code = "/** doc */\nexport const a = 1; // one\nexport const re = /x/;\n";
  await sameProgram(code, withoutComments(code));
  await assert.rejects(
    sameProgram(code, "\nexport const a = 2;\nexport const re = /x/;\n"),
    /dist\/denolet\.js: without its comments the bundle is another program \(minified line 1/,
  );
});
