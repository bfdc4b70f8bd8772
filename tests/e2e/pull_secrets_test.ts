/**
 * Through a real kube-apiserver: a pod's `imagePullSecrets` (a Secret made by
 * `kubectl create secret docker-registry`, or merged in from the namespace's service
 * account by the apiserver's ServiceAccount admission) let the node pull from a
 * registry on loopback that wants credentials, where a pod without them waits in
 * ErrImagePull/ImagePullBackOff; and `runtimeClassName`: the apiserver refuses an
 * unknown RuntimeClass and sets the pod's overhead, the node runs the sandbox with the
 * RuntimeClass's handler, and a handler containerd lacks leaves the pod Pending with
 * FailedCreatePodSandBox naming it (upstream's RuntimeClass e2e cases).
 */

import assert from "node:assert/strict";
import { buildTestImages, requireRoot, TEST_RUNTIME_HANDLER } from "../harness/mod.ts";
import type { Pod } from "../../lib/api/types.ts";
import { createRuntimeService } from "../../lib/cri/mod.ts";
import { waitFor } from "../kit/mod.ts";
import { startRegistry } from "../../tools/conformance/registry.ts";
import { pushImages } from "../../tools/conformance/images.ts";
import { NODE, startNode } from "./_node.ts";

const USER = "denolet";
const PASSWORD = "s3cret";
/** `htpasswd -nbB denolet s3cret` (see tests/integration/pull_secrets_test.ts). */
const HTPASSWD = `${USER}:$2b$05$denoletregistrytestsaeURlQgQkUwg/0JGxhePKCRz0Pty6ZCpu`;

