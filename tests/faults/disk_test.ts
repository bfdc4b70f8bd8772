/**
 * Disk faults under a bare agent (tests/integration/_agent.ts) on a real containerd:
 * the agent's `--root-dir` and its `--pod-logs-dir` each on a small tmpfs this test
 * mounts, filled to the last byte and remounted read-only while static pods come and
 * go. The agent must not exit, must log each failure naming the path and the reason,
 * must keep running pods running (same container, no restart), must not leave a new
 * pod hanging without saying why, and must converge once space and writes are back.
 *
 * The invariant checker of tests/faults/_invariants.ts takes a TestNode (an apiserver);
 * this tier has none, so the checks here are the disk faults' own: the agent's PID,
 * the steady pods' container IDs and restart counts, the runtime's containers against
 * the manifests, and the pod dirs of deleted pods.
 *
 * Each round: fill the logs fs and the root fs (in a seeded order, a pod added after
 * each), remount the root fs read-only (a pod added, one removed), then give
 * space and writes back. The logs fs only fills: containerd holds its containers' log files open for
 * writing, so the kernel refuses to remount it read-only (EBUSY), as it would a node's.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import type { Pod } from "../../lib/api/types.ts";
import { createRuntimeService, type RuntimeService } from "../../lib/cri/mod.ts";
import { exec } from "../harness/_exec.ts";
import { startTestRuntime, type TestRuntime } from "../harness/mod.ts";
import { unmountUnder } from "../harness/mounts.ts";
import { type AgentProcess, findPod, podManifest, startAgent } from "../integration/_agent.ts";
import { pathExists, waitFor } from "../kit/mod.ts";
import { recordSuite, seededRandom, suiteCount, suiteSeed } from "../kit/suite.ts";

const MiB = 2 ** 20;
const seed = suiteSeed();

/** A small tmpfs at `dir` (made here), so the test decides when it is full. */
async function mountSmallFs(dir: string, bytes: number): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  await exec("mount", ["-t", "tmpfs", "-o", `size=${bytes},mode=0755`, "denolet-fdisk", dir]);
}

/** Remounts the test's tmpfs at `dir` read-only or read-write. */
async function remount(dir: string, mode: "ro" | "rw"): Promise<void> {
  await exec("mount", ["-o", `remount,${mode}`, dir]);
}

/**
 * Writes zeros to `<dir>/.fill` until the filesystem refuses (ENOSPC).
 * @returns the bytes written
 */
async function fill(dir: string): Promise<number> {
  const file = await Deno.open(join(dir, ".fill"), { write: true, create: true, append: true });
  const chunk = new Uint8Array(64 * 1024);
  let written = 0;
  try {
    for (;;) written += await file.write(chunk);
  } catch (err) {
    // A full tmpfs may accept a short write before refusing.
    if (!/No space left|os error 28/.test(String(err))) throw err;
  } finally {
    file.close();
  }
  return written;
}

const containerOf = (pod: Pod | undefined) =>
  pod?.status?.containerStatuses?.find((c) => c.name === "main");
const isRunning = (pod: Pod | undefined) =>
  pod?.status?.phase === "Running" && containerOf(pod)?.state.running !== undefined;

/** The pieces a round drives. */
interface Rig {
  rt: TestRuntime;
  cri: RuntimeService;
  agent: AgentProcess;
  rootDir: string;
  logsDir: string;
}

/** A pod that logs a line every 100 ms: its log file is where a full logs fs bites. */
function chattyManifest(rig: Rig, name: string): string {
  return podManifest({
    name,
    image: rig.rt.images.busybox,
    command: ["sh", "-c", "while :; do echo tick $(date +%s%N); sleep 0.1; done"],
    grace: 1,
  });
}

async function addPod(rig: Rig, name: string): Promise<void> {
  await Deno.writeTextFile(join(rig.agent.manifestDir, `${name}.json`), chattyManifest(rig, name));
}

async function removePod(rig: Rig, name: string): Promise<void> {
  await Deno.remove(join(rig.agent.manifestDir, `${name}.json`));
}

/**
 * Whether the pod's container waits with CreateContainerConfigError naming the root dir
 * and `reason`: what a pod whose files cannot be written shows, rather than a
 * ContainerCreating forever.
 */
