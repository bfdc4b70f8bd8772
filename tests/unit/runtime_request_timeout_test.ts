/**
 * `--runtime-request-timeout` from the command line to the deadline each CRI
 * call carries on the wire: flags are parsed as main.ts parses them, the
 * client is built from them as main.ts builds it, and a scripted CRI server
 * records the deadline every request arrives with. Any link that drops the
 * value (the options, the client options, the client, the executor) shows up
 * as a call with the wrong deadline.
 */

import assert from "node:assert/strict";
import { type FakeCriServer, startFakeCriServer } from "../../lib/cri/_fake_server.ts";
import {
  ContainerState,
  createRuntimeService,
  DEFAULT_SHORT_TIMEOUT_MS,
  PodSandboxState,
  type RuntimeService,
  runtimeServiceOptions,
} from "../../lib/cri/mod.ts";
import { instrumentRuntime, KubeletMetrics } from "../../lib/metrics/mod.ts";
import { parseFlags } from "../../lib/options/mod.ts";
import { runtimePodStatus, testPod, unitRuntimeManager, withTempDir } from "../kit/mod.ts";

/**
 * Longer than the upstream default (2 min), so a caller's own bound of 2 min
 * would show as a shorter deadline, and longer than the short read deadline.
 */
const FLAG = "3m7s";
const TIMEOUT = 187_000;
/** Time between the client setting a deadline and the server reading it. */
const SLACK = 2_000;

/**
 * Answers the calls a sync, a status read, a kill and a removal make. What
 * RunPodSandbox and CreateContainer are given is what the lists return, so
 * the executor finds its own labels again.
 */
async function startRuntime(): Promise<FakeCriServer> {
  const now = Date.now() * 1e6;
  // deno-lint-ignore no-explicit-any
  let sandbox: any;
  // deno-lint-ignore no-explicit-any
  let container: any;
  const sandboxStatus = () => ({
    status: {
      id: "sb1",
      metadata: sandbox.metadata,
      state: PodSandboxState.SANDBOX_READY,
      createdAt: now,
      network: { ip: "10.0.0.2" },
      labels: sandbox.labels,
      annotations: sandbox.annotations,
    },
  });
  const containerRecord = () => ({
    id: "c1",
    podSandboxId: "sb1",
    metadata: container.metadata,
    image: container.image,
    imageRef: "sha256:img",
    state: ContainerState.CONTAINER_RUNNING,
    createdAt: now,
    labels: container.labels,
    annotations: container.annotations,
  });
  return await startFakeCriServer({
    ImageStatus: (req) => ({
      image: { id: "sha256:img", repoTags: [req.image.image], size: 1 },
    }),
    RunPodSandbox: (req) => {
      sandbox = req.config;
      return { podSandboxId: "sb1" };
    },
    PodSandboxStatus: sandboxStatus,
    CreateContainer: (req) => {
      container = req.config;
      return { containerId: "c1" };
    },
    StartContainer: () => ({}),
    ListPodSandbox: () => ({
      items: [{
        id: "sb1",
        metadata: sandbox.metadata,
        state: PodSandboxState.SANDBOX_READY,
        createdAt: now,
        labels: sandbox.labels,
        annotations: sandbox.annotations,
      }],
    }),
    ListContainers: () => ({ containers: [containerRecord()] }),
    ContainerStatus: () => {
      const { podSandboxId: _, ...status } = containerRecord();
      return { status: { ...status, startedAt: now } };
    },
    StopContainer: () => ({}),
    StopPodSandbox: () => ({}),
    RemoveContainer: () => ({}),
    RemovePodSandbox: () => ({}),
  });
}

/** The CRI client exactly as main.ts builds it from the parsed flags. */
function clientFromFlags(argv: string[]): RuntimeService {
  const parsed = parseFlags(argv);
  assert.equal(parsed.kind, "run");
  if (parsed.kind !== "run") throw new Error("unreachable");
  return instrumentRuntime(
    createRuntimeService(runtimeServiceOptions(parsed.options)),
    new KubeletMetrics(),
  );
}

function assertDeadline(method: string, actual: number | undefined, expected: number): void {
  assert.ok(actual !== undefined, `${method}: expected a deadline of ~${expected} ms, got none`);
  assert.ok(
    actual <= expected && actual > expected - SLACK,
    `${method}: deadline ${actual} ms, expected ~${expected}`,
  );
}

Deno.test("--runtime-request-timeout sets the deadline of every CRI call the executor makes", async () => {
  const fake = await startRuntime();
  const cri = clientFromFlags([
    `--container-runtime-endpoint=${fake.endpoint}`,
    `--runtime-request-timeout=${FLAG}`,
  ]);
  try {
    await withTempDir(async (root) => {
      const manager = unitRuntimeManager(cri, {
        rootDir: `${root}/kubelet`,
        podLogsDir: `${root}/logs`,
      });
      const pod = testPod({
        namespace: "prod",
        containers: [{ name: "app", image: "busybox:1.36" }],
        spec: { terminationGracePeriodSeconds: 5 },
      });
      const empty = runtimePodStatus({ namespace: "prod", sandboxes: [] });
      const signal = new AbortController().signal;
      const sync = await manager.syncPod(pod, empty, signal);
      assert.deepEqual(sync.steps.filter((s) => s.error), []);
      const status = await manager.getPodStatus("u1");
      assert.equal(status.containers.length, 1);
      const killed = await manager.killPod(pod, status);
      assert.deepEqual(killed.filter((s) => s.error), []);
      const removed = await manager.removePod(status);
      assert.deepEqual(removed.filter((s) => s.error), []);

      // Upstream's remote runtime client: the request timeout, twice it for a
      // sandbox, plus the grace period for a stop; reads get the short deadline.
      const short = Math.min(DEFAULT_SHORT_TIMEOUT_MS, TIMEOUT);
      const expected: Record<string, number> = {
        ImageStatus: short,
        RunPodSandbox: 2 * TIMEOUT,
        PodSandboxStatus: short,
        CreateContainer: TIMEOUT,
        StartContainer: TIMEOUT,
        ListPodSandbox: short,
        ListContainers: short,
        ContainerStatus: short,
        StopContainer: TIMEOUT + 5_000,
        StopPodSandbox: TIMEOUT,
        RemoveContainer: TIMEOUT,
        RemovePodSandbox: TIMEOUT,
      };
      assert.deepEqual(
        [...new Set(fake.calls.map((c) => c.method))].sort(),
        Object.keys(expected).sort(),
        "every call of the sync, status read, kill and removal was made",
      );
      for (const call of fake.calls) {
        assertDeadline(call.method, call.deadlineMs, expected[call.method]!);
      }
    }, "denolet-rrt-");
  } finally {
    cri.close();
    await fake.close();
  }
});

Deno.test("--runtime-request-timeout below the short deadline also bounds read-only calls", async () => {
  const fake = await startFakeCriServer({
    ListPodSandbox: () => ({ items: [] }),
    StartContainer: () => ({}),
  });
  const cri = clientFromFlags([
    `--container-runtime-endpoint=${fake.endpoint}`,
    "--runtime-request-timeout=4s",
  ]);
  try {
    await cri.listPodSandbox();
    await cri.startContainer("c1");
    assertDeadline("ListPodSandbox", fake.calls[0]?.deadlineMs, 4_000);
    assertDeadline("StartContainer", fake.calls[1]?.deadlineMs, 4_000);
  } finally {
    cri.close();
    await fake.close();
  }
});
