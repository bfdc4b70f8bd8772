/**
 * `imagePullSecrets` against a real containerd pulling from a registry on loopback
 * that wants credentials (Debian's docker-registry behind htpasswd): without a
 * secret the pull fails with ErrImagePull (then ImagePullBackOff carrying the
 * error), a missing secret adds FailedToRetrieveImagePullSecret, and with a
 * dockerconfigjson or a legacy dockercfg Secret for the registry, or with the node's
 * own `<root-dir>/config.json`, the pod runs.
 * Needs root.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Secret } from "../../lib/api/cluster_types.ts";
import type { Pod } from "../../lib/api/types.ts";
import { createRuntimeService, type RuntimeService } from "../../lib/cri/mod.ts";
import { buildTestImages, startTestRuntime } from "../harness/mod.ts";
import { startRegistry } from "../../tools/conformance/registry.ts";
import { pushImages } from "../../tools/conformance/images.ts";
import { runPod, testRuntimeManager } from "./_manager.ts";
import { FakePodObjects, hostNetworkPod, recordingEvents } from "../kit/mod.ts";

const USER = "denolet";
const PASSWORD = "s3cret";
/**
 * `htpasswd -nbB denolet s3cret` (apache2-utils is not on these machines; the same
 * bcrypt hash came from `perl -e 'print crypt("s3cret", q($2b$05$) . "denoletregistrytestsal")'`).
 */
const HTPASSWD = `${USER}:$2b$05$denoletregistrytestsaeURlQgQkUwg/0JGxhePKCRz0Pty6ZCpu`;

function pullSecret(name: string, type: "json" | "legacy", registry: string): Secret {
  const entries = { [registry]: { auth: btoa(`${USER}:${PASSWORD}`) } };
  return type === "json"
    ? {
      metadata: { name, namespace: "default" },
      type: "kubernetes.io/dockerconfigjson",
      data: { ".dockerconfigjson": btoa(JSON.stringify({ auths: entries })) },
    }
    : {
      metadata: { name, namespace: "default" },
      type: "kubernetes.io/dockercfg",
      data: { ".dockercfg": btoa(JSON.stringify(entries)) },
    };
}

Deno.test({
  name: "imagePullSecrets: a registry that wants credentials gets them from the pod's secrets",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const registry = await startRegistry({ htpasswd: HTPASSWD });
    let runtime: RuntimeService | undefined;
    const rt = await startTestRuntime({
      name: "pullsecrets",
      plainHttpRegistries: { [registry.host]: registry.url },
    }).catch(async (err) => {
      await registry.stop();
      throw err;
    });
    try {
      const image = `${registry.host}/denolet/private:1`;
      const { busybox } = await buildTestImages();
      await pushImages(registry.host, [{ name: "denolet/private:1", archive: busybox.archive }], {
        creds: `${USER}:${PASSWORD}`,
      });
      runtime = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
      const objects = new FakePodObjects();
      const events = recordingEvents();
      const manager = testRuntimeManager(rt, runtime, { objects, events });
      const podOf = (name: string, secrets: string[]): Pod =>
        hostNetworkPod(image, {
          name,
          containers: [{ name: "main", imagePullPolicy: "Always", command: ["sleep", "3600"] }],
          spec: { imagePullSecrets: secrets.map((s) => ({ name: s })) },
        });
      const signal = new AbortController().signal;

      await t.step(
        "without a secret: ErrImagePull with containerd's error, then backoff",
        async () => {
          const pod = podOf("nosecret", ["absent"]);
          const uid = pod.metadata.uid!;
          const first = await manager.syncPod(pod, await manager.getPodStatus(uid), signal);
          const failed = first.steps.find((s) => s.action === "StartContainer")?.error;
          assert.equal(failed?.reason, "ErrImagePull");
          assert.match(failed!.message, /401 Unauthorized|authorization failed|unauthorized/i);
          assert.doesNotMatch(failed!.message, /^Failed to pull image/);
          // The named secret was not there and the pull failed: upstream's event says so.
          const missing = events.got.filter((e) => e.reason === "FailedToRetrieveImagePullSecret");
          assert.deepEqual(missing.map((e) => [e.type, e.message, e.ref.name]), [[
            "Warning",
            "Unable to retrieve some image pull secrets (absent); attempting to pull the image may not succeed.",
            "nosecret",
          ]]);
          const second = await manager.syncPod(pod, await manager.getPodStatus(uid), signal);
          const held = second.steps.find((s) => s.action === "StartContainer")?.error;
          assert.equal(held?.reason, "ImagePullBackOff");
          assert.equal(
            held?.message,
            `Back-off pulling image "${image}": ErrImagePull: ${failed!.message}`,
          );
          // A sync held back by backoff pulled nothing, so no second event.
          assert.equal(
            events.got.filter((e) => e.reason === "FailedToRetrieveImagePullSecret").length,
            1,
          );
          const status = await manager.getPodStatus(uid);
          assert.equal(status.containers.length, 0);
          await manager.killPod(pod, status, 0, signal);
          await manager.removePod(await manager.getPodStatus(uid), signal);
        },
      );

      await t.step("a secret for another registry: still ErrImagePull", async () => {
        objects.secrets.set("default/elsewhere", pullSecret("elsewhere", "json", "127.0.0.1:1"));
        const pod = podOf("elsewhere", ["elsewhere"]);
        const uid = pod.metadata.uid!;
        const res = await manager.syncPod(pod, await manager.getPodStatus(uid), signal);
        assert.equal(
          res.steps.find((s) => s.action === "StartContainer")?.error?.reason,
          "ErrImagePull",
        );
        const status = await manager.getPodStatus(uid);
        await manager.killPod(pod, status, 0, signal);
        await manager.removePod(await manager.getPodStatus(uid), signal);
      });

      await t.step("a dockerconfigjson secret for the registry: the pod runs", async () => {
        objects.secrets.set("default/regcred", pullSecret("regcred", "json", registry.host));
        const pod = podOf("withsecret", ["absent", "elsewhere", "regcred"]);
        const running = await runPod(runtime!, manager, pod);
        assert.equal(await running.read("main", ["cat", "/proc/1/cmdline"]), "sleep\x003600\x00");
        await running.cleanup();
      });

      await t.step(
        "a legacy dockercfg secret (registry key with scheme and /v2/): the pod runs",
        async () => {
          objects.secrets.set(
            "default/legacy",
            pullSecret("legacy", "legacy", `http://${registry.host}/v2/`),
          );
          const pod = podOf("legacysecret", ["legacy"]);
          const running = await runPod(runtime!, manager, pod);
          assert.equal(running.status.containers[0]?.state, "running");
          await running.cleanup();
        },
      );

      await t.step("no secret, but the node's <root-dir>/config.json: the pod runs", async () => {
        const rootDir = `${rt.dir}/kubelet-node-creds`;
        await Deno.mkdir(rootDir, { recursive: true });
        await Deno.writeTextFile(
          `${rootDir}/config.json`,
          JSON.stringify({ auths: { [registry.host]: { auth: btoa(`${USER}:${PASSWORD}`) } } }),
        );
        const nodeManager = testRuntimeManager(rt, runtime!, { objects, events, rootDir });
        const running = await runPod(runtime!, nodeManager, podOf("nodecreds", []));
        assert.equal(running.status.containers[0]?.state, "running");
        await running.cleanup();
      });
    } finally {
      runtime?.close();
      await rt.stop();
      await registry.stop();
    }
  },
});
