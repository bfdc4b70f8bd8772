/**
 * The shape the agent-kill and containerd-restart fault tests share: a node with a
 * local registry, a namespace of steady pods (the baseline that must never restart)
 * and one the churn ({@link startChurn}) works in; then rounds of
 * "churn, wait for a seeded moment, inject the fault, recover, stop the churn, check
 * every invariant" ({@link checkInvariants}), each round's moment aimed at one of:
 *
 * - `any`: a random time into the churn;
 * - `volumes`: right after a pod with emptyDir/configMap/secret volumes is created
 *   (the agent is setting them up);
 * - `pull`: right after a pod whose image the node has not pulled is created (each
 *   such image is unique: a busybox layer plus 4 MiB of random data);
 * - `termination`: within the grace period of a deleted pod.
 *
 * @module
 */

import { requireRoot } from "../harness/mod.ts";
import { buildTestImages, PATH_ENV, writeRootfs } from "../harness/images.ts";
import { type Layer, packLayer, writeOciArchive } from "../harness/oci_archive.ts";
import { recordSuite, seededRandom } from "../kit/suite.ts";
import { delay } from "../kit/wait.ts";
import { which } from "../harness/_exec.ts";
import { startRegistry } from "../../tools/conformance/registry.ts";
import { pushImages } from "../../tools/conformance/images.ts";
import { ANSI } from "../../tools/test.ts";
import { busyboxPod, startNode, type TestNode } from "../e2e/_node.ts";
import { type ChurnOp, startChurn } from "./_churn.ts";
import { checkInvariants, type InvariantTally, snapshotBaseline } from "./_invariants.ts";

/** Where in the churn a round's fault lands. */
export type Moment = "any" | "volumes" | "pull" | "termination";

const MOMENTS: readonly Moment[] = ["any", "volumes", "pull", "termination"];

/** Options of {@link runFaultRounds}. */
export interface FaultRoundsOptions {
  /** The report row's name. */
  name: string;
  /** Names the node's runtime and scratch dir. */
  nodeName: string;
  seed: number;
  rounds: number;
  /** Injects the fault and recovers from it (e.g. SIGKILL the agent and start it again). */
  inject(node: TestNode): Promise<void>;
  /** Stop after this many rounds with violations (default 1): the rest mostly repeat them. */
  maxFailedRounds?: number;
}

/** What {@link runFaultRounds} found. */
export interface FaultRoundsResult {
  violations: string[];
  figures: Record<string, number | string>;
}

/** Builds an image the node has never pulled: busybox plus a layer of random bytes. */
async function uniqueImages(
  registryHost: string,
  count: number,
): Promise<string[]> {
  if (count === 0) return [];
  await buildTestImages(); // fails clearly when busybox is missing or not static
  const busybox = which("busybox")!;
  const work = await Deno.makeTempDir({ prefix: "denolet-faults-images-" });
  try {
    await Deno.mkdir(`${work}/rootfs`);
    await writeRootfs(`${work}/rootfs`, busybox);
    const base: Layer = await packLayer(`${work}/rootfs`, work);
    const refs: string[] = [];
    for (let i = 0; i < count; i++) {
      const layerDir = `${work}/filler-${i}`;
      await Deno.mkdir(layerDir);
      const data = new Uint8Array(4 << 20);
      for (let at = 0; at < data.length; at += 65_536) {
        crypto.getRandomValues(data.subarray(at, at + 65_536));
      }
      await Deno.writeFile(`${layerDir}/filler`, data);
      const filler = await packLayer(layerDir, work);
      const name = `denolet/pull-${i}:${crypto.randomUUID().slice(0, 8)}`;
      const archive = `${work}/pull-${i}.oci.tar`;
      await writeOciArchive({
        ref: `${registryHost}/${name}`,
        layers: [base, filler],
        process: { Cmd: ["sh"], Env: [PATH_ENV], WorkingDir: "/" },
        path: archive,
        workDir: `${work}/layout-${i}`,
      });
      await pushImages(registryHost, [{ name, archive }]);
      await Deno.remove(archive);
      await Deno.remove(layerDir, { recursive: true });
      refs.push(`${registryHost}/${name}`);
    }
    return refs;
  } finally {
    await Deno.remove(work, { recursive: true });
  }
}

