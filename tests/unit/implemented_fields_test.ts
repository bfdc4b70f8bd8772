/**
 * "What denolet accepts, it does": every KubeletConfiguration field listed in
 * IMPLEMENTED_FIELDS (so no "not implemented" warning at start-up) must be
 * read where the parsed options are consumed. Those places are main.ts, the
 * files that take the whole AgentOptions or KubeletConfiguration (their type
 * imported from lib/options), and the files defining the functions main.ts
 * hands `opts` or `opts.config` to as a whole (`runtimeServiceOptions(opts)`,
 * `rotationPolicy(opts.config)`). A field counts as read when one of them
 * accesses it as a property (`opts.config.tlsMinVersion`,
 * `config.containerLogMaxSize`, `kc.logging?.format`) or accesses an
 * AgentOptions field toAgentOptions computes from it (`kc.syncFrequency`
 * becomes `syncFrequencyMs`, read as `opts.syncFrequencyMs`). Comments do not
 * count. A field nothing reads must leave IMPLEMENTED_FIELDS, so it warns.
 *
 * What this cannot see: a read that passes the value on to a component that
 * then drops it. It catches the field that stops at lib/options.
 */

import assert from "node:assert/strict";
import { FLAGS } from "../../lib/options/flag_table.ts";
import { IMPLEMENTED_FIELDS } from "../../lib/options/schema.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

function stripComments(source: string): string {
  return source
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
}

/**
 * The files where parsed options are consumed, comments stripped: main.ts,
 * lib files importing the AgentOptions or KubeletConfiguration type, and the
 * files defining what main.ts passes `opts` / `opts.config` to whole.
 */
