/**
 * Container GC against a real containerd (tests/harness): a crash-looping pod
 * keeps only the newest dead container (MaxPerPodContainer 1), whose log
 * `/containerLogs?previous=true` still reads, while the removed ones' log
 * files and /var/log/containers symlinks go with them; a deleted pod loses
 * its containers, its sandbox and its /var/log/pods directory. Host-network
 * pods only. Needs root.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Pod, PodStatus } from "../../lib/api/types.ts";
import { createRuntimeService, type RuntimeService } from "../../lib/cri/mod.ts";
import {
  ContainerGC,
  type ContainerInBackoff,
  Labels,
  logSymlinkPath,
  podLogsDirectory,
  type PodStateProvider,
  type RuntimePodStatus,
} from "../../lib/kuberuntime/mod.ts";
import { cleanContainerLogs, containerLogsHandler } from "../../lib/logs/mod.ts";
import { generatePodStatus } from "../../lib/status/mod.ts";
import { BackoffStore } from "../../lib/util/backoff.ts";
import { realClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import { startTestRuntime } from "../harness/mod.ts";
import { pathExists, waitFor } from "../kit/mod.ts";
import { runPod, testRuntimeManager } from "./_manager.ts";

/** How many times the crash-looping container restarts before the GC runs. */
const RESTARTS = 4;

/** Pod state where only the UIDs in `deleted` are gone (evicted, or deleted and terminated). */
function podState(deleted: string[] = []): PodStateProvider {
  return {
    shouldPodContentBeRemoved: (uid) => deleted.includes(uid),
    shouldPodRuntimeBeRemoved: (uid) => deleted.includes(uid),
  };
}

