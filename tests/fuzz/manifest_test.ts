/**
 * Static pod manifests of every bad shape: generated files (valid pods mutated field by
 * field, random bytes, YAML noise) through the decoder and validation the file source
 * runs (lib/config/static_pod.ts staticPodsFromManifest), then batches of them dropped
 * next to good static pods in a real agent's manifest directory on a real containerd.
 *
 * What must hold: a file is either turned into pods or refused with a ManifestError that
 * names the file and the field; nothing else is ever thrown; no case takes unbounded time;
 * the agent stays up and healthy, logs each refused file with its field, and its good pods
 * keep their containers.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import fc from "fast-check";
import type { Pod } from "../../lib/api/types.ts";
import { validatePod } from "../../lib/api/validation.ts";
import { ManifestError } from "../../lib/config/manifest.ts";
import { InvalidPodError, staticPodsFromManifest } from "../../lib/config/static_pod.ts";
import { startTestRuntime } from "../harness/mod.ts";
import { type AgentProcess, findPod, podManifest, startAgent } from "../integration/_agent.ts";
import { recordSuite, suiteCount, suiteSeed } from "../kit/suite.ts";
import { waitFor } from "../kit/mod.ts";
import {
  describeManifest,
  type ManifestText,
  manifestTextArb,
  validPodArb,
} from "./_arbitraries.ts";

/** A case slower than this counts as a hang (generous: the machine is shared and YAML of 100 kB is slow). */
const CASE_BOUND_MS = 5_000;
const NODE = "testnode";

/**
 * A field path at the start of an error, then upstream's error type:
 * `spec.containers[0].image: Required value`. A map key in the path is printed as it is
 * (`resources.limits[a: b]`), so the path may hold any character, ": " too.
 */
