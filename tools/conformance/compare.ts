/**
 * `deno run -A tools/conformance/compare.ts UPSTREAM/summary.json DENOLET/summary.json`:
 * the side-by-side table of docs/conformance.md from one run of each kubelet: the
 * totals, then one row per test (upstream's result, denolet's, denolet's failure line).
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

/**
 * The markdown: a totals paragraph and the table, rows sorted by name.
 *
 * @param up the upstream kubelet's summary
 * @param dl denolet's summary
 */
export function compareMarkdown(up: Summary, dl: Summary): string {
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
    "| test | upstream | denolet | denolet's failure (first line) |",
    "| --- | --- | --- | --- |",
  ];
  for (const name of names) {
    const dr = d.get(name);
    const why = dr !== undefined && dr.status !== "passed" ? dr.message ?? "" : "";
    lines.push(
      `| ${escape(name)} | ${cell(u.get(name))} | ${cell(dr)} | ${escape(why.slice(0, 200))} |`,
    );
  }
  return lines.join("\n") + "\n";
}

if (import.meta.main) {
  const [upPath, dlPath] = Deno.args;
  if (upPath === undefined || dlPath === undefined) {
    console.error("usage: compare.ts UPSTREAM/summary.json DENOLET/summary.json");
    Deno.exit(2);
  }
  const read = async (p: string) => JSON.parse(await Deno.readTextFile(p)) as Summary;
  console.log(compareMarkdown(await read(upPath), await read(dlPath)));
}
