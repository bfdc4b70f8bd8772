/**
 * A stopped container's termination message, as upstream's kubelet reads it
 * (kuberuntime_container.go getTerminationMessage and
 * readLastStringFromContainerLogs), and the pod-wide budget the status
 * manager cuts it to (normalizeStatus). Real files in a temp dir; the CRI
 * statuses are built here.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { ContainerStatus as CriContainerStatus } from "../../lib/cri/types.ts";
import { ContainerState } from "../../lib/cri/types.ts";
import { Annotations, terminationMessage } from "../../lib/kuberuntime/mod.ts";
import { readLogTail } from "../../lib/logs/mod.ts";
import { normalizeStatus } from "../../lib/status/_status_rules.ts";
import type { Pod, PodStatus } from "../../lib/api/types.ts";
import { withTempDir } from "../kit/mod.ts";

/** An exited container with its termination-log file mounted at /dev/termination-log. */
function exited(
  dir: string,
  o: Partial<CriContainerStatus> & { policy?: string; path?: string } = {},
): CriContainerStatus {
  const { policy = "File", path = "/dev/termination-log", ...rest } = o;
  return {
    id: "c1",
    metadata: { name: "app", attempt: 0 },
    state: ContainerState.CONTAINER_EXITED,
    createdAt: 1,
    startedAt: 2,
    finishedAt: 3,
    exitCode: 0,
    image: { image: "busybox" },
    imageRef: "sha256:1",
    reason: "Completed",
    message: "",
    labels: {},
    annotations: {
      [Annotations.terminationMessagePath]: path,
      [Annotations.terminationMessagePolicy]: policy,
    },
    mounts: [{ containerPath: path, hostPath: `${dir}/termination-log` }],
    logPath: `${dir}/0.log`,
    ...rest,
  };
}

/** A CRI log holding `lines` on stdout, each a full line. */
async function writeLog(dir: string, lines: string[]): Promise<void> {
  const text = lines.map((l) => `2026-12-01T00:00:00.000000000Z stdout F ${l}\n`).join("");
  await Deno.writeTextFile(`${dir}/0.log`, text);
}

Deno.test("terminationMessage() reads the file mounted at terminationMessagePath", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/termination-log`, "DONE");
    assert.equal(await terminationMessage(exited(dir), readLogTail), "DONE");
    // A non-default path works the same way: the mount is found by its container path.
    const custom = exited(dir, { path: "/dev/termination-custom-log" });
    assert.equal(await terminationMessage(custom, readLogTail), "DONE");
  });
});

Deno.test("terminationMessage() keeps the last 4096 bytes of a longer file", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/termination-log`, "x".repeat(5000) + "y".repeat(4000));
    const msg = await terminationMessage(exited(dir), readLogTail);
    assert.equal(msg.length, 4096);
    assert.equal(msg, "x".repeat(96) + "y".repeat(4000));
  });
});

Deno.test("terminationMessage() puts the runtime's message first", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/termination-log`, "bye");
    const status = exited(dir, { exitCode: 128, reason: "StartError", message: "exec failed" });
    assert.equal(await terminationMessage(status, readLogTail), "exec failed: bye");
    await Deno.writeTextFile(`${dir}/termination-log`, "");
    assert.equal(await terminationMessage(status, readLogTail), "exec failed");
  });
});

Deno.test("terminationMessage() leaves a running container's message alone", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/termination-log`, "not yet");
    const running = exited(dir, { state: ContainerState.CONTAINER_RUNNING });
    assert.equal(await terminationMessage(running, readLogTail), "");
  });
});