Deno.test({
  name:
    "Container GC on containerd: a crash loop keeps its newest dead container, a deleted pod goes",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const rt = await startTestRuntime({ name: "cgc" });
    let cri: RuntimeService | undefined;
    try {
      cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
      const runtime = cri;
      const containerLogsDir = `${rt.dir}/containers`; // testRuntimeManager's
      // A short crash-loop backoff, so the restarts take seconds, not minutes.
      const manager = testRuntimeManager(rt, runtime, {
        containerLogsDir,
        backoff: new BackoffStore({ initialMs: 200, maxMs: 500 }),
        cleanContainerLogs,
      });
      const gc = (state: PodStateProvider) =>
        new ContainerGC({
          runtime: manager,
          podState: state,
          sourcesReady: () => true,
          podLogsDir: manager.podLogsDir,
          clock: realClock,
          logger: silentLogger,
        });
      const signal = new AbortController().signal;
      const containersOf = (uid: string) =>
        runtime.listContainers({ labelSelector: { [Labels.podUID]: uid } });
      const sandboxesOf = (uid: string) =>
        runtime.listPodSandbox({ labelSelector: { [Labels.podUID]: uid } });

      const crasher: Pod = {
        metadata: { name: "crasher", namespace: "default", uid: crypto.randomUUID() },
        spec: {
          hostNetwork: true,
          restartPolicy: "Always",
          terminationGracePeriodSeconds: 1,
          volumes: [{
            name: "host",
            hostPath: { path: `${rt.dir}/crasher`, type: "DirectoryOrCreate" },
          }],
          containers: [{
            name: "app",
            image: rt.images.busybox,
            imagePullPolicy: "Never",
            // Each run counts itself in the host dir, says which run it is, and fails.
            command: [
              "sh",
              "-c",
              "n=$(cat /host/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /host/n; echo run-$n; exit 1",
            ],
            volumeMounts: [{ name: "host", mountPath: "/host" }],
          }],
        },
      };
      const crasherUID = crasher.metadata.uid!;

      await t.step(
        "a crash loop keeps MaxPerPodContainer dead containers; --previous reads the last",
        async () => {
          // Sync as the pod workers do until the container has restarted RESTARTS times.
          const crashed: RuntimePodStatus = await waitFor(
            `${RESTARTS} restarts of the crash-looping container`,
            async () => {
              const observed = await manager.getPodStatus(crasherUID);
              const app = observed.containers.filter((c) => c.name === "app");
              if (app.length > RESTARTS && app.every((c) => c.state === "exited")) return observed;
              await manager.syncPod(crasher, observed, signal);
              return undefined;
            },
            { timeoutMs: 120_000, intervalMs: 200 },
          );
          const runs = crashed.containers.length;
          const newest = crashed.containers[0]!;
          const before = await Promise.all(crashed.containers.map(async (c) => ({
            id: c.id,
            logPath: (await runtime.containerStatus(c.id)).status.logPath,
            link: logSymlinkPath(containerLogsDir, crashed, c.name, c.id),
          })));
          for (const c of before) {
            assert.ok(await pathExists(c.logPath), `${c.id}'s log exists before GC`);
            assert.ok(await pathExists(c.link), `${c.id}'s symlink exists before GC`);
          }

          await gc(podState()).garbageCollect();

          const left = await containersOf(crasherUID);
          assert.deepEqual(left.map((c) => c.id), [newest.id], "only the newest dead container");
          assert.equal((await sandboxesOf(crasherUID)).length, 1, "the pod keeps its sandbox");
          for (const c of before) {
            const kept = c.id === newest.id;
            assert.equal(await pathExists(c.logPath), kept, `log file of ${c.id}`);
            assert.equal(await pathExists(c.link), kept, `symlink of ${c.id}`);
          }

          // The status the kubelet reports between two restarts: waiting in
          // CrashLoopBackOff, the newest dead container as the last state.
          const inBackoff: ContainerInBackoff[] = [{
            name: "app",
            reason: "CrashLoopBackOff",
            message: "back-off restarting failed container",
            until: Date.now() + 10_000,
          }];
          const status: PodStatus = generatePodStatus({
            pod: crasher,
            runtime: await manager.getPodStatus(crasherUID),
            inBackoff,
            lastErrors: new Map(),
            now: Date.now(),
          });
          const handler = containerLogsHandler({
            getPodByName: (ns, name) =>
              ns === "default" && name === "crasher" ? { ...crasher, status } : undefined,
            runtime,
          });
          const url = new URL("https://node/containerLogs/default/crasher/app?previous=true");
          const res = await handler(new Request(url), url);
          assert.equal(res.status, 200);
          assert.equal(await res.text(), `run-${runs}\n`);
        },
      );

      await t.step("a deleted pod's containers, sandbox and log directory go", async () => {
        const pod: Pod = {
          metadata: { name: "done", namespace: "default", uid: crypto.randomUUID() },
          spec: {
            hostNetwork: true,
            terminationGracePeriodSeconds: 1,
            containers: [{
              name: "app",
              image: rt.images.busybox,
              imagePullPolicy: "Never",
              command: ["sh", "-c", "echo hello; sleep 1000"],
            }],
          },
        };
        const uid = pod.metadata.uid!;
        const running = await runPod(runtime, manager, pod);
        await manager.killPod(pod, running.status, 0, signal);
        const logDir = podLogsDirectory(manager.podLogsDir, running.status);
        assert.ok(await pathExists(logDir));

        // While the pod still exists, its only dead container and its sandbox stay.
        await gc(podState()).garbageCollect();
        assert.equal((await containersOf(uid)).length, 1);
        assert.equal((await sandboxesOf(uid)).length, 1);
        assert.ok(await pathExists(logDir));

        await gc(podState([uid])).garbageCollect();
        assert.deepEqual(await containersOf(uid), []);
        assert.deepEqual(await sandboxesOf(uid), []);
        assert.ok(!await pathExists(logDir), "its /var/log/pods directory is gone");
        // The crash-looping pod, not deleted, is left as it was.
        assert.equal((await containersOf(crasherUID)).length, 1);
        assert.ok(
          await pathExists(podLogsDirectory(manager.podLogsDir, {
            namespace: "default",
            name: "crasher",
            uid: crasherUID,
          })),
        );
      });

      await manager.killPod(crasher, await manager.getPodStatus(crasherUID), 0, signal);
      await manager.removePod(await manager.getPodStatus(crasherUID), signal);
    } finally {
      cri?.close();
      await rt.stop();
    }
  },
});
