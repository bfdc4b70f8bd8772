/**
 * Reading the JUnit report that e2e.test writes (`junit_01.xml` in `--report-dir`,
 * from Ginkgo v2's reporter) into one result per test.
 *
 * @module
 */

/** One spec's outcome. */
export interface TestResult {
  /** The full Ginkgo text, e.g. `[sig-node] Pods should get a host IP [NodeConformance] [Conformance]`. */
  name: string;
  /** Ginkgo's state: passed, failed, skipped, pending, panicked, interrupted, timedout, aborted. */
  status: string;
  /** Seconds. */
  time: number;
  /**
   * The first line of the failure, for a failed spec; for a skipped one, why the test
   * skipped itself (a spec left out by the focus has none).
   */
  message?: string;
}

const ENTITIES: Record<string, string> = {
  "&lt;": "<",
  "&gt;": ">",
  "&quot;": '"',
  "&apos;": "'",
  "&amp;": "&",
};

function unescape(text: string): string {
  return text.replace(/&(?:lt|gt|quot|apos|amp);|&#(\d+);|&#x([0-9a-fA-F]+);/g, (m, dec, hex) => {
    if (dec !== undefined) return String.fromCodePoint(Number(dec));
    if (hex !== undefined) return String.fromCodePoint(parseInt(hex, 16));
    return ENTITIES[m] ?? m;
  });
}

function attr(tag: string, name: string): string | undefined {
  const m = tag.match(new RegExp(`\\s${name}="([^"]*)"`));
  return m?.[1] === undefined ? undefined : unescape(m[1]);
}

/**
 * The specs of a JUnit report as the e2e framework writes it (test/e2e/framework/
 * internal/junit: no message attribute, the failure's text in the element's body, each
 * name led by its Ginkgo node type: `[It] [sig-node] Pods ...`). Suite-level nodes
 * (`[SynchronizedBeforeSuite]`, `[ReportAfterSuite] ...`) count only when they failed.
 *
 * @param xml the report's text
 * @returns one entry per spec (names without `[It] `), in report order
 */
export function parseJUnit(xml: string): TestResult[] {
  const out: TestResult[] = [];
  for (const m of xml.matchAll(/<testcase\b([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const tag = m[1] ?? "";
    const body = m[2] ?? "";
    const full = attr(tag, "name") ?? "";
    const failure = body.match(/<(failure|error)\b([^>]*?)(?:\/>|>([\s\S]*?)<\/\1>)/);
    const status = attr(tag, "status") ??
      (failure !== null ? "failed" : /<skipped\b/.test(body) ? "skipped" : "passed");
    const isSpec = full.startsWith("[It] ");
    if (!isSpec && (status === "passed" || status === "skipped")) continue;
    const result: TestResult = {
      name: isSpec ? full.slice(5) : full,
      status,
      time: Number(attr(tag, "time") ?? 0),
    };
    const text = failure === null
      ? undefined
      : attr(failure[2] ?? "", "message") || unescape(failure[3] ?? "");
    const first = text?.split("\n").map((l) => l.trim()).find((l) => l !== "");
    if (first !== undefined) result.message = first;
    const skipped = body.match(/<skipped\b[^>]*?message="skipped - ([^"]*)"/)?.[1];
    if (skipped !== undefined) result.message = unescape(skipped).split("\n")[0]?.trim() ?? "";
    out.push(result);
  }
  return out;
}

/** Counts by status. */
export function tally(results: readonly TestResult[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of results) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
}