async function consumers(): Promise<Map<string, string>> {
  const libFiles = new Map<string, string>();
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(`${ROOT}${dir}`)) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory && rel !== "lib/options") await walk(rel);
      else if (e.isFile && e.name.endsWith(".ts")) {
        libFiles.set(rel, await Deno.readTextFile(`${ROOT}${rel}`));
      }
    }
  };
  await walk("lib");
  const main = await Deno.readTextFile(`${ROOT}main.ts`);
  const out = new Map([["main.ts", stripComments(main)]]);
  const handedWhole = new Set(
    [...stripComments(main).matchAll(/(\w+)\(\s*(?:\{\s*\.\.\.)?opts(?:\.config)?\s*[,)]/g)]
      .map((m) => m[1]!),
  );
  for (const [file, text] of libFiles) {
    const takesOptions =
      /import[^;]*\b(AgentOptions|KubeletConfiguration)\b[^;]*from "\.\.\/options\//.test(text);
    const defines = [...handedWhole].some((f) =>
      new RegExp(`export (async )?function ${f}\\b`).test(text)
    );
    if (takesOptions || defines) out.set(file, stripComments(text));
  }
  return out;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** `kc.a` or, for a sub-field `a.b`, `kc.a?.b` / `kc.a.b`. */
function configAccess(receiver: string, path: string): RegExp {
  const [head, ...rest] = path.split(".");
  const tail = rest.map((p) => `\\??\\.${escape(p)}`).join("");
  return new RegExp(`\\b${receiver}\\.${escape(head!)}${tail}\\b`);
}

/**
 * The AgentOptions fields toAgentOptions computes from each config field path,
 * read off its source: `name: expression` entries of the returned object,
 * with its local constants substituted. An option counts for the first field
 * its expression reads only (`cgroupRoot: kc.cgroupRoot || (cgroupsPerQOS ?
 * "/" : "")` is cgroupRoot's), so a field that merely shapes another's
 * default is not read through it.
 */
async function optionsByField(): Promise<Map<string, string[]>> {
  const source = await Deno.readTextFile(`${ROOT}lib/options/agent_options.ts`);
  const body = source.slice(source.indexOf("export function toAgentOptions("));
  const locals = new Map<string, string>();
  for (const m of body.matchAll(/^\s*const (\w+) = (.+);$/gm)) locals.set(m[1]!, m[2]!);
  const returned = body.slice(body.indexOf("return {"));
  const out = new Map<string, string[]>();
  for (const m of returned.matchAll(/^ {4}(\w+)(?:: (.+))?,$/gm)) {
    const option = m[1]!;
    if (option === "config") continue; // the whole file, for /configz and `opts.config.x`
    let expr = m[2] ?? option;
    for (const [name, value] of locals) {
      expr = expr.replace(new RegExp(`\\b${name}\\b(?!:)`, "g"), `(${value})`);
    }
    const first = expr.match(/\bkc\.(\w+)(?:\??\.(\w+))?/);
    if (!first) continue;
    const sub = `${first[1]}.${first[2]}`;
    const field = first[2] !== undefined && IMPLEMENTED_FIELDS.has(sub) ? sub : first[1]!;
    out.set(field, [...(out.get(field) ?? []), option]);
  }
  return out;
}

/** Whether some file reads `.name` as a property. */
function readSomewhere(files: Map<string, string>, name: string): string | undefined {
  const re = new RegExp(`\\.${escape(name)}\\b(?!\\s*=[^=>])`);
  for (const [file, text] of files) if (re.test(text)) return file;
  return undefined;
}

/**
 * Fields whose whole effect is how lib/options computes another field, with
 * that field: the other must be read, and the file named must use this one.
 */
const SHAPES_ANOTHER: Record<string, { field: string; file: string }> = {
  // Whether a partial evictionHard map is merged with upstream's defaults.
  mergeDefaultEvictionSettings: { field: "evictionHard", file: "lib/options/config_file.ts" },
};

Deno.test("every field in IMPLEMENTED_FIELDS is read where the parsed options are consumed", async () => {
  const files = await consumers();
  const options = await optionsByField();
  const unread: string[] = [];
  for (const [field, { field: other, file }] of Object.entries(SHAPES_ANOTHER)) {
    assert.ok(IMPLEMENTED_FIELDS.has(other), `${field} shapes ${other}, which must be implemented`);
    const text = stripComments(await Deno.readTextFile(`${ROOT}${file}`));
    assert.ok(readSomewhere(new Map([[file, text]]), field), `${file} reads ${field}`);
  }
  for (const field of IMPLEMENTED_FIELDS) {
    if (SHAPES_ANOTHER[field]) continue;
    const [head, ...rest] = field.split(".");
    // A sub-field (`logging.format`) only counts as `.logging?.format` or through its option.
    const direct = rest.length === 0
      ? readSomewhere(files, head!)
      : [...files.values()].some((t) => configAccess("\\w+", field).test(t));
    const viaOption = (options.get(field) ?? []).some((o) => readSomewhere(files, o));
    if (!direct && !viaOption) unread.push(field);
  }
  assert.deepEqual(
    unread,
    [],
    `listed as implemented but read by nothing after lib/options: ${unread.join(", ")}`,
  );
});

Deno.test("the field-read check sees through toAgentOptions and finds a field nothing reads", async () => {
  const files = await consumers();
  for (
    const f of ["main.ts", "lib/agent/cluster.ts", "lib/cri/client.ts", "lib/logs/rotation.ts"]
  ) {
    assert.ok(files.has(f), f);
  }
  assert.equal(files.has("lib/kuberuntime/runtime_manager.ts"), false);
  const options = await optionsByField();
  assert.deepEqual(options.get("syncFrequency"), ["syncFrequencyMs"]);
  assert.deepEqual(options.get("cgroupsPerQOS"), ["cgroupsPerQOS"]);
  assert.deepEqual(options.get("cgroupRoot"), ["cgroupRoot"]);
  assert.deepEqual(options.get("logging.format"), ["loggingFormat"]);
  const text = "const a = opts.syncFrequencyMs;\nopts.nothing = 1;\n// opts.commented";
  const fake = new Map([["lib/x.ts", stripComments(text)]]);
  assert.equal(readSomewhere(fake, "syncFrequencyMs"), "lib/x.ts");
  assert.equal(readSomewhere(fake, "nothing"), undefined, "an assignment is not a read");
  assert.equal(readSomewhere(fake, "commented"), undefined);
  assert.equal(readSomewhere(fake, "syncFrequency"), undefined);
});

Deno.test("a config flag is marked not implemented exactly when its field is not", () => {
  const implemented = (path: string) => {
    const parts = path.split(".");
    return parts.some((_, i) => IMPLEMENTED_FIELDS.has(parts.slice(0, i + 1).join(".")));
  };
  const mismatched = FLAGS.filter((f) =>
    f.field !== undefined && (f.implemented !== false) !== implemented(f.field)
  ).map((f) => `--${f.name} (${f.field})`);
  assert.deepEqual(mismatched, []);
});
