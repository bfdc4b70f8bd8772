/**
 * The project's test runner (`deno task test`): runs `deno test -A` over tests/unit,
 * then tests/integration, then tests/e2e (when it has tests), each as its own
 * invocation, streams their output, and ends with one line, `N passed, M failed`
 * (plus `, K skipped` when tests were ignored), with the failed tests named just above
 * it. Exits non-zero when anything failed or when no test ran at all.
 *
 * ```
 * deno task test                      # every tier
 * deno task test unit                 # one tier (unit | integration | e2e)
 * deno task test tests/unit/x_test.ts # files or directories, one invocation
 * deno task test unit -- --filter=pleg  # arguments after -- go to deno test
 * ```
 *
 * Integration and e2e tests need root and real daemons; they fail when those are
 * missing, they are never skipped. After the three tiers come the slices of the long
 * suites (tests/faults, tests/fuzz, tests/scale), when they hold tests. Before e2e tests
 * or a suite's slice run, and before the integration test
 * that runs the upstream kubelet, `tools/e2e/build.sh` builds the control plane (etcd,
 * kube-apiserver, kube-controller-manager, kubectl, metrics-server) and the upstream
 * kubelet when its cached binaries are missing; a failed build fails the run. Before the
 * e2e tier's Conformance smoke test (tests/e2e/conformance_smoke_test.ts),
 * `tools/conformance/build.sh` builds e2e.test, ginkgo, kube-scheduler and the test
 * images' programs; a failed build counts one failure, and the smoke test then fails on
 * the missing binary while the other e2e tests still run.
 *
 * @module
 */

/**
 * The tiers, in the order they run: then the short, fixed-seed slices of the long
 * suites (tests/kit/suite.ts; `deno task faults|fuzz|scale` runs them in full).
 */
export const TIERS = ["unit", "integration", "e2e", "faults", "fuzz", "scale"] as const;

/** The tiers whose tests may start a control plane (tools/e2e/build.sh's binaries). */
const CLUSTER_TIERS = ["e2e", "faults", "fuzz", "scale"];

/** Counts from one `deno test` summary line. */
export interface RunSummary {
  passed: number;
  failed: number;
  ignored: number;
}

/** One planned `deno test` invocation. */
export interface Run {
  label: string;
  paths: string[];
}

// deno test's summary: "ok | 3 passed (2 steps) | 0 failed | 1 ignored (12ms)", or FAILED.
const SUMMARY =
  /^(ok|FAILED) \| (\d+) passed(?: \(\d+ steps?\))? \| (\d+) failed(?: \(\d+ steps?\))?(?: \| (\d+) ignored(?: \(\d+ steps?\))?)?/;

/** Terminal escape sequences (colours), as `deno test` prints them; for `replace`. */
// deno-lint-ignore no-control-regex
export const ANSI = /\x1b\[[0-9;]*[A-Za-z]/g;

/**
 * Reads the counts from a `deno test` summary line (colours allowed).
 *
 * @param line one line of output
 * @returns the counts, or undefined when the line is not a summary
 */
export function parseSummary(line: string): RunSummary | undefined {
  const match = line.replace(ANSI, "").trim().match(SUMMARY);
  if (match === null) return undefined;
  return {
    passed: Number(match[2]),
    failed: Number(match[3]),
    ignored: Number(match[4] ?? 0),
  };
}

/**
 * Reads one `deno test` invocation's output line by line: its summary, and the tests its
 * FAILURES section names (`name => ./file:line:col`, a step as `test ... step => …`),
 * which the runner repeats just above its last line so that the tail of a long log says
 * what failed.
 */
export class RunOutput {
  summary: RunSummary | undefined;
  readonly failures: string[] = [];
  #inFailures = false;

  /** Takes one line of output (colours allowed). */
  line(raw: string): void {
    const text = raw.replace(ANSI, "").trim();
    const summary = parseSummary(text);
    if (summary !== undefined) {
      this.summary = summary;
      this.#inFailures = false;
      return;
    }
    if (text === "FAILURES") {
      this.#inFailures = true;
      return;
    }
    if (this.#inFailures && text.includes(" => ")) this.failures.push(text);
  }
}

/**
 * The runner's last line.
 *
 * @param total the summed counts
 */
export function formatTotal(total: RunSummary): string {
  const base = `${total.passed} passed, ${total.failed} failed`;
  return total.ignored > 0 ? `${base}, ${total.ignored} skipped` : base;
}

/** Whether `dir` holds a test file (`*_test.ts` or `*.test.ts`, at any depth). */
function hasTests(dir: string): boolean {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(dir)];
  } catch {
    return false;
  }
  return entries.some((entry) =>
    entry.isDirectory
      ? hasTests(`${dir}/${entry.name}`)
      : /[._]test\.(ts|tsx|js|mjs)$/.test(entry.name)
  );
}