/**
 * Runs the rounds on a fresh node and records the suite's figures.
 * @param opts see {@link FaultRoundsOptions}
 * @returns every violation (prefixed with the seed) and the figures recorded
 */
export async function runFaultRounds(opts: FaultRoundsOptions): Promise<FaultRoundsResult> {
  requireRoot();
  const started = Date.now();
  const { seed } = opts;
  const random = seededRandom(seed);
  // The moments and the churn draw from generators of their own, so the sequence of
  // moments does not depend on how many operations a churn got to.
  // Every four rounds aim at each moment once, in a seeded order.
  const moments: Moment[] = [];
  while (moments.length < opts.rounds) {
    const block = [...MOMENTS];
    for (let i = block.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [block[i], block[j]] = [block[j]!, block[i]!];
    }
    moments.push(...block.slice(0, opts.rounds - moments.length));
  }
  const registry = await startRegistry();
  let node: TestNode | undefined;
  let stoppedAt: string | undefined;
  const violations: string[] = [];
  /** Removals the runtime refused to the agent and to the checker: not violations. */
  const refusals: string[] = [];
  const figures = {
    rounds: 0,
    faults: 0,
    created: 0,
    updated: 0,
    deleted: 0,
    kubectlFailed: 0,
    invariantChecks: 0,
    violations: 0,
    ...Object.fromEntries(MOMENTS.map((m) => [`moment_${m}`, 0])),
    maxRecoverMs: 0,
    durationMs: 0,
  } as Record<string, number>;
  try {
    const pulls = await uniqueImages(registry.host, moments.filter((m) => m === "pull").length);
    node = await startNode({
      name: opts.nodeName,
      plainHttpRegistries: { [registry.host]: registry.url },
    });
    const n = node;
    // A replay may ask for a more verbose agent log (it takes effect from the first restart).
    const verbosity = Deno.env.get("DENOLET_FAULTS_AGENT_V");
    if (verbosity) n.agentArgs.splice(n.agentArgs.indexOf("--v=2"), 1, `--v=${verbosity}`);
    const steady = await n.namespace();
    const churned = await n.namespace();
    await n.runPod(busyboxPod(n.runtime, "steady", steady));
    await n.runPod(busyboxPod(n.runtime, "steady-volume", steady, {
      container: { volumeMounts: [{ name: "scratch", mountPath: "/scratch" }] },
      spec: { volumes: [{ name: "scratch", emptyDir: {} }] },
    }));
    const baseline = await snapshotBaseline(n, [steady]);
    if (baseline.pods.size !== 2) throw new Error(`seed ${seed}: the steady pods are not healthy`);
    const deleted = new Map<string, number>();
    const tally: InvariantTally = {
      passes: 0,
      pods: 0,
      sandboxes: 0,
      containers: 0,
      mounts: 0,
      maxFds: 0,
    };
    let failedRounds = 0;
    let earlierLog = "";

    // A time-boxed run (DENOLET_FAULTS_UNTIL, an ISO time) starts no round after it.
    const until = Date.parse(Deno.env.get("DENOLET_FAULTS_UNTIL") ?? "");
    for (const [round, wanted] of moments.entries()) {
      if (Date.now() > until) {
        stoppedAt = `${Deno.env.get("DENOLET_FAULTS_UNTIL")} (DENOLET_FAULTS_UNTIL)`;
        break;
      }
      const roundRandom = seededRandom((seed + round * 0x9e3779b9) >>> 0);
      let moment: Moment = "any";
      let fire: ((delayMs: number) => void) | undefined;
      const aimed = new Promise<number>((resolve) => (fire = resolve));
      const onOp = (op: ChurnOp) => {
        const hit = (wanted === "volumes" && op.kind === "create" && op.flavour === "volumes") ||
          (wanted === "pull" && op.kind === "create" && op.flavour === "pull") ||
          (wanted === "termination" && op.kind === "delete");
        if (!hit || fire === undefined) return;
        moment = wanted;
        const windowMs = wanted === "termination"
          ? op.grace * 1000
          : wanted === "pull"
          ? 1500
          : 800;
        fire(Math.floor(roundRandom() * windowMs));
        fire = undefined;
      };
      const churn = startChurn(n, {
        namespace: churned,
        random: roundRandom,
        pullImages: wanted === "pull" ? [pulls.shift()!] : [],
        onOp,
      });
      let result;
      try {
        // The moment itself: a random time after the aimed-at operation, or into the churn.
        const firstMs = Math.floor(roundRandom() * 3000);
        const waitMs = wanted === "any"
          ? firstMs
          : await Promise.race([aimed, delay(10_000).then(() => -1)]);
        await delay(Math.max(0, waitMs));
        earlierLog = n.log();
        const recovering = Date.now();
        await opts.inject(n);
        figures.maxRecoverMs = Math.max(figures.maxRecoverMs!, Date.now() - recovering);
        figures.faults!++;
        figures[`moment_${moment}`]!++;
        // The churn goes on a little while the node recovers, then stops for the check.
        await delay(Math.floor(roundRandom() * 1000));
      } finally {
        result = await churn.stop();
      }
      figures.rounds!++;
      figures.created! += result.created;
      figures.updated! += result.updated;
      figures.deleted! += result.deleted;
      figures.kubectlFailed! += result.failed;
      for (const [k, v] of result.deletedAt) deleted.set(k, v);
      const found = await checkInvariants(n, {
        namespaces: [steady, churned],
        baseline,
        deleted,
        seed,
        tally,
        refusals,
      });
      // An agent that died (not by the test's hand) is the finding; what it left undone follows.
      const gone = n.agent.exited();
      if (gone !== undefined) {
        const tail = n.log().replace(ANSI, "").trimEnd().split("\n").slice(-3);
        found.unshift(`the agent ${gone}: ${tail.join(" | ")}`);
      }
      figures.observations = tally.passes;
      figures.podsCompared = tally.pods;
      figures.sandboxesCompared = tally.sandboxes;
      figures.containersCompared = tally.containers;
      figures.mountsSeen = tally.mounts;
      figures.agentMaxFds = tally.maxFds;
      figures.invariantChecks!++;
      console.log(
        `${opts.name}: round ${
          round + 1
        }/${moments.length} (${moment}): ${found.length} violations`,
      );
      if (found.length > 0) {
        // The agent's log before and after the fault, and the pods, for the failure's reader.
        const dump = `${await Deno.makeTempDir({ prefix: `denolet-faults-${opts.nodeName}-` })}`;
        await Deno.writeTextFile(`${dump}/agent-before.log`, earlierLog);
        await Deno.writeTextFile(`${dump}/agent.log`, n.log());
        const pods = await n.cluster.kubectl(["get", "pods", "-A", "-o", "yaml"]);
        await Deno.writeTextFile(`${dump}/pods.yaml`, pods.stdout);
        violations.push(...found.map((v) => `round ${round} (${moment}): ${v} (logs in ${dump})`));
        if (++failedRounds >= (opts.maxFailedRounds ?? 1)) break;
      }
    }
  } finally {
    figures.violations = violations.length;
    figures.durationMs = Date.now() - started;
    await node?.stop();
    await registry.stop();
    await recordSuite({
      suite: "faults",
      name: opts.name,
      seed,
      figures: {
        ...figures,
        runtimeRefusals: refusals.length,
        ...(stoppedAt ? { stoppedAt } : {}),
      },
      findings: violations,
      runtimeFindings: refusals,
    });
  }
  return { violations, figures };
}