Deno.test({
  name: "imagePullSecrets and runtimeClassName through the apiserver",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    requireRoot();
    const registry = await startRegistry({ htpasswd: HTPASSWD });
    const node = await startNode({
      name: "pullsecrets",
      plainHttpRegistries: { [registry.host]: registry.url },
    }).catch(async (err) => {
      await registry.stop();
      throw err;
    });
    try {
      const { cluster: c } = node;
      const image = `${registry.host}/denolet/private:1`;
      const { busybox } = await buildTestImages();
      await pushImages(registry.host, [{ name: "denolet/private:1", archive: busybox.archive }], {
        creds: `${USER}:${PASSWORD}`,
      });
      const ns = await node.namespace();
      const kubectl = async (args: string[], stdin?: string) => {
        const res = await c.kubectl(args, stdin === undefined ? {} : { stdin });
        assert.equal(res.code, 0, `kubectl ${args.join(" ")}: ${res.stderr}`);
        return res.stdout;
      };
      const pod = (name: string, spec: Partial<Pod["spec"]> = {}): Pod => ({
        metadata: { name, namespace: ns },
        spec: {
          nodeName: NODE,
          terminationGracePeriodSeconds: 1,
          containers: [{
            name: "main",
            image,
            imagePullPolicy: "Always",
            command: ["sleep", "3600"],
          }],
          ...spec,
        },
      });
      const getPod = (name: string) => c.kubectlJson<Pod>(["get", "pod", "-n", ns, name]);

      await t.step("without credentials: ErrImagePull / ImagePullBackOff, Pending", async () => {
        await kubectl(
          ["apply", "-f", "-"],
          JSON.stringify({ apiVersion: "v1", kind: "Pod", ...pod("nosecret") }),
        );
        const waiting = await waitFor("nosecret waiting on its image", async () => {
          const w = (await getPod("nosecret")).status?.containerStatuses?.[0]?.state.waiting;
          return w && /^(ErrImagePull|ImagePullBackOff)$/.test(w.reason ?? "") ? w : undefined;
        }, { timeoutMs: 60_000, log: node.log });
        assert.match(waiting.message ?? "", /401 Unauthorized|authorization failed|unauthorized/i);
        assert.equal((await getPod("nosecret")).status?.phase, "Pending");
      });

      await t.step("a docker-registry Secret named in imagePullSecrets: the pod runs", async () => {
        await kubectl([
          ...["create", "secret", "docker-registry", "regcred", "-n", ns],
          `--docker-server=${registry.host}`,
          `--docker-username=${USER}`,
          `--docker-password=${PASSWORD}`,
        ]);
        await node.runPod(pod("withsecret", { imagePullSecrets: [{ name: "regcred" }] }));
      });

      await t.step(
        "the service account's imagePullSecrets, merged by the apiserver: the pod runs",
        async () => {
          await kubectl([
            ...["patch", "serviceaccount", "default", "-n", ns, "--type=merge"],
            `-p=${JSON.stringify({ imagePullSecrets: [{ name: "regcred" }] })}`,
          ]);
          await node.runPod(pod("fromsa"));
          assert.deepEqual((await getPod("fromsa")).spec.imagePullSecrets, [{ name: "regcred" }]);
        },
      );

      const runtimeClass = (name: string, handler: string, overhead?: Record<string, string>) =>
        kubectl(
          ["apply", "-f", "-"],
          JSON.stringify({
            apiVersion: "node.k8s.io/v1",
            kind: "RuntimeClass",
            metadata: { name },
            handler,
            ...(overhead ? { overhead: { podFixed: overhead } } : {}),
          }),
        );
      const local = (name: string, runtimeClassName: string): Pod =>
        pod(name, {
          runtimeClassName,
          containers: [{
            name: "main",
            image: node.runtime.images.busybox,
            imagePullPolicy: "Never",
            command: ["sleep", "3600"],
          }],
        });

      await t.step("an unknown RuntimeClass: the apiserver refuses the pod", async () => {
        const res = await c.kubectl(["apply", "-f", "-"], {
          stdin: JSON.stringify({ apiVersion: "v1", kind: "Pod", ...local("norc", `${ns}-none`) }),
        });
        assert.notEqual(res.code, 0);
        assert.match(res.stderr, /forbidden/i);
      });

      await t.step(
        "a RuntimeClass with test-handler and overhead: its handler runs the sandbox",
        async () => {
          await runtimeClass(`${ns}-sandboxed`, TEST_RUNTIME_HANDLER, {
            cpu: "10m",
            memory: "1Mi",
          });
          await node.runPod(local("sandboxed", `${ns}-sandboxed`));
          const p = await getPod("sandboxed");
          // The apiserver's RuntimeClass admission copies the overhead into the pod.
          assert.deepEqual(p.spec.overhead, { cpu: "10m", memory: "1Mi" });
          const cri = createRuntimeService({ endpoint: node.runtime.endpoint, timeoutMs: 30_000 });
          try {
            const sandboxes = await cri.listPodSandbox({
              labelSelector: { "io.kubernetes.pod.uid": p.metadata.uid! },
            });
            assert.equal(sandboxes.length, 1);
            assert.equal(sandboxes[0]!.runtimeHandler, TEST_RUNTIME_HANDLER);
          } finally {
            cri.close();
          }
        },
      );

      await t.step(
        "a RuntimeClass whose handler containerd lacks: Pending, FailedCreatePodSandBox",
        async () => {
          const handler = `${ns}-handler`;
          await runtimeClass(`${ns}-unconfigured`, handler);
          await kubectl(
            ["apply", "-f", "-"],
            JSON.stringify({
              apiVersion: "v1",
              kind: "Pod",
              ...local("unconfigured", `${ns}-unconfigured`),
            }),
          );
          const events = await waitFor(
            "a FailedCreatePodSandBox event naming the handler",
            async () => {
              const got = await node.events(ns, "unconfigured", "FailedCreatePodSandBox");
              return got.some((e) => e.message?.includes(handler)) ? got : undefined;
            },
            { timeoutMs: 60_000, log: node.log },
          );
          assert.equal(events[0]!.type, "Warning");
          assert.equal((await getPod("unconfigured")).status?.phase, "Pending");
        },
      );
    } finally {
      await node.stop();
      await registry.stop();
    }
  },
});
