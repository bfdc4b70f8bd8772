/**
 * `deno run -A tools/conformance/compare.ts UPSTREAM/summary.json DENOLET/summary.json
 * [CAUSES.json]`: the side-by-side table of docs/conformance.md from one run of each
 * kubelet: the totals, then one row per test (upstream's result, denolet's, and for a test
 * not passed by both the cause from CAUSES.json (tools/conformance/causes.json: test-name
 * substring → one line), else the failure's first line).
 *
 * @module
 */

import type { TestResult } from "./junit.ts";

/** What mod.ts writes as summary.json. */
export interface Summary {
  kubelet: string;
  commit: string;
  started: string;
  seconds: number;
  results: TestResult[];
}

/** The totals line's numbers: each over the tests both runs reached. */
export interface Totals {
  selected: number;
  upstream: number;
  denolet: number;
  both: number;
  onlyUpstream: number;
  onlyDenolet: number;
}

/**
 * Counts the passes of two runs over the union of their tests.
 *
 * @param upstream the upstream kubelet's results
 * @param denolet denolet's results
 */
export function totals(upstream: readonly TestResult[], denolet: readonly TestResult[]): Totals {
  const up = new Map(upstream.map((r) => [r.name, r.status]));
  const dl = new Map(denolet.map((r) => [r.name, r.status]));
  const names = new Set([...up.keys(), ...dl.keys()]);
  const t = {
    selected: names.size,
    upstream: 0,
    denolet: 0,
    both: 0,
    onlyUpstream: 0,
    onlyDenolet: 0,
  };
  for (const name of names) {
    const u = up.get(name) === "passed";
    const d = dl.get(name) === "passed";
    if (u) t.upstream++;
    if (d) t.denolet++;
    if (u && d) t.both++;
    if (u && !d) t.onlyUpstream++;
    if (d && !u) t.onlyDenolet++;
  }
  return t;
}

function cell(r: TestResult | undefined): string {
  return r === undefined ? "not reached" : r.status;
}

function escape(text: string): string {
  return text.replaceAll("|", "\\|").replaceAll("\n", " ");
}

/** Test-name substring → the cause of a failure in one line (missing feature, bug, harness). */
export type Causes = Readonly<Record<string, string>>;

/**
 * The markdown: a totals paragraph and the table, rows sorted by name.
 *
 * @param up the upstream kubelet's summary
 * @param dl denolet's summary
 * @param causes known causes, matched by substring of the test's name
 */
export function compareMarkdown(up: Summary, dl: Summary, causes: Causes = {}): string {
  const t = totals(up.results, dl.results);
  const byName = (s: Summary) => new Map(s.results.map((r) => [r.name, r]));
  const u = byName(up);
  const d = byName(dl);
  const names = [...new Set([...u.keys(), ...d.keys()])].sort();
  const lines = [
    `${t.selected} tests; upstream passed ${t.upstream}, denolet passed ${t.denolet}; ` +
    `both ${t.both}, only upstream ${t.onlyUpstream}, only denolet ${t.onlyDenolet}.`,
    "",
    `Upstream kubelet: run of ${up.started} at ${up.commit}, ${Math.round(up.seconds / 60)} min. ` +
    `denolet: run of ${dl.started} at ${dl.commit}, ${Math.round(dl.seconds / 60)} min.`,
    "",
    "| test | upstream | denolet | cause, when not passed by both (else the failure's first line) |",
    "| --- | --- | --- | --- |",
  ];
  for (const name of names) {
    const dr = d.get(name);
    const ur = u.get(name);
    const known = Object.entries(causes).find(([part]) => name.includes(part))?.[1];
    const failed = (r: TestResult | undefined) => r !== undefined && r.status !== "passed";
    const why = !failed(dr) && !failed(ur)
      ? ""
      : known ?? ((failed(dr) ? dr?.message : ur?.message) ?? "").slice(0, 200);
    lines.push(
      `| ${escape(name)} | ${cell(u.get(name))} | ${cell(dr)} | ${escape(why)} |`,
    );
  }
  return lines.join("\n") + "\n";
}

if (import.meta.main) {
  const [upPath, dlPath, causesPath] = Deno.args;
  if (upPath === undefined || dlPath === undefined) {
    console.error("usage: compare.ts UPSTREAM/summary.json DENOLET/summary.json [CAUSES.json]");
    Deno.exit(2);
  }
  const read = async <T>(p: string) => JSON.parse(await Deno.readTextFile(p)) as T;
  const causes = causesPath === undefined ? {} : await read<Causes>(causesPath);
  console.log(compareMarkdown(await read<Summary>(upPath), await read<Summary>(dlPath), causes));
}