/**
 * Turns the command line into runs: no selection means every tier that has tests; a
 * tier name means that tier; anything else is a path handed to `deno test` as is.
 *
 * @param selection the arguments before `--`
 * @param root the project directory
 * @throws Error when a named path does not exist
 */
export function planRuns(selection: readonly string[], root: string): Run[] {
  const tierRun = (tier: string): Run => ({ label: tier, paths: [`tests/${tier}`] });
  if (selection.length === 0) {
    return TIERS.filter((tier) =>
      tier === "unit" || tier === "integration" || hasTests(`${root}/tests/${tier}`)
    ).map(tierRun);
  }
  // `deno task` runs in the project directory; INIT_CWD is where the user typed it.
  const base = Deno.env.get("INIT_CWD") ?? Deno.cwd();
  const runs: Run[] = [];
  const paths: string[] = [];
  for (const arg of selection) {
    if ((TIERS as readonly string[]).includes(arg)) {
      runs.push(tierRun(arg));
      continue;
    }
    const path = arg.startsWith("/") ? arg : `${base}/${arg}`;
    try {
      Deno.statSync(path);
    } catch (cause) {
      throw new Error(`test: no such tier, file or directory: ${arg}`, { cause });
    }
    paths.push(path);
  }
  if (paths.length > 0) runs.push({ label: paths.join(" "), paths });
  return runs;
}

/** The integration test that runs the upstream kubelet, which tools/e2e/build.sh builds. */
const UPSTREAM_KUBELET_TEST = "tests/integration/adopt_upstream_test.ts";

/** The e2e test that runs upstream's Conformance specs, on tools/conformance/build.sh's binaries. */
const CONFORMANCE_SMOKE_TEST = "tests/e2e/conformance_smoke_test.ts";

/** Whether `path` is `dir` or lies under it (both absolute, without a trailing slash). */
function within(path: string, dir: string): boolean {
  return path === dir || path.startsWith(`${dir}/`);
}

/** A build script a run needs before its tests start. */
export interface Build {
  /** Relative to the project directory. */
  script: string;
  /**
   * Whether no test of the run can start without it; otherwise a failed build counts one
   * failure and the run goes on (the tests that need its binaries fail, naming them).
   */
  blocking: boolean;
}

/**
 * The builds a run needs first, in order: tools/e2e/build.sh when it holds e2e tests (the
 * control plane) or the integration test that runs the upstream kubelet, and
 * tools/conformance/build.sh when it holds the Conformance smoke test.
 *
 * @param run a planned run
 * @param root the project directory
 */
export function buildsFor(run: Run, root: string): Build[] {
  const paths = run.paths.map((path) =>
    (path.startsWith("/") ? path : `${root}/${path}`).replace(/\/$/, "")
  );
  const holds = (file: string) => paths.some((path) => within(`${root}/${file}`, path));
  const clusterDirs = CLUSTER_TIERS.map((tier) => `${root}/tests/${tier}`);
  const builds: Build[] = [];
  if (
    paths.some((path) => clusterDirs.some((dir) => within(path, dir) || within(dir, path))) ||
    holds(UPSTREAM_KUBELET_TEST)
  ) {
    builds.push({ script: "tools/e2e/build.sh", blocking: true });
  }
  if (holds(CONFORMANCE_SMOKE_TEST)) {
    builds.push({ script: "tools/conformance/build.sh", blocking: false });
  }
  return builds;
}

const encoder = new TextEncoder();

async function print(text: string): Promise<void> {
  const bytes = encoder.encode(text);
  for (let written = 0; written < bytes.length;) {
    written += await Deno.stdout.write(bytes.subarray(written));
  }
}

