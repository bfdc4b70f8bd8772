/**
 * A pod's ephemeral storage in `/stats/summary` on real containerd + runc:
 * a pod writes N MiB into a disk emptyDir, M MiB into its root filesystem
 * and K MiB into a memory-backed emptyDir; the summary's pod `volume` list
 * shows both volumes with what was written (within block rounding), the
 * container's `rootfs` the writable layer, and the pod's `ephemeral-storage`
 * the sum of the writable layer, the container's log files, the disk
 * emptyDir and the hosts file — not the memory-backed volume, as upstream.
 * Also: the directory walk does not cross into a filesystem mounted below.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startTestRuntime } from "../harness/mod.ts";
import { diskUsage } from "../../lib/stats/mod.ts";
import type { PodSummary, Summary } from "../../lib/stats/mod.ts";
import { type AgentProcess, startAgent } from "./_agent.ts";
import { waitFor, withTempDir } from "../kit/mod.ts";

const MI = 1024 ** 2;
const KI = 1024;
const N = 6; // MiB into the disk emptyDir
const M = 4; // MiB into the root filesystem
const K = 2; // MiB into the memory emptyDir

Deno.test({
  name:
    "/stats/summary: a pod's emptyDir and rootfs writes show in its volume and ephemeral-storage stats",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const rt = await startTestRuntime({ name: "ephstats" });
    let agent: AgentProcess | undefined;
    try {
      agent = await startAgent({ runtime: rt, extraArgs: ["--volume-stats-agg-period=1s"] });
      const a = agent;
      await Deno.writeTextFile(
        join(a.manifestDir, "writer.json"),
        JSON.stringify({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "writer", namespace: "default" },
          spec: {
            hostNetwork: true,
            terminationGracePeriodSeconds: 1,
            volumes: [
              { name: "scratch", emptyDir: {} },
              { name: "ram", emptyDir: { medium: "Memory", sizeLimit: "16Mi" } },
            ],
            containers: [{
              name: "main",
              image: rt.images.busybox,
              imagePullPolicy: "Never",
              command: [
                "sh",
                "-c",
                `dd if=/dev/zero of=/scratch/blob bs=1M count=${N} && ` +
                `dd if=/dev/zero of=/rootblob bs=1M count=${M} && ` +
                `dd if=/dev/zero of=/ram/blob bs=1M count=${K} && sync && ` +
                "echo written && sleep 3600",
              ],
              volumeMounts: [
                { name: "scratch", mountPath: "/scratch" },
                { name: "ram", mountPath: "/ram" },
              ],
            }],
          },
        }),
      );
      const base = `http://127.0.0.1:${a.readOnlyPort}`;
      const volume = (p: PodSummary, name: string) => p.volume?.find((v) => v.name === name);
      const pod = await waitFor("writer's volumes and rootfs in /stats/summary", async () => {
        const s: Summary = await (await fetch(`${base}/stats/summary`)).json();
        return s.pods.find((p) => p.podRef.name === "writer-testnode");
      }, {
        timeoutMs: 60_000,
        log: a.log,
        until: (p) =>
          p !== undefined &&
          (volume(p, "scratch")?.usedBytes ?? 0) >= N * MI &&
          (volume(p, "ram")?.usedBytes ?? 0) >= K * MI &&
          (p.containers[0]?.rootfs?.usedBytes ?? 0) >= M * MI &&
          (p.containers[0]?.logs?.usedBytes ?? 0) > 0,
      });
      const scratch = volume(pod!, "scratch")!;
      const ram = volume(pod!, "ram")!;
      const c = pod!.containers[0]!;
      // The written bytes, within block rounding (the directory's own blocks).
      assert.ok(scratch.usedBytes! - N * MI <= 64 * KI, `scratch ${scratch.usedBytes}`);
      assert.ok(ram.usedBytes! - K * MI <= 64 * KI, `ram ${ram.usedBytes}`);
      assert.equal(scratch.inodesUsed, 2);
      // Each volume reports its own filesystem: the memory one its tmpfs (16Mi).
      assert.equal(ram.capacityBytes, 16 * MI);
      assert.ok(scratch.capacityBytes! > ram.capacityBytes!);
      // The writable layer: the file and whatever else the shell left there.
      assert.ok(c.rootfs!.usedBytes! - M * MI <= 256 * KI, `rootfs ${c.rootfs!.usedBytes}`);
      // The log file holds "written".
      assert.ok(c.logs!.usedBytes! > 0 && c.logs!.inodesUsed === 1, JSON.stringify(c.logs));
      const eph = pod!["ephemeral-storage"]!;
      const counted = c.rootfs!.usedBytes! + c.logs!.usedBytes! + scratch.usedBytes!;
      // The rest is the pod's hosts file (a block or two), never the memory-backed volume.
      const rest = eph.usedBytes! - counted;
      assert.ok(
        rest >= 0 && rest <= 16 * KI,
        `ephemeral-storage ${eph.usedBytes}, counted ${counted}`,
      );
      assert.equal(
        eph.inodesUsed,
        c.rootfs!.inodesUsed! + c.logs!.inodesUsed! + scratch.inodesUsed! + 1,
      );
      assert.ok(eph.capacityBytes! > 0 && eph.availableBytes! > 0);
    } finally {
      await agent?.stop();
      await rt.stop();
      await agent?.removeDirs();
    }
  },
});

Deno.test("diskUsage() does not descend into a filesystem mounted below the path", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/mnt`);
    await Deno.writeFile(`${dir}/here`, new Uint8Array(16 * KI).fill(7));
    const mount = await new Deno.Command("mount", {
      args: ["-t", "tmpfs", "-o", "size=4m", "tmpfs", `${dir}/mnt`],
    }).output();
    assert.equal(mount.code, 0, new TextDecoder().decode(mount.stderr));
    try {
      await Deno.writeFile(`${dir}/mnt/elsewhere`, new Uint8Array(MI).fill(7));
      const u = await diskUsage(dir);
      const own = ((await Deno.lstat(dir)).blocks ?? 0) * 512;
      // The mount point (another device) and all below it are left out, as upstream's walk.
      assert.deepEqual(u, { bytes: 16 * KI + own, inodes: 2 });
      // Measured from inside, the tmpfs counts.
      assert.equal((await diskUsage(`${dir}/mnt`)).bytes, MI);
    } finally {
      await new Deno.Command("umount", { args: [`${dir}/mnt`] }).output();
    }
  });
});