async function failingFor(rig: Rig, name: string, reason: RegExp): Promise<true | undefined> {
  const waiting = containerOf(findPod(await rig.agent.pods(), name))?.state.waiting;
  const message = waiting?.message ?? "";
  return waiting?.reason === "CreateContainerConfigError" && message.includes(rig.rootDir) &&
      reason.test(message) || undefined;
}

/** Fails with the seed and the agent's log when the agent is gone or unhealthy. */
async function assertAgentAlive(rig: Rig, when: string): Promise<void> {
  const alive = await pathExists(`/proc/${rig.agent.pid}`);
  assert.ok(alive, `seed ${seed}: the agent exited ${when}\n${rig.agent.log().slice(-4000)}`);
  // A full or read-only disk is no reason for the agent's own health checks to fail.
  const [code, body] = await rig.agent.healthz();
  assert.equal(code, 200, `seed ${seed}: /healthz ${code} ${body} ${when}`);
}

/** The steady pods' (container ID, restart count), which no disk fault may change. */
async function steadyView(rig: Rig, names: string[]): Promise<Map<string, string>> {
  const pods = await rig.agent.pods();
  const view = new Map<string, string>();
  for (const name of names) {
    const c = containerOf(findPod(pods, name));
    view.set(name, `${c?.containerID} restarts=${c?.restartCount}`);
  }
  return view;
}

/** Manifest pods still in the runtime: their sandboxes' pod names. */
async function runtimePodNames(rig: Rig): Promise<Set<string>> {
  const sandboxes = await rig.cri.listPodSandbox();
  return new Set(sandboxes.map((s) => s.metadata.name.replace(/-testnode$/, "")));
}