/**
 * Runs `deno test -A` over one run's paths, streaming its output.
 *
 * @param failures where the failed tests' lines are added, prefixed with the run's label
 * @returns the parsed summary; a run that ended without one (type errors, a crash) or
 *   exited non-zero while reporting no failure counts one failure
 */
async function execute(
  run: Run,
  extraArgs: readonly string[],
  root: string,
  failures: string[],
): Promise<RunSummary> {
  await print(`\n=== ${run.label}: deno test -A ${[...extraArgs, ...run.paths].join(" ")}\n`);
  const found = run.paths.some((path) =>
    /\.(ts|tsx|js|mjs)$/.test(path) || hasTests(path.startsWith("/") ? path : `${root}/${path}`)
  );
  if (!found) {
    await print(`=== ${run.label}: no test files\n`);
    return { passed: 0, failed: 0, ignored: 0 };
  }
  let buildFailures = 0;
  for (const build of buildsFor(run, root)) {
    // A build returns at once when every binary is cached; a cold one takes minutes.
    await print(`=== ${run.label}: bash ${build.script}\n`);
    const { code } = await new Deno.Command("bash", {
      args: [`${root}/${build.script}`],
      cwd: root,
      stdin: "null",
      stdout: "inherit",
      stderr: "inherit",
    }).spawn().status;
    if (code === 0) continue;
    failures.push(`${run.label}: bash ${build.script} exited with ${code}`);
    if (build.blocking) {
      await print(`=== ${run.label}: ${build.script} exited with ${code}: tests not run\n`);
      return { passed: 0, failed: 1, ignored: 0 };
    }
    await print(
      `=== ${run.label}: ${build.script} exited with ${code}: counted as a failure; ` +
        "the tests that need its binaries will fail too\n",
    );
    buildFailures++;
  }
  const child = new Deno.Command(Deno.execPath(), {
    args: ["test", "-A", ...extraArgs, ...run.paths],
    cwd: root,
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const output = new RunOutput();
  let pending = "";
  const decoder = new TextDecoder();
  for await (const chunk of child.stdout) {
    for (let written = 0; written < chunk.length;) {
      written += await Deno.stdout.write(chunk.subarray(written));
    }
    pending += decoder.decode(chunk, { stream: true });
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) output.line(line);
  }
  output.line(pending);
  const summary = output.summary;
  failures.push(...output.failures.map((failure) => `${run.label}: ${failure}`));
  const { code } = await child.status;
  if (summary === undefined) {
    failures.push(`${run.label}: deno test exited with ${code} before reporting results`);
    await print(`=== ${run.label}: deno test exited with ${code} before reporting results\n`);
    return { passed: 0, failed: 1 + buildFailures, ignored: 0 };
  }
  if (code !== 0 && summary.failed === 0) {
    failures.push(`${run.label}: deno test exited with ${code} reporting no failure`);
    await print(`=== ${run.label}: deno test exited with ${code}\n`);
    return { ...summary, failed: 1 + buildFailures };
  }
  return { ...summary, failed: summary.failed + buildFailures };
}

/**
 * Runs the selected tests and exits with 0 only when some ran and none failed.
 *
 * @param args the command line: selections, then optionally `--` and deno test flags
 */
export async function main(args: readonly string[]): Promise<number> {
  const dash = args.indexOf("--");
  const selection = dash < 0 ? args : args.slice(0, dash);
  const extraArgs = dash < 0 ? [] : args.slice(dash + 1);
  const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
  let runs: Run[];
  try {
    runs = planRuns(selection, root);
  } catch (err) {
    await print(`${err instanceof Error ? err.message : err}\n0 passed, 1 failed\n`);
    return 1;
  }
  const total: RunSummary = { passed: 0, failed: 0, ignored: 0 };
  const failures: string[] = [];
  for (const run of runs) {
    const result = await execute(run, extraArgs, root, failures);
    total.passed += result.passed;
    total.failed += result.failed;
    total.ignored += result.ignored;
  }
  if (total.passed + total.failed === 0) await print("no test ran\n");
  if (failures.length > 0) {
    await print(`\nfailed:\n${failures.map((failure) => `  ${failure}\n`).join("")}`);
  }
  await print(`\n${formatTotal(total)}\n`);
  return total.failed > 0 || total.passed + total.failed === 0 ? 1 : 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