const FIELD_ERROR =
  /^(<root>|apiVersion|kind|metadata|spec)([.[].*?)?: (Required value|Invalid value|Duplicate value|Not found|Forbidden|Unsupported value|Too long)(: |$)/s;
/** Reasons of manifest.ts that name the field in words (`apiVersion is "v2", want "v1"`). */
const FIELD_REASON =
  /^(items\[\d+\]: )?(apiVersion is |kind is |metadata is missing|spec is missing|.+: nested deeper than \d+ levels$)/;
/** Reasons for text that is not a document at all. */
const SYNTAX_REASON = /^(invalid YAML: |not an object$)/;

/** What decoding one manifest gave. */
type Outcome =
  | { kind: "accepted"; pods: Pod[] }
  | { kind: "rejected"; error: ManifestError; fields: string[] }
  | { kind: "crash"; error: unknown };

/**
 * Runs the file source's decode and validation on one text, as the source does for a file.
 * @returns the pods, the rejection with the field paths it names, or what else was thrown
 */
function decode(text: string, file: string): Outcome {
  try {
    return {
      kind: "accepted",
      pods: staticPodsFromManifest(text, { nodeName: NODE, source: "file", origin: file, now: 0 }),
    };
  } catch (error) {
    if (!(error instanceof ManifestError)) return { kind: "crash", error };
    const fields = error.cause instanceof InvalidPodError
      ? error.cause.errors.map((e) => e.slice(0, e.indexOf(":")))
      : [];
    return { kind: "rejected", error, fields };
  }
}

/**
 * The problems with one outcome: a crash, a rejection that does not name the file or a
 * field, an accepted pod that is invalid or cannot be encoded.
 */
function problemsOf(outcome: Outcome, file: string): string[] {
  if (outcome.kind === "crash") {
    const err = outcome.error as Error;
    return [
      `threw ${err?.name}: ${String(err?.message).slice(0, 200)} ${
        err?.stack?.split("\n")[1]?.trim()
      }`,
    ];
  }
  if (outcome.kind === "accepted") {
    return outcome.pods.flatMap((pod) => {
      const errs = validatePod(pod);
      try {
        JSON.stringify(pod);
      } catch (err) {
        errs.push(`cannot be encoded: ${err}`);
      }
      return errs.map((e) => `accepted pod ${pod.metadata.name} is invalid: ${e}`);
    });
  }
  const { error } = outcome;
  const problems: string[] = [];
  if (error.file !== file || !error.message.includes(JSON.stringify(file))) {
    problems.push(`rejection does not name the file: ${error.message.slice(0, 200)}`);
  }
  const reason = error.reason.replace(/^document \d+: /, "");
  if (error.cause instanceof InvalidPodError) {
    for (const e of error.cause.errors) {
      if (!FIELD_ERROR.test(e)) {
        problems.push(`field error without a field path: ${e.slice(0, 200)}`);
      }
    }
    if (error.cause.errors.length === 0) problems.push("InvalidPodError without errors");
  } else if (!FIELD_REASON.test(reason) && !SYNTAX_REASON.test(reason)) {
    problems.push(`rejection names no field: ${reason.slice(0, 200)}`);
  }
  return problems;
}

/** Findings keyed by their first line, so one bug found 500 times is one finding. */
class Findings {
  readonly #seen = new Map<string, string>();
  add(problem: string, example: string): void {
    if (!this.#seen.has(problem)) this.#seen.set(problem, example);
  }
  get size(): number {
    return this.#seen.size;
  }
  list(): string[] {
    return [...this.#seen].map(([p, ex]) => `${p} — e.g. ${ex}`);
  }
}

Deno.test("fuzz: unmutated generated pods are accepted by the static pod decoder", () => {
  const seed = suiteSeed();
  fc.assert(
    fc.property(validPodArb(), fc.boolean(), (pod, yaml) => {
      const text = yaml ? `# yaml\n${JSON.stringify(pod)}` : JSON.stringify(pod);
      const outcome = decode(text, "/m/good.yaml");
      assert.equal(
        outcome.kind,
        "accepted",
        `seed ${seed}: ${outcome.kind === "rejected" ? outcome.error.message : ""}`,
      );
    }),
    { seed, numRuns: suiteCount({ slice: 50, full: 500 }) },
  );
});

Deno.test("fuzz: generated manifests through the file source's decoder and validation", async () => {
  const seed = suiteSeed();
  const numRuns = suiteCount({ slice: 200, full: 10_000 });
  const findings = new Findings();
  const counts = { cases: 0, accepted: 0, rejected: 0, syntax: 0, crashes: 0, slow: 0 };
  const forms = new Map<string, number>();
  let maxMs = 0;
  let totalMs = 0;
  const file = "/etc/kubernetes/manifests/fuzz.yaml";
  fc.check(
    fc.property(manifestTextArb(), (m) => {
      counts.cases++;
      forms.set(m.form, (forms.get(m.form) ?? 0) + 1);
      const t0 = performance.now();
      const outcome = decode(m.text, file);
      const ms = performance.now() - t0;
      totalMs += ms;
      maxMs = Math.max(maxMs, ms);
      if (ms > CASE_BOUND_MS) {
        counts.slow++;
        findings.add(`took ${Math.round(ms)} ms (bound ${CASE_BOUND_MS})`, describeManifest(m));
      }
      if (outcome.kind === "accepted") counts.accepted++;
      if (outcome.kind === "crash") counts.crashes++;
      if (outcome.kind === "rejected") {
        counts.rejected++;
        if (
          outcome.fields.length === 0 &&
          SYNTAX_REASON.test(outcome.error.reason.replace(/^document \d+: /, ""))
        ) {
          counts.syntax++;
        }
      }
      for (const p of problemsOf(outcome, file)) findings.add(p, describeManifest(m));
      return true;
    }),
    { seed, numRuns },
  );
  await recordSuite({
    suite: "fuzz",
    name: "static pod manifests, decoder + validation (in-process)",
    seed,
    figures: {
      cases: counts.cases,
      accepted: counts.accepted,
      rejected: counts.rejected,
      "rejected as not YAML/JSON": counts.syntax,
      crashes: counts.crashes,
      "over the time bound": counts.slow,
      "mean ms per case": Math.round((totalMs / Math.max(1, counts.cases)) * 100) / 100,
      "max ms per case": Math.round(maxMs),
      forms: [...forms].map(([f, n]) => `${f} ${n}`).join(", "),
    },
    findings: findings.list(),
  });
  assert.equal(counts.cases, numRuns);
  assert.deepEqual(findings.list(), [], `seed ${seed}: ${findings.size} distinct problems`);
});

// ---- the real agent -------------------------------------------------------------

/** The good pods' containers: name → container ID and restart count. */
type Baseline = Map<string, { id: string; restarts: number }>;

async function goodBaseline(agent: AgentProcess, names: string[]): Promise<Baseline> {
  const pods = await agent.pods();
  const out: Baseline = new Map();
  for (const name of names) {
    const s = findPod(pods, name)?.status?.containerStatuses?.[0];
    if (!s?.containerID || !s.state.running) throw new Error(`${name} is not running`);
    out.set(name, { id: s.containerID, restarts: s.restartCount });
  }
  return out;
}

/**
 * The agent's log as records: klog writes a multi-line value (a YAML error's code frame)
 * as an indented block, so one record spans the lines up to the next header.
 */
function logRecords(log: string): string[] {
  const records: string[] = [];
  for (const line of log.split("\n")) {
    if (/^[IWEF]\d{4} /.test(line) || records.length === 0) records.push(line);
    else records[records.length - 1] += `\n${line}`;
  }
  return records;
}

/** A bad file written to the agent's manifest dir and what the decoder makes of it. */
interface Dropped {
  file: string;
  manifest: ManifestText;
  outcome: Outcome;
}

Deno.test({
  name: "fuzz: batches of bad manifests next to good static pods in a real agent",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const seed = suiteSeed();
    const batches = suiteCount({ slice: 1, full: 12 });
    const perBatch = suiteCount({ slice: 8, full: 20 });
    const rt = await startTestRuntime({ name: "fuzz-manifests" });
    let agent: AgentProcess | undefined;
    const findings: string[] = [];
    const counts = {
      files: 0,
      rejected: 0,
      accepted: 0,
      "healthz checks": 0,
      "healthz not ok at first ask": 0,
    };
    try {
      const a = agent = await startAgent({ runtime: rt });
      const good = ["good-a", "good-b"];
      for (const name of good) {
        await Deno.writeTextFile(
          join(a.manifestDir, `${name}.json`),
          podManifest({ name, image: rt.images.busybox, command: ["sleep", "3600"], grace: 1 }),
        );
      }
      const baseline = await waitFor("the good static pods running", () => goodBaseline(a, good), {
        timeoutMs: 60_000,
        log: a.log,
      });
      // The same generator as the in-process test, a different stream of cases.
      const samples = fc.sample(manifestTextArb(rt.images.busybox), {
        seed: seed ^ 0x5eed,
        numRuns: batches * perBatch,
      });
      for (let b = 0; b < batches; b++) {
        const dropped: Dropped[] = [];
        for (const [i, manifest] of samples.slice(b * perBatch, (b + 1) * perBatch).entries()) {
          const file = join(a.manifestDir, `bad-${b}-${i}.yaml`);
          await Deno.writeTextFile(file, manifest.text);
          // What the agent will read: lone surrogates became U+FFFD on the way to disk.
          const text = await Deno.readTextFile(file);
          dropped.push({ file, manifest, outcome: decode(text, file) });
        }
        counts.files += dropped.length;
        const rejected = dropped.filter((d) => d.outcome.kind === "rejected");
        const accepted = dropped.filter((d) => d.outcome.kind === "accepted");
        counts.rejected += rejected.length;
        counts.accepted += accepted.length;
        for (const d of dropped.filter((d) => d.outcome.kind === "crash")) {
          findings.push(`seed ${seed}: decoder crashed on ${describeManifest(d.manifest)}`);
        }

        // Each refused file is logged with its name and its first field.
        for (const d of rejected) {
          const fields = d.outcome.kind === "rejected" ? d.outcome.fields : [];
          const field = fields.find((f) => /^[\x21-\x7e]+$/.test(f) && !/["\\]/.test(f));
          await waitFor(
            `the agent logging ${d.file}${field ? ` with ${field}` : ""}`,
            () =>
              logRecords(a.log()).some((line) =>
                line.includes("Could not process manifest file") && line.includes(d.file) &&
                (field === undefined || line.includes(field))
              ),
            { timeoutMs: 30_000, log: a.log },
          ).catch((err) => {
            findings.push(
              `seed ${seed}: ${(err as Error).message.split("\n")[0]} (${
                describeManifest(d.manifest)
              })`,
            );
          });
        }
        // Each accepted file's pods reach the agent (it runs them or fails them).
        for (const d of accepted) {
          const names = d.outcome.kind === "accepted"
            ? d.outcome.pods.map((p) => p.metadata.name)
            : [];
          await waitFor(`the agent listing ${names.join(", ")} from ${d.file}`, async () => {
            const pods = await a.pods();
            return names.every((n) => pods.some((p) => p.metadata.name === n));
          }, { timeoutMs: 30_000, log: a.log }).catch((err) => {
            findings.push(`seed ${seed}: ${(err as Error).message.split("\n")[0]}`);
          });
        }
        // Healthy means back to ok within a bound: on a loaded machine one slow CRI Status
        // call turns the runtime check red for a moment, which is not a stall.
        counts["healthz checks"]++;
        const [first] = await a.healthz();
        if (first !== 200) counts["healthz not ok at first ask"]++;
        await waitFor("/healthz ok", async () => {
          const [status, body] = await a.healthz();
          return { status, body: body.slice(0, 300) };
        }, { timeoutMs: 30_000, until: (h) => h.status === 200 && h.body.trim() === "ok" })
          .catch((err) => {
            findings.push(`seed ${seed}: batch ${b}: ${(err as Error).message.split("\n")[0]}`);
          });
        const now = await goodBaseline(a, good).catch((err) => err as Error);
        if (now instanceof Error) findings.push(`seed ${seed}: batch ${b}: ${now.message}`);
        else {
          for (const [name, before] of baseline) {
            const after = now.get(name)!;
            if (after.id !== before.id || after.restarts !== before.restarts) {
              findings.push(
                `seed ${seed}: batch ${b}: ${name} went from ${before.id}/${before.restarts} to ${after.id}/${after.restarts}`,
              );
            }
          }
        }
        // The batch goes: its pods are removed before the next comes.
        for (const d of dropped) await Deno.remove(d.file);
        await waitFor("the batch's pods removed", async () => {
          const pods = await a.pods();
          return pods.every((p) => good.some((g) => p.metadata.name === `${g}-${NODE}`));
        }, { timeoutMs: 60_000, log: a.log }).catch((err) => {
          findings.push(`seed ${seed}: batch ${b}: ${(err as Error).message.split("\n")[0]}`);
        });
        if (findings.length > 0) break;
      }
      await recordSuite({
        suite: "fuzz",
        name: "static pod manifests next to good pods (real agent)",
        seed,
        figures: { batches, ...counts },
        findings,
      });
      assert.deepEqual(findings, []);
    } finally {
      await agent?.stop();
      await rt.stop();
      await agent?.removeDirs();
    }
  },
});
