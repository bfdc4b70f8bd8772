/**
 * KubeletConfiguration files and command lines of every bad shape, through the parser
 * main.ts runs (lib/options parseFlags, which loads `--config` through loadConfigFile):
 * generated from the defaults mutated field by field, random bytes and YAML noise, and
 * argv of known flags with bad values, unknown flags and stray words.
 *
 * What must hold: the parser returns options (or help/version) or throws one of its three
 * errors, which name the flag, the file or the field; it throws nothing else; accepted
 * options hold no NaN and no non-finite duration. A few refused command lines go through
 * the real binary (`deno task run`'s options): exit code 2 for a bad flag, 1 for a bad
 * config, and the same message on stderr.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import fc from "fast-check";
import {
  ConfigFileError,
  ConfigValidationError,
  defaultKubeletConfiguration,
  encodeKubeletConfiguration,
  FlagError,
  parseFlags,
} from "../../lib/options/mod.ts";
import { FLAGS } from "../../lib/options/flag_table.ts";
import { KUBELET_CONFIG_SCHEMA, type SchemaNode } from "../../lib/options/schema.ts";
import { runTaskOptions } from "../../tools/run_task.ts";
import { recordSuite, suiteCount, suiteSeed } from "../kit/suite.ts";
import { argvArb, kubeletConfigBase, kubeletConfigTextArb, preview } from "./_arbitraries.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const CASE_BOUND_MS = 5_000;

/** Every config field name (at any depth) and flag name, to tell whether a message names one. */
const NAMES: ReadonlySet<string> = (() => {
  const names = new Set<string>(FLAGS.map((f) => f.name));
  const walk = (node: SchemaNode) => {
    if (typeof node === "string") return;
    const obj = Array.isArray(node) ? node[0] : node;
    for (const [k, child] of Object.entries(obj as Record<string, SchemaNode>)) {
      names.add(k);
      walk(child);
    }
  };
  walk(KUBELET_CONFIG_SCHEMA);
  return names;
})();

function namesSomething(message: string): boolean {
  for (const word of message.split(/[^A-Za-z0-9-]+/)) {
    const name = word.replace(/^-+/, "");
    if (name.length > 1 && NAMES.has(name)) return true;
  }
  return /for "--[a-z][a-z0-9-]*" flag|unknown (shorthand )?flag|unknown command|unknown field|flag needs an argument|Object 'Kind'|apiVersion|KubeletConfiguration|not valid YAML|node label|--node-ip|eviction/
    .test(message);
}

/** NaN anywhere, or a non-finite `...Ms` duration, in the accepted options. */
function badNumbers(value: unknown, path = "options", out: string[] = []): string[] {
  if (typeof value === "number") {
    if (Number.isNaN(value)) out.push(`${path} is NaN`);
    else if (/Ms$/.test(path) && !Number.isFinite(value)) out.push(`${path} is ${value}`);
  } else if (value !== null && typeof value === "object" && out.length < 10) {
    for (const [k, v] of Object.entries(value)) badNumbers(v, `${path}.${k}`, out);
  }
  return out;
}

type Outcome =
  | { kind: "accepted"; problems: string[] }
  | { kind: "refused"; error: Error; exitCode: 1 | 2; problems: string[] }
  | { kind: "crash"; error: unknown };

function parse(argv: string[], configPath: string, text: string | undefined): Outcome {
  try {
    const parsed = parseFlags(argv, {
      readFile: (p) => {
        if (text === undefined || p !== configPath) throw new Deno.errors.NotFound(`open ${p}`);
        return text;
      },
    });
    return { kind: "accepted", problems: parsed.kind === "run" ? badNumbers(parsed.options) : [] };
  } catch (error) {
    if (error instanceof FlagError) {
      return {
        kind: "refused",
        error,
        exitCode: 2,
        problems: namesSomething(error.message)
          ? []
          : [`FlagError names no flag: ${error.message}`],
      };
    }
    if (error instanceof ConfigFileError || error instanceof ConfigValidationError) {
      const problems = error.problems.filter((p) => !namesSomething(p)).map((p) =>
        `${error.name} problem names no field: ${p.slice(0, 200)}`
      );
      if (
        error instanceof ConfigFileError && !error.message.includes(configPath.split("/").pop()!)
      ) {
        problems.push(`ConfigFileError does not name the file: ${error.message.slice(0, 200)}`);
      }
      if (error.problems.length === 0) problems.push(`${error.name} without problems`);
      return { kind: "refused", error, exitCode: 1, problems };
    }
    return { kind: "crash", error };
  }
}

interface Case {
  argv: string[];
  /** The config file's text, or undefined for flags alone. */
  text: string | undefined;
}

