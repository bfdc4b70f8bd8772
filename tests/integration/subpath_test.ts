/**
 * volumeMounts' subPathExpr on a real containerd + runc, as upstream's
 * Variable Expansion conformance tests use it: the expression is expanded
 * from the container's env (a downward-API annotation included), the
 * subdirectory is made with the volume's mode and is what the container
 * sees; an unset variable, an absolute path or `..` fail the container with
 * CreateContainerConfigError and a Failed event, and a pod whose annotation
 * arrives later starts on the next sync. Needs root.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Pod, VolumeMount } from "../../lib/api/types.ts";
import { createRuntimeService } from "../../lib/cri/mod.ts";
import type { KubeRuntimeManager } from "../../lib/kuberuntime/mod.ts";
import { startTestRuntime } from "../harness/mod.ts";
import { runPod, testRuntimeManager } from "./_manager.ts";
import { hostNetworkPod, recordingEvents } from "../kit/mod.ts";

const SLEEP = ["sleep", "3600"];

/** A pod whose container "app" mounts the emptyDir "work" whole and at `subPathExpr`. */
function expansionPod(
  image: string,
  name: string,
  subPathExpr: string,
  podName: string,
  annotations?: Record<string, string>,
): Pod {
  const mounts: VolumeMount[] = [
    { name: "work", mountPath: "/subpath_mount", subPathExpr },
    { name: "work", mountPath: "/volume_mount" },
  ];
  return hostNetworkPod(image, {
    name,
    namespace: "subpath",
    ...(annotations ? { metadata: { annotations } } : {}),
    containers: [{
      name: "app",
      command: SLEEP,
      env: [
        { name: "POD_NAME", value: podName },
        {
          name: "ANNOTATION",
          valueFrom: { fieldRef: { fieldPath: "metadata.annotations['mysubpath']" } },
        },
      ],
      volumeMounts: mounts,
    }],
    spec: { volumes: [{ name: "work", emptyDir: {} }] },
  });
}

/** Syncs a pod once and returns the error its container "app" got. */
async function failedStart(manager: KubeRuntimeManager, pod: Pod, signal: AbortSignal) {
  const uid = pod.metadata.uid!;
  const res = await manager.syncPod(pod, await manager.getPodStatus(uid), signal);
  const status = await manager.getPodStatus(uid);
  assert.deepEqual(status.containers, [], "no container may be created");
  return res.lastErrors.get("app");
}

async function removePod(manager: KubeRuntimeManager, pod: Pod, signal: AbortSignal) {
  const uid = pod.metadata.uid!;
  await manager.killPod(pod, await manager.getPodStatus(uid), 0, signal);
  await manager.removePod(await manager.getPodStatus(uid), signal);
}

Deno.test({
  name: "subPathExpr on containerd: expanded from env and the downward API, or the container fails",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const rt = await startTestRuntime({ name: "subpath" });
    const runtime = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
    const signal = new AbortController().signal;
    try {
      const events = recordingEvents();
      const manager = testRuntimeManager(rt, runtime, { events });
      const image = rt.images.busybox;

      await t.step(
        "$(ANNOTATION)/$(POD_NAME) mounts <volume>/mypath/foo, made with the volume's mode",
        async () => {
          const p = expansionPod(image, "writes", "$(ANNOTATION)/$(POD_NAME)", "foo", {
            mysubpath: "mypath",
          });
          const { exec, read, cleanup } = await runPod(runtime, manager, p);
          try {
            const write = await exec("app", ["touch", "/volume_mount/mypath/foo/test.log"]);
            assert.equal(write.code, 0, write.err);
            assert.equal((await exec("app", ["test", "-f", "/subpath_mount/test.log"])).code, 0);
            // And the other way: what the container writes at the subPath lands there.
            assert.equal((await exec("app", ["sh", "-c", "echo hi > /subpath_mount/b"])).code, 0);
            assert.equal(await read("app", ["cat", "/volume_mount/mypath/foo/b"]), "hi\n");
            // An emptyDir is 0777; each directory the kubelet made for the subPath is too.
            assert.equal(
              await read("app", [
                "stat",
                "-c",
                "%a",
                "/volume_mount/mypath",
                "/volume_mount/mypath/foo",
              ]),
              "777\n777\n",
            );
          } finally {
            await cleanup();
          }
        },
      );

      await t.step(
        "an absolute path or .. from the env fails with CreateContainerConfigError and upstream's message",
        async () => {
          const cases: [string, string, string][] = [
            ["absolute", "/tmp", "error SubPath `/tmp` must not be an absolute path"],
            ["backsteps", "..", "unable to provision SubPath `..`: must not contain '..'"],
          ];
          for (const [name, value, message] of cases) {
            const p = expansionPod(image, name, "$(POD_NAME)", value);
            try {
              const err = await failedStart(manager, p, signal);
              assert.deepEqual(err, {
                reason: "CreateContainerConfigError",
                message:
                  `failed to generate the config of container "app" of pod "subpath/${name}": ` +
                  `volume "work" of container "app": ${message}`,
              });
              // Upstream's startContainer event, on the container (Pulled and MissingClusterDNS beside it).
              const failed = events.got.filter((e) =>
                e.ref.uid === p.metadata.uid && e.reason === "Failed"
              );
              assert.deepEqual(failed.map((e) => [e.type, e.ref.fieldPath]), [
                ["Warning", "spec.containers{app}"],
              ]);
              assert.equal(failed[0]!.message, `Error: ${err!.message}`);
            } finally {
              await removePod(manager, p, signal);
            }
          }
        },
      );

      await t.step(
        "a missing annotation fails the container; once the pod has it, the next sync starts it",
        async () => {
          const p = expansionPod(image, "later", "$(ANNOTATION)/$(POD_NAME)", "foo", {
            notmysubpath: "mypath",
          });
          try {
            const err = await failedStart(manager, p, signal);
            assert.equal(err?.reason, "CreateContainerConfigError");
            assert.match(err?.message ?? "", /: missing value for ANNOTATION$/);
            p.metadata.annotations = { ...p.metadata.annotations, mysubpath: "mypath" };
            const { read } = await runPod(runtime, manager, p);
            assert.equal(
              await read("app", [
                "sh",
                "-c",
                "echo x > /subpath_mount/f && ls /volume_mount/mypath/foo",
              ]),
              "f\n",
            );
          } finally {
            await removePod(manager, p, signal);
          }
        },
      );
    } finally {
      runtime.close();
      await rt.stop();
    }
  },
});