Deno.test("terminationMessage() with FallbackToLogsOnError reads the log of a failed container only", async () => {
  await withTempDir(async (dir) => {
    await writeLog(dir, ["DONE"]);
    const failed = exited(dir, { policy: "FallbackToLogsOnError", exitCode: 1, reason: "Error" });
    // No termination-log file at all: the log speaks.
    assert.equal(await terminationMessage(failed, readLogTail), "DONE\n");
    // An empty file: the log too.
    await Deno.writeTextFile(`${dir}/termination-log`, "");
    assert.equal(await terminationMessage(failed, readLogTail), "DONE\n");
    // A succeeded container's log is never its message.
    const succeeded = exited(dir, { policy: "FallbackToLogsOnError" });
    assert.equal(await terminationMessage(succeeded, readLogTail), "");
    // Nor is the log of one that could not even run.
    const cannotRun = exited(dir, {
      policy: "FallbackToLogsOnError",
      exitCode: 128,
      reason: "ContainerCannotRun",
    });
    assert.equal(await terminationMessage(cannotRun, readLogTail), "");
    // The file wins when the container wrote to it.
    await Deno.writeTextFile(`${dir}/termination-log`, "OK");
    assert.equal(await terminationMessage(failed, readLogTail), "OK");
  });
});

Deno.test("terminationMessage() from the log takes the last 80 lines, at most 2048 bytes", async () => {
  await withTempDir(async (dir) => {
    const failed = exited(dir, { policy: "FallbackToLogsOnError", exitCode: 2, reason: "Error" });
    await writeLog(dir, Array.from({ length: 100 }, (_, i) => `line ${i}`));
    const tail = await terminationMessage(failed, readLogTail);
    assert.equal(tail, Array.from({ length: 80 }, (_, i) => `line ${i + 20}\n`).join(""));
    await writeLog(dir, Array.from({ length: 50 }, (_, i) => `${i}`.padStart(99, "-")));
    const cut = await terminationMessage(failed, readLogTail);
    assert.equal(new TextEncoder().encode(cut).length, 2048);
    assert.ok(cut.endsWith("-49\n"), cut.slice(-10));
  });
});

Deno.test("terminationMessage() reports a log it cannot read, as upstream words it", async () => {
  await withTempDir(async (dir) => {
    const failed = exited(dir, { policy: "FallbackToLogsOnError", exitCode: 1, reason: "Error" });
    const msg = await terminationMessage(failed, readLogTail);
    assert.match(msg, /^Error on reading termination message from logs: failed to open log file /);
  });
});

function podWith(containers: number): Pod {
  return {
    metadata: { name: "p", namespace: "default", uid: "u" },
    spec: { containers: Array.from({ length: containers }, (_, i) => ({ name: `c${i}` })) },
  };
}

Deno.test("normalizeStatus() cuts each message to the pod's share of 12 KiB, in bytes", () => {
  // Three containers: 4096 bytes each. "é" is two bytes in UTF-8.
  const long = "é".repeat(3000);
  const status: PodStatus = {
    containerStatuses: ["c0", "c1", "c2"].map((name) => ({
      name,
      ready: false,
      restartCount: 0,
      image: "",
      imageID: "",
      state: { terminated: { exitCode: 1, message: long } },
      lastState: { terminated: { exitCode: 1, message: "short" } },
    })),
  };
  normalizeStatus(podWith(3), status);
  for (const s of status.containerStatuses!) {
    assert.equal(s.state.terminated?.message, "é".repeat(2048));
    assert.equal(s.lastState.terminated?.message, "short");
  }
  // An odd budget splits a character: it is dropped whole, and a second pass changes nothing.
  const seven: PodStatus = {
    containerStatuses: [{
      name: "c0",
      ready: false,
      restartCount: 0,
      image: "",
      imageID: "",
      state: { terminated: { exitCode: 1, message: "é".repeat(3000) } },
      lastState: {},
    }],
  };
  const pod = podWith(7); // 12288 / 7 = 1755 bytes
  normalizeStatus(pod, seven);
  const once = seven.containerStatuses![0]!.state.terminated!.message!;
  assert.equal(once, "é".repeat(877));
  normalizeStatus(pod, seven);
  assert.equal(seven.containerStatuses![0]!.state.terminated!.message, once);
});
