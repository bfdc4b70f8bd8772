/**
 * Orphaned pod dirs against the real agent on a real containerd: pod dirs
 * left under the root dir by pods that vanished while the agent was down are
 * removed by housekeeping (upstream's cleanupOrphanedPodDirs, after its volume
 * manager tore their volumes down, a tmpfs included), while a running static
 * pod's dir stays. Needs root.
 *
 * @module
 */

import assert from "node:assert/strict";
import { startTestRuntime } from "../harness/mod.ts";
import { readMounts, unmountUnder } from "../harness/mounts.ts";
import { type AgentProcess, findPod, podManifest, startAgent } from "./_agent.ts";
import { pathExists, waitFor } from "../kit/mod.ts";

const PLAIN = "5c1f7a20-0d6e-4c2b-9a57-3e1d2c4b5a69";
const TMPFS = "8e2d4b61-7f3a-4e5c-b1d0-9a8b7c6d5e4f";

async function run(cmd: string, ...args: string[]): Promise<void> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
}

Deno.test({
  name: "agent removes orphaned pod dirs (a tmpfs volume unmounted) and keeps a running pod's",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const rt = await startTestRuntime({ name: "orphandirs" });
    const rootDir = await Deno.makeTempDir({ prefix: "denolet-root-" });
    const manifestDir = await Deno.makeTempDir({ prefix: "denolet-manifests-" });
    let agent: AgentProcess | undefined;
    try {
      const empty = (uid: string, name: string) =>
        `${rootDir}/pods/${uid}/volumes/kubernetes.io~empty-dir/${name}`;
      await Deno.mkdir(empty(PLAIN, "scratch"), { recursive: true });
      await Deno.writeTextFile(`${empty(PLAIN, "scratch")}/blob`, "left behind");
      await Deno.mkdir(`${rootDir}/pods/${PLAIN}/containers/app`, { recursive: true });
      await Deno.writeTextFile(`${rootDir}/pods/${PLAIN}/etc-hosts`, "127.0.0.1 localhost\n");
      await Deno.mkdir(empty(TMPFS, "shm"), { recursive: true });
      await run("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", empty(TMPFS, "shm"));
      await Deno.writeTextFile(`${empty(TMPFS, "shm")}/data`, "in memory");
      await Deno.mkdir(`${rootDir}/pods/not-a-pod-uid`);

      await Deno.writeTextFile(
        `${manifestDir}/keep.json`,
        podManifest({ name: "keep", image: rt.images.busybox, command: ["sleep", "3600"] }),
      );
      agent = await startAgent({ runtime: rt, rootDir, manifestDir });
      const a = agent;
      const keep = await waitFor("the static pod running", async () => {
        const p = findPod(await a.pods(), "keep");
        return p?.status?.containerStatuses?.[0]?.state.running ? p : undefined;
      }, { timeoutMs: 60_000, log: a.log });

      await waitFor("both orphaned pod dirs removed", async () => {
        const left = [
          await pathExists(`${rootDir}/pods/${PLAIN}`),
          await pathExists(`${rootDir}/pods/${TMPFS}`),
        ];
        return left.every((l) => !l) || undefined;
      }, { timeoutMs: 30_000, log: a.log });
      const real = await Deno.realPath(rootDir);
      assert.deepEqual(
        readMounts().filter((m) => m.mountPoint.startsWith(`${real}/pods/${TMPFS}`)),
        [],
        "the orphan's tmpfs is unmounted",
      );
      assert.match(a.log(), new RegExp(`Orphaned pod found, removing.*${PLAIN}`));
      // The running pod's dir and a name that is not a UID stay.
      assert.ok((await Deno.stat(`${rootDir}/pods/${keep.metadata.uid}`)).isDirectory);
      assert.ok(await pathExists(`${rootDir}/pods/not-a-pod-uid`));
      assert.ok(
        findPod(await a.pods(), "keep")?.status?.containerStatuses?.[0]?.state.running,
        "the static pod keeps running",
      );
    } finally {
      if (agent) await agent.stop("SIGKILL");
      await unmountUnder(rootDir);
      await rt.stop();
      for (const dir of [rootDir, manifestDir]) {
        await Deno.remove(dir, { recursive: true }).catch(() => {});
      }
    }
  },
});
