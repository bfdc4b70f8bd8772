/**
 * Container logs against a real containerd (tests/harness): the
 * /containerLogs handler reads what a container wrote (tail, timestamps,
 * previous after a restart, follow), the /var/log/containers symlink lives
 * as long as the container, and ContainerLogManager rotates the log of a
 * container that writes fast through the runtime's ReopenContainerLog.
 * Host-network pods only. Needs root.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Pod, PodStatus } from "../../lib/api/types.ts";
import { createRuntimeService, type RuntimeService } from "../../lib/cri/mod.ts";
import {
  type KubeRuntimeManager,
  logSymlinkPath,
  type RuntimePodStatus,
} from "../../lib/kuberuntime/mod.ts";
import {
  ContainerLogManager,
  containerLogsHandler,
  listRunningContainerLogs,
} from "../../lib/logs/mod.ts";
import { generatePodStatus } from "../../lib/status/mod.ts";
import { BackoffStore } from "../../lib/util/backoff.ts";
import { realClock } from "../../lib/util/clock.ts";
import { startTestRuntime, type TestRuntime } from "../harness/mod.ts";
import { testRuntimeManager } from "./_manager.ts";

function makePod(rt: TestRuntime, name: string, hostDir: string, script: string): Pod {
  return {
    metadata: { name, namespace: "default", uid: crypto.randomUUID() },
    spec: {
      hostNetwork: true,
      terminationGracePeriodSeconds: 1,
      volumes: [{ name: "host", hostPath: { path: hostDir, type: "DirectoryOrCreate" } }],
      containers: [{
        name: "app",
        image: rt.images.busybox,
        imagePullPolicy: "Never",
        command: ["sh", "-c", script],
        volumeMounts: [{ name: "host", mountPath: "/host" }],
      }],
    },
  };
}

/** Syncs like the pod workers (every 300 ms) until `done`; returns the pod with its status. */
async function syncUntil(
  manager: KubeRuntimeManager,
  pod: Pod,
  state: { status?: PodStatus },
  done: (runtime: RuntimePodStatus, status: PodStatus | undefined) => boolean,
  what: string,
): Promise<RuntimePodStatus> {
  const until = Date.now() + 60_000;
  const signal = new AbortController().signal;
  for (;;) {
    const runtime = await manager.getPodStatus(pod.metadata.uid!);
    state.status = generatePodStatus({
      pod,
      runtime,
      inBackoff: [],
      lastErrors: new Map(),
      previous: state.status,
      now: Date.now(),
    });
    if (done(runtime, state.status)) return runtime;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await manager.syncPod(pod, runtime, signal);
    await new Promise((r) => setTimeout(r, 300));
  }
}

async function readUntil(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  seen: { text: string },
  want: string,
): Promise<void> {
  const dec = new TextDecoder();
  while (!seen.text.includes(want)) {
    const r = await reader.read();
    if (r.done) throw new Error(`stream ended before "${want}": ${seen.text}`);
    seen.text += dec.decode(r.value);
  }
}

async function gunzip(path: string): Promise<string> {
  const f = await Deno.open(path);
  return await new Response(f.readable.pipeThrough(new DecompressionStream("gzip"))).text();
}