Deno.test({
  name: "disk faults: a full and read-only root dir and pod logs dir while static pods churn",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const random = seededRandom(seed);
    const rounds = suiteCount({ slice: 1, full: 4 });
    const rt = await startTestRuntime({ name: "fdisk", podNetwork: false });
    const base = await Deno.makeTempDir({ prefix: "denolet-fdisk-" });
    const rootDir = `${base}/root`;
    const logsDir = `${base}/logs`;
    const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
    let agent: AgentProcess | undefined;
    const figures = { rounds, faults: 0, podsAdded: 0, podsRemoved: 0, checks: 0 };
    const findings: string[] = [];
    try {
      await mountSmallFs(rootDir, 8 * MiB);
      await mountSmallFs(logsDir, 4 * MiB);
      agent = await startAgent({ runtime: rt, rootDir, extraArgs: [`--pod-logs-dir=${logsDir}`] });
      const rig: Rig = { rt, cri, agent, rootDir, logsDir };
      const steady = ["steady-a", "steady-b"];
      for (const name of steady) await addPod(rig, name);
      await waitFor("the steady pods running", async () => {
        const pods = await rig.agent.pods();
        return steady.every((n) => isRunning(findPod(pods, n))) || undefined;
      }, { timeoutMs: 60_000, log: agent.log });
      const baseline = await steadyView(rig, steady);
      // The filler of the logs fs lives in a running pod's log dir: the agent's log GC
      // removes whatever else it finds at the top of the logs dir (as upstream's does).
      const steadyLogs = (await Array.fromAsync(Deno.readDir(logsDir)))
        .find((e) => e.name.startsWith("default_steady-a-testnode_"));
      assert.ok(steadyLogs, `no log dir of steady-a under ${logsDir}`);
      const fillerDir = (dir: string) => dir === logsDir ? join(logsDir, steadyLogs.name) : dir;

      const present = new Set(steady);
      let next = 0;
      // Removals only while the root is read-only: a pod dir removed while the root is
      // full would free the space the next pod is meant not to find.
      const churn = async (opts: { remove: boolean }) => {
        const removable = [...present].filter((n) => !steady.includes(n));
        if (opts.remove && removable.length > 0) {
          const name = removable[Math.floor(random() * removable.length)]!;
          await removePod(rig, name);
          present.delete(name);
          figures.podsRemoved++;
        }
        const name = `churn-${next++}`;
        await addPod(rig, name);
        present.add(name);
        figures.podsAdded++;
        return name;
      };

      for (let round = 0; round < rounds; round++) {
        const where = `in round ${round}`;
        // Which fs fills first.
        const order = random() < 0.5 ? [logsDir, rootDir] : [rootDir, logsDir];
        for (const dir of order) {
          const bytes = await fill(fillerDir(dir));
          assert.ok(bytes < 8 * MiB, `seed ${seed}: ${dir} took ${bytes} bytes`);
          figures.faults++;
          const added = await churn({ remove: false });
          if (dir === logsDir && order[0] === logsDir) {
            // A full logs fs holds back no pod: containerd opens the log, writes fail.
            await waitFor(
              `seed ${seed}: ${added} running with the logs fs full ${where}`,
              async () => isRunning(findPod(await rig.agent.pods(), added)) || undefined,
              { timeoutMs: 60_000, log: agent.log },
            );
          } else {
            await waitFor(
              `seed ${seed}: ${added} failing for the full root fs ${where}`,
              () => failingFor(rig, added, /No space left on device/),
              { timeoutMs: 30_000, log: agent.log },
            );
          }
          figures.checks++;
        }
        await remount(rootDir, "ro");
        figures.faults++;
        const addedReadOnly = await churn({ remove: true });
        await assertAgentAlive(rig, `with both filesystems full and the root read-only ${where}`);
        // A pod that cannot get its dirs says why, naming the path and the reason.
        await waitFor(
          `seed ${seed}: a logged error naming ${rootDir} and the read-only filesystem`,
          () =>
            new RegExp(`${rootDir}[^\\n]*(Read-only file system|os error 30)`).test(agent!.log()) ||
            undefined,
          { timeoutMs: 30_000, log: agent.log },
        );
        // ... and on the containers of the pod, rather than a ContainerCreating forever.
        await waitFor(
          `seed ${seed}: ${addedReadOnly} failing for the read-only root fs`,
          () => failingFor(rig, addedReadOnly, /Read-only file system/),
          { timeoutMs: 30_000, log: agent.log },
        );
        figures.checks++;
        await assertAgentAlive(rig, `after a pod was added on a read-only root ${where}`);
        assert.deepEqual(
          await steadyView(rig, steady),
          baseline,
          `seed ${seed}: a steady pod restarted ${where}`,
        );
        figures.checks++;

        // Writes and space back: everything converges.
        await remount(rootDir, "rw");
        for (const dir of order) await Deno.remove(join(fillerDir(dir), ".fill"));
        await waitFor(
          `seed ${seed}: every pod running, every removed pod and its dir gone ${where}`,
          async () => {
            const pods = await rig.agent.pods();
            const inRuntime = await runtimePodNames(rig);
            const allRunning = [...present].every((n) => isRunning(findPod(pods, n)));
            const noneLeft = [...inRuntime].every((n) => present.has(n));
            // The dirs of pods removed while the root was read-only go once it is not.
            const uids = new Set(pods.map((p) => p.metadata.uid));
            let noDirLeft = true;
            for await (const e of Deno.readDir(`${rootDir}/pods`)) noDirLeft &&= uids.has(e.name);
            return allRunning && noneLeft && noDirLeft || undefined;
          },
          { timeoutMs: 90_000, log: agent.log },
        );
        figures.checks++;
        assert.deepEqual(
          await steadyView(rig, steady),
          baseline,
          `seed ${seed}: a steady pod restarted ${where}`,
        );
        figures.checks++;
        await assertAgentAlive(rig, `after recovery ${where}`);
      }
    } catch (err) {
      findings.push(String(err instanceof Error ? err.message : err));
      throw err;
    } finally {
      await recordSuite({
        suite: "faults",
        name: "disk full and read-only",
        seed,
        figures,
        findings,
      });
      // Writable again, so the agent and the harness can remove what they made.
      await exec("mount", ["-o", "remount,rw", rootDir], { allowFailure: true });
      await agent?.stop();
      cri.close();
      await rt.stop();
      await agent?.removeDirs();
      await unmountUnder(base);
      await Deno.remove(base, { recursive: true }).catch(() => {});
    }
  },
});
