/**
 * `deno task faults|fuzz|scale`: a full run of one long suite (tests/faults,
 * tests/fuzz, tests/scale). Runs `deno test -A tests/<suite>` with
 * `DENOLET_SUITE=full` (tests/kit/suite.ts), collects what each test recorded, and
 * writes a Markdown report next to the JSON lines, under `.cache/reports/` (or
 * `DENOLET_REPORT_DIR`). The default test run (`deno task test`) takes each suite's
 * short fixed-seed slice instead.
 *
 * ```
 * sudo deno task faults                  # a fresh seed, printed
 * sudo deno task fuzz --seed 42          # replay
 * sudo deno task scale -- --filter=250   # arguments after -- go to deno test
 * ```
 *
 * @module
 */

import type { SuiteRecord } from "../tests/kit/suite.ts";
import { formatTotal, parseSummary, type RunSummary } from "./test.ts";

/** The long suites, each a directory under tests/. */
export const SUITES = ["faults", "fuzz", "scale"] as const;

/** One recorded line as read back. */
type Recorded = SuiteRecord & { mode: string; at: string };

/**
 * The report of one run, in Markdown: a row per record with its figures and findings.
 * @param suite the suite's name
 * @param seed the run's seed
 * @param records what the tests recorded, in order
 * @param outcome the deno test exit code and the summary line it printed
 * @returns the report's text
 */
export function formatReport(
  suite: string,
  seed: number,
  records: readonly Recorded[],
  outcome: { code: number; summary: string },
): string {
  const lines = [
    `# ${suite}: full run, seed ${seed}`,
    "",
    `deno test exited ${outcome.code}: ${outcome.summary || "(no summary line)"}`,
    "",
    "| test | figures | findings |",
    "|---|---|---|",
  ];
  for (const r of records) {
    const figures = Object.entries(r.figures).map(([k, v]) => `${k}: ${v}`).join(", ");
    const findings = r.findings?.length ? r.findings.join("; ") : "none";
    // One table row each: a finding may quote a multi-line body.
    const cell = (text: string) => text.replaceAll("|", "\\|").replace(/\s*\n\s*/g, " ⏎ ");
    lines.push(`| ${cell(r.name)} | ${cell(figures)} | ${cell(findings)} |`);
  }
  const total = records.reduce((n, r) => n + (r.findings?.length ?? 0), 0);
  lines.push("", `${records.length} records, ${total} findings.`, "");
  const runtime = records.flatMap((r) => (r.runtimeFindings ?? []).map((f) => `${r.name}: ${f}`));
  if (runtime.length > 0) {
    lines.push("## Findings about the runtime (not violations)", "");
    lines.push(...runtime.map((f) => `- ${f}`), "");
  }
  return lines.join("\n");
}

/**
 * Runs one suite in full.
 * @param args `<suite> [--seed N] [-- deno test args]`
 * @returns the exit code: deno test's, or 2 for a bad command line
 */
export async function main(args: readonly string[]): Promise<number> {
  const dash = args.indexOf("--");
  const own = dash < 0 ? [...args] : args.slice(0, dash);
  const extra = dash < 0 ? [] : args.slice(dash + 1);
  const suite = own.shift();
  if (!suite || !(SUITES as readonly string[]).includes(suite)) {
    console.error(`usage: deno run -A tools/suite.ts <${SUITES.join("|")}> [--seed N] [-- ...]`);
    return 2;
  }
  let seed = crypto.getRandomValues(new Uint32Array(1))[0]!;
  const at = own.indexOf("--seed");
  if (at >= 0) {
    seed = Number(own[at + 1]);
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
      console.error(`--seed must be an unsigned 32-bit integer, not "${own[at + 1]}"`);
      return 2;
    }
  }
  const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
  const dir = Deno.env.get("DENOLET_REPORT_DIR") ?? `${root}/.cache/reports`;
  await Deno.mkdir(dir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const jsonl = `${dir}/${suite}-${stamp}.jsonl`;
  await Deno.writeTextFile(jsonl, "");
  console.log(`${suite}: full run, seed ${seed} (replay: deno task ${suite} --seed ${seed})`);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["test", "-A", ...extra, `tests/${suite}`],
    cwd: root,
    env: { DENOLET_SUITE: "full", DENOLET_SEED: String(seed), DENOLET_SUITE_REPORT: jsonl },
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  let summary: RunSummary | undefined;
  const decoder = new TextDecoder();
  let pending = "";
  for await (const chunk of child.stdout) {
    await Deno.stdout.write(chunk);
    pending += decoder.decode(chunk, { stream: true });
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) summary = parseSummary(line) ?? summary;
  }
  const { code } = await child.status;
  const records = (await Deno.readTextFile(jsonl)).split("\n").filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Recorded);
  const clean = summary ? formatTotal(summary) : "";
  const report = `${dir}/${suite}-${stamp}.md`;
  await Deno.writeTextFile(report, formatReport(suite, seed, records, { code, summary: clean }));
  console.log(`${suite}: report ${report}`);
  return code;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