Deno.test({
  name: "Container logs on containerd: /containerLogs, /var/log/containers symlinks, rotation",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const rt = await startTestRuntime({ name: "logs" });
    let runtime: RuntimeService | undefined;
    try {
      runtime = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
      const cri = runtime;
      const containerLogsDir = `${rt.dir}/containers`; // testRuntimeManager's
      const manager = testRuntimeManager(rt, runtime, {
        containerLogsDir,
        backoff: new BackoffStore({ initialMs: 200, maxMs: 500 }),
      });
      const signal = new AbortController().signal;
      const remove = async (pod: Pod) => {
        const uid = pod.metadata.uid!;
        await manager.killPod(pod, await manager.getPodStatus(uid), 0, signal);
        await manager.removePod(await manager.getPodStatus(uid), signal);
      };

      await t.step(
        "/containerLogs: tail, timestamps, previous after a restart, follow",
        async () => {
          const hostDir = `${rt.dir}/restarting`;
          // First run: three lines (stderr in the middle; the streams are separate pipes, so
          // the sleeps fix their order) and exit 1. Second run: a line, then one more
          // line each time the test drops /host/go.
          const pod = makePod(
            rt,
            "talker",
            hostDir,
            `if [ ! -f /host/ran ]; then touch /host/ran; echo first-1; sleep 0.2; ` +
              `echo first-err >&2; sleep 0.2; echo first-2; exit 1; fi; echo second-1; ` +
              `while true; do if [ -f /host/go ]; then rm /host/go; echo after-go; fi; sleep 0.1; done`,
          );
          const state: { status?: PodStatus } = {};
          const running = await syncUntil(manager, pod, state, (r, s) => {
            const c = s?.containerStatuses?.[0];
            return r.containers.length === 2 && !!c?.state.running && !!c.lastState.terminated;
          }, "the restarted container to run");
          const handler = containerLogsHandler({
            getPodByName: (ns, name) =>
              ns === "default" && name === "talker" ? { ...pod, status: state.status! } : undefined,
            runtime: cri,
          });
          const get = async (q: string) => {
            const url = new URL(`https://node/containerLogs/default/talker/app${q}`);
            return await handler(new Request(url), url);
          };

          // The symlink exists while the container does.
          const current = running.containers[0]!;
          const link = logSymlinkPath(containerLogsDir, running, "app", current.id);
          const target = await Deno.readLink(link);
          assert.equal(target, (await cri.containerStatus(current.id)).status.logPath);

          // Wait for the second run's first line to be in its log.
          for (let i = 0; i < 50; i++) {
            if ((await (await get("")).text()).includes("second-1")) break;
            await new Promise((r) => setTimeout(r, 100));
          }
          assert.equal(await (await get("")).text(), "second-1\n");
          assert.equal(await (await get("?previous=true")).text(), "first-1\nfirst-err\nfirst-2\n");
          assert.equal(await (await get("?previous=true&tailLines=1")).text(), "first-2\n");
          const stamped = await (await get("?previous=true&timestamps=true&limitBytes=1000"))
            .text();
          assert.match(
            stamped,
            /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d) first-1\n.* first-err\n.* first-2\n$/,
          );

          const res = await get("?follow=true");
          assert.equal(res.status, 200);
          const reader = res.body!.getReader();
          const seen = { text: "" };
          await readUntil(reader, seen, "second-1\n");
          await Deno.writeTextFile(`${hostDir}/go`, "");
          await readUntil(reader, seen, "after-go\n");
          assert.equal(seen.text, "second-1\nafter-go\n");
          await reader.cancel();

          await remove(pod);
          await assert.rejects(Deno.lstat(link), Deno.errors.NotFound);
        },
      );

      await t.step(
        "rotation under a fast writer keeps the size, the count and the lines",
        async () => {
          const pad = "x".repeat(80);
          // ~1000 lines of ~100 bytes a second, each numbered.
          const pod = makePod(
            rt,
            "writer",
            `${rt.dir}/writer`,
            `i=0; while true; do j=0; while [ $j -lt 10 ]; do echo "n=$i ${pad}"; i=$((i+1)); ` +
              `j=$((j+1)); done; sleep 0.01; done`,
          );
          const state: { status?: PodStatus } = {};
          const running = await syncUntil(
            manager,
            pod,
            state,
            (r) => r.containers[0]?.state === "running",
            "the writer to run",
          );
          const id = running.containers[0]!.id;
          const logPath = (await cri.containerStatus(id)).status.logPath;
          const maxSize = 32 * 1024;
          const maxFiles = 3;
          const rotation = new ContainerLogManager({
            runtime: cri,
            listRunningContainers: listRunningContainerLogs(cri),
            clock: realClock,
            maxSize,
            maxFiles,
          });
          // A follow that runs through every rotation must see every line once, in order.
          const handler = containerLogsHandler({
            getPodByName: (_ns, name) =>
              name === "writer" ? { ...pod, status: state.status! } : undefined,
            runtime: cri,
          });
          const followUrl = new URL("https://node/containerLogs/default/writer/app?follow=1");
          const follow = (await handler(new Request(followUrl), followUrl)).body!.getReader();
          let followed = "";
          let followError: unknown;
          /** The first line still on disk after the rotations (older ones were deleted). */
          let firstKept = -1;
          const following = (async () => {
            const dec = new TextDecoder();
            for (let r = await follow.read(); !r.done; r = await follow.read()) {
              followed += dec.decode(r.value, { stream: true });
            }
          })().catch((err) => (followError = err));
          try {
            const dir = logPath.slice(0, logPath.lastIndexOf("/"));
            const base = logPath.slice(logPath.lastIndexOf("/") + 1);
            for (let round = 0; round < 5; round++) {
              // Rotated names have 1 s resolution, as upstream's.
              await new Promise((r) => setTimeout(r, 1100));
              await rotation.rotateLogs();
              const size = (await Deno.stat(logPath)).size;
              assert.ok(size < maxSize, `round ${round}: live log is ${size} bytes after rotation`);
              const files = (await Array.fromAsync(Deno.readDir(dir))).filter((e) =>
                e.name.startsWith(base)
              );
              assert.ok(files.length <= maxFiles, `round ${round}: ${files.map((f) => f.name)}`);
            }
            const rotated = (await Array.fromAsync(Deno.readDir(dir)))
              .map((e) => e.name)
              .filter((n) => n.startsWith(`${base}.`))
              .sort();
            assert.equal(rotated.length, maxFiles - 1, `${rotated}`);
            assert.ok(
              rotated[0]!.endsWith(".gz"),
              `older rotated files are compressed: ${rotated}`,
            );
            // Every line from the oldest kept file to the live log is there, in order.
            let all = "";
            for (const n of rotated) {
              all += n.endsWith(".gz")
                ? await gunzip(`${dir}/${n}`)
                : await Deno.readTextFile(`${dir}/${n}`);
            }
            all += await Deno.readTextFile(logPath);
            const numbers = [...all.matchAll(/ stdout F n=(\d+) x+\n/g)].map((m) => Number(m[1]));
            // Only a log of at least maxSize is rotated, so each kept file holds that much.
            assert.ok(numbers.length > (2 * maxSize) / 120, `only ${numbers.length} lines`);
            for (let i = 1; i < numbers.length; i++) {
              assert.equal(numbers[i], numbers[0]! + i, `line ${numbers[0]! + i} lost`);
            }
            firstKept = numbers[0]!;
          } finally {
            await follow.cancel();
            await following;
          }
          assert.equal(followError, undefined);
          const seen = [...followed.matchAll(/^n=(\d+) x+$/gm)].map((m) => Number(m[1]));
          // The follow read lines the rotations have deleted since, and on into the kept files
          // (how many lines there are depends on how fast a loaded machine lets the writer go).
          assert.ok(firstKept > 0, "rotations deleted the oldest lines");
          assert.ok(
            seen.length > firstKept + maxSize / 120,
            `follow saw ${seen.length} lines; the kept files start at line ${firstKept}`,
          );
          assert.equal(seen[0], 0);
          for (let i = 1; i < seen.length; i++) {
            assert.equal(seen[i], i, `follow lost or repeated line ${i}`);
          }
          await remove(pod);
        },
      );
    } finally {
      runtime?.close();
      await rt.stop();
    }
  },
});