function caseArb(configPath: string): fc.Arbitrary<Case> {
  const base = kubeletConfigBase(encodeKubeletConfiguration(defaultKubeletConfiguration()));
  const names = FLAGS.map((f) => f.name).filter((n) => n !== "config");
  return fc.oneof(
    {
      weight: 3,
      arbitrary: kubeletConfigTextArb(base).map((m) => ({
        argv: [`--config=${configPath}`],
        text: m.text,
      })),
    },
    {
      weight: 2,
      arbitrary: argvArb(names).map((argv) => ({ argv, text: undefined })),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(kubeletConfigTextArb(base), argvArb(names)).map(([m, argv]) => ({
        argv: [...argv, `--config=${configPath}`],
        text: m.text,
      })),
    },
  );
}

function describeCase(c: Case): string {
  return `argv ${preview(c.argv)}${c.text === undefined ? "" : `, config ${preview(c.text)}`}`;
}

Deno.test({
  name:
    "fuzz: KubeletConfiguration files and flags through parseFlags, and refused ones through the binary",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const seed = suiteSeed();
    const numRuns = suiteCount({ slice: 200, full: 5_000 });
    const viaBinary = suiteCount({ slice: 2, full: 15 });
    const dir = await Deno.makeTempDir({ prefix: "denolet-fuzz-config-" });
    const configPath = join(dir, "config.yaml");
    const findings = new Map<string, string>();
    const counts = {
      cases: 0,
      accepted: 0,
      "refused (flag)": 0,
      "refused (config)": 0,
      crashes: 0,
    };
    const refused: { c: Case; outcome: Extract<Outcome, { kind: "refused" }> }[] = [];
    let maxMs = 0;
    try {
      fc.check(
        fc.property(caseArb(configPath), (c) => {
          counts.cases++;
          const t0 = performance.now();
          const outcome = parse(c.argv, configPath, c.text);
          const ms = performance.now() - t0;
          maxMs = Math.max(maxMs, ms);
          if (ms > CASE_BOUND_MS) findings.set(`took ${Math.round(ms)} ms`, describeCase(c));
          if (outcome.kind === "crash") {
            counts.crashes++;
            const err = outcome.error as Error;
            const key = `threw ${err?.name}: ${String(err?.message).slice(0, 160)} ${
              err?.stack?.split("\n")[1]?.trim()
            }`;
            if (!findings.has(key)) findings.set(key, describeCase(c));
            return true;
          }
          for (const p of outcome.problems) {
            // One finding per kind of message, whatever value it quotes.
            const key = p.replace(/"[^"]*"/g, '"…"');
            if (!findings.has(key)) findings.set(key, `${p.slice(0, 300)}; ${describeCase(c)}`);
          }
          if (outcome.kind === "accepted") counts.accepted++;
          else {
            counts[outcome.exitCode === 2 ? "refused (flag)" : "refused (config)"]++;
            if (refused.length < 200) refused.push({ c, outcome });
          }
          return true;
        }),
        { seed, numRuns },
      );

      // A few of the refused through the real binary: the same verdict, exit code and message.
      const picks = fc.sample(fc.constantFrom(...refused), { seed, numRuns: viaBinary });
      let binaryRuns = 0;
      for (const { c, outcome } of picks) {
        if (c.text !== undefined) await Deno.writeTextFile(configPath, c.text);
        else await Deno.remove(configPath).catch(() => {});
        const child = new Deno.Command(Deno.execPath(), {
          args: ["run", ...runTaskOptions(), "--quiet", `${ROOT}main.ts`, ...c.argv],
          cwd: ROOT,
          stdout: "piped",
          stderr: "piped",
          stdin: "null",
        }).spawn();
        const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
        const out = await child.output();
        clearTimeout(timer);
        binaryRuns++;
        const stderr = new TextDecoder().decode(out.stderr);
        // The in-process message, up to where the binary's own text may differ (file reads).
        const want = `denolet: ${outcome.error.message}`.slice(0, 60);
        if (out.code !== outcome.exitCode || !stderr.includes(want)) {
          findings.set(
            `binary exited ${out.code} (want ${outcome.exitCode}) with ${
              preview(stderr.slice(0, 300))
            }, want ${preview(want)}`,
            describeCase(c),
          );
        }
      }

      const list = [...findings].map(([p, ex]) => `${p} — e.g. ${ex}`);
      await recordSuite({
        suite: "fuzz",
        name: "KubeletConfiguration files and flags",
        seed,
        figures: {
          ...counts,
          "through the binary": binaryRuns,
          "max ms per case": Math.round(maxMs),
        },
        findings: list,
      });
      assert.equal(counts.cases, numRuns);
      assert.deepEqual(list, [], `seed ${seed}: ${list.length} distinct problems`);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
