/**
 * Termination messages against a real containerd (tests/harness): the cases
 * of upstream's Conformance tests "Container Runtime blackbox test on
 * terminated container" (test/e2e/common/node/runtime.go), read back through
 * CRI ContainerStatus and the file bind-mounted at terminationMessagePath or
 * the container's log, into the status the API shows. Needs root.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Container, ContainerStatus, Pod, PodStatus } from "../../lib/api/types.ts";
import { createRuntimeService, type RuntimeService } from "../../lib/cri/mod.ts";
import type { KubeRuntimeManager } from "../../lib/kuberuntime/mod.ts";
import { generatePodStatus } from "../../lib/status/mod.ts";
import { BackoffStore } from "../../lib/util/backoff.ts";
import { startTestRuntime } from "../harness/mod.ts";
import { testRuntimeManager } from "./_manager.ts";
import { hostNetworkPod, waitFor } from "../kit/mod.ts";

/**
 * Syncs the pod as the pod workers would until `done` holds for its
 * container's status, and returns that status.
 */
async function syncUntil(
  manager: KubeRuntimeManager,
  pod: Pod,
  done: (s: ContainerStatus | undefined) => boolean,
  what: string,
): Promise<ContainerStatus> {
  const signal = new AbortController().signal;
  let previous: PodStatus | undefined;
  const seen = await waitFor(what, async () => {
    const runtime = await manager.getPodStatus(pod.metadata.uid!);
    const result = await manager.syncPod(pod, runtime, signal);
    previous = generatePodStatus({
      pod,
      runtime,
      inBackoff: result.actions.inBackoff,
      lastErrors: result.lastErrors,
      previous,
      now: Date.now(),
    });
    return previous.containerStatuses?.[0];
  }, { timeoutMs: 60_000, intervalMs: 300, until: done });
  return seen!;
}

const terminated = (s: ContainerStatus | undefined) => s?.state.terminated !== undefined;

Deno.test({
  name: "Termination messages come from terminationMessagePath or the log, as upstream's",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const rt = await startTestRuntime({ name: "termmsg" });
    let runtime: RuntimeService | undefined;
    try {
      runtime = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
      const manager = testRuntimeManager(rt, runtime, {
        backoff: new BackoffStore({ initialMs: 500, maxMs: 1_000 }),
      });
      const signal = new AbortController().signal;
      const runOnce = async (name: string, c: Partial<Container>) => {
        const pod = hostNetworkPod(rt.images.busybox, {
          name,
          containers: [{ name: "termination-message-container", ...c }],
          spec: { restartPolicy: "Never" },
        });
        const status = await syncUntil(manager, pod, terminated, `${name} terminated`);
        const uid = pod.metadata.uid!;
        await manager.removePod(await manager.getPodStatus(uid), signal);
        return status.state.terminated!;
      };

      await t.step("TerminationMessagePath set: the file's content", async () => {
        const term = await runOnce("file", {
          command: ["/bin/sh", "-c"],
          args: ["/bin/echo -n DONE > /dev/termination-log"],
          terminationMessagePath: "/dev/termination-log",
          securityContext: { runAsUser: 0 },
        });
        assert.equal(term.exitCode, 0);
        assert.equal(term.message, "DONE");
      });

      await t.step("as a non-root user at a non-default path", async () => {
        const term = await runOnce("nonroot", {
          command: ["/bin/sh", "-c"],
          args: ["/bin/echo -n DONE > /dev/termination-custom-log"],
          terminationMessagePath: "/dev/termination-custom-log",
          securityContext: { runAsUser: 10000 },
        });
        assert.equal(term.exitCode, 0);
        assert.equal(term.message, "DONE");
      });

      await t.step("FallbackToLogsOnError, failed: the log's output", async () => {
        const term = await runOnce("fallback", {
          command: ["/bin/sh", "-c"],
          args: ["/bin/echo -n DONE; /bin/false"],
          terminationMessagePath: "/dev/termination-log",
          terminationMessagePolicy: "FallbackToLogsOnError",
        });
        assert.equal(term.exitCode, 1);
        assert.equal(term.message, "DONE");
      });

      await t.step("FallbackToLogsOnError, succeeded: no message", async () => {
        const term = await runOnce("fallback-ok", {
          command: ["/bin/sh", "-c"],
          args: ["/bin/echo -n DONE; /bin/true"],
          terminationMessagePath: "/dev/termination-log",
          terminationMessagePolicy: "FallbackToLogsOnError",
        });
        assert.equal(term.exitCode, 0);
        assert.equal(term.message, undefined);
      });

      await t.step("FallbackToLogsOnError, succeeded with a file: the file's content", async () => {
        const term = await runOnce("fallback-file", {
          command: ["/bin/sh", "-c"],
          args: ["/bin/echo -n OK > /dev/termination-log; /bin/echo DONE; /bin/true"],
          terminationMessagePath: "/dev/termination-log",
          terminationMessagePolicy: "FallbackToLogsOnError",
        });
        assert.equal(term.message, "OK");
      });

      await t.step("a longer message is cut to the file's last 4096 bytes", async () => {
        const term = await runOnce("long", {
          command: ["/bin/sh", "-c"],
          // 5000 bytes of "a" then 4000 of "b".
          args: [
            "head -c 5000 /dev/zero | tr '\\0' a > /dev/termination-log; " +
            "head -c 4000 /dev/zero | tr '\\0' b >> /dev/termination-log",
          ],
        });
        assert.equal(term.message, "a".repeat(96) + "b".repeat(4000));
      });

      await t.step("a restarted container's last state keeps its message", async () => {
        const pod = hostNetworkPod(rt.images.busybox, {
          name: "restarted",
          containers: [{
            name: "c",
            command: [
              "/bin/sh",
              "-c",
              "echo -n run-$(date +%s) > /dev/termination-log; sleep 0.2; exit 3",
            ],
          }],
          spec: { restartPolicy: "OnFailure" },
        });
        const status = await syncUntil(
          manager,
          pod,
          (s) => (s?.restartCount ?? 0) >= 1 && s?.lastState.terminated !== undefined,
          "a restart",
        );
        assert.equal(status.lastState.terminated?.exitCode, 3);
        assert.match(status.lastState.terminated?.message ?? "", /^run-\d+$/);
        const uid = pod.metadata.uid!;
        await manager.killPod(pod, await manager.getPodStatus(uid), 0, signal);
        await manager.removePod(await manager.getPodStatus(uid), signal);
      });
    } finally {
      runtime?.close();
      await rt.stop();
    }
  },
});
