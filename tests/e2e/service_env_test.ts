/**
 * Service environment variables through a real kube-apiserver, as upstream's
 * conformance test checks them (test/e2e/common/node/pods.go "should contain
 * environment variables for services": a Service created, then a pod whose
 * env has `FOOSERVICE_SERVICE_HOST` and the docker-link variables), plus
 * `enableServiceLinks: false` (only the `kubernetes` Service's variables), a
 * headless Service (none), the container's own env winning over a service
 * variable and referring to one with `$(VAR)`.
 */

import assert from "node:assert/strict";
import type { Service } from "../../lib/api/cluster_types.ts";
import type { Pod } from "../../lib/api/types.ts";
import { requireRoot } from "../harness/mod.ts";
import { NODE, startNode } from "./_node.ts";

Deno.test({
  name: "service env vars: the namespace's Services and the kubernetes Service reach containers",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    requireRoot();
    const node = await startNode({ name: "svcenv" });
    try {
      const { cluster: c, runtime: rt, log } = node;
      const ns = await node.namespace();
      const apply = async (obj: Record<string, unknown>) => {
        const res = await c.kubectl(["apply", "-f", "-"], { stdin: JSON.stringify(obj) });
        assert.equal(res.code, 0, `kubectl apply: ${res.stderr}`);
      };
      const createService = async (name: string, spec: Record<string, unknown>) => {
        await apply({ apiVersion: "v1", kind: "Service", metadata: { name, namespace: ns }, spec });
        return await c.kubectlJson<Service>(["get", "service", "-n", ns, name]);
      };
      const run = async (name: string, spec: Partial<Pod["spec"]> = {}) => {
        await node.runPod({
          metadata: { name, namespace: ns },
          spec: {
            nodeName: NODE,
            terminationGracePeriodSeconds: 1,
            containers: [{
              name: "c",
              image: rt.images.busybox,
              imagePullPolicy: "Never",
              command: ["sleep", "3600"],
              env: [
                { name: "FOOSERVICE_PORT", value: "mine" },
                {
                  name: "FOO_ADDRESS",
                  value: "$(FOOSERVICE_SERVICE_HOST):$(FOOSERVICE_SERVICE_PORT)",
                },
              ],
            }],
            ...spec,
          },
        });
        const res = await c.kubectl(["exec", "-n", ns, name, "-c", "c", "--", "env"]);
        assert.equal(res.code, 0, `kubectl exec ${name} env: ${res.stderr}\n${log()}`);
        return new Map(
          res.stdout.trim().split("\n").map((
            l,
          ) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
        );
      };
      const kubernetes = await c.kubectlJson<Service>([
        "get",
        "service",
        "-n",
        "default",
        "kubernetes",
      ]);
      const kubeIP = kubernetes.spec.clusterIP!;
      const kubePort = kubernetes.spec.ports![0]!.port;

      // The conformance test's service: port 8765 to the server's 8080.
      const foo = await createService("fooservice", {
        selector: { name: "server" },
        ports: [{ port: 8765, targetPort: 8080 }],
      });
      await createService("headless", {
        clusterIP: "None",
        selector: { name: "server" },
        ports: [{ port: 80 }],
      });
      const fooIP = foo.spec.clusterIP!;

      await t.step("a pod created right after the Service has its variables", async () => {
        const env = await run("links");
        assert.equal(env.get("FOOSERVICE_SERVICE_HOST"), fooIP, `env: ${[...env]}`);
        assert.equal(env.get("FOOSERVICE_SERVICE_PORT"), "8765");
        assert.equal(env.get("FOOSERVICE_PORT_8765_TCP"), `tcp://${fooIP}:8765`);
        assert.equal(env.get("FOOSERVICE_PORT_8765_TCP_PROTO"), "tcp");
        assert.equal(env.get("FOOSERVICE_PORT_8765_TCP_PORT"), "8765");
        assert.equal(env.get("FOOSERVICE_PORT_8765_TCP_ADDR"), fooIP);
        // The container's own definition wins; its $(VAR) sees the service variables.
        assert.equal(env.get("FOOSERVICE_PORT"), "mine");
        assert.equal(env.get("FOO_ADDRESS"), `${fooIP}:8765`);
        assert.equal(env.get("KUBERNETES_SERVICE_HOST"), kubeIP);
        assert.equal(env.get("KUBERNETES_SERVICE_PORT"), String(kubePort));
        assert.equal(env.get("KUBERNETES_SERVICE_PORT_HTTPS"), String(kubePort));
        // A headless Service has no address to give.
        assert.equal(env.has("HEADLESS_SERVICE_HOST"), false);
      });

      await t.step(
        "a Service created after the namespace's first pod reaches the next pod at once",
        async () => {
          const bar = await createService("bar-service", {
            ports: [{ port: 9000, protocol: "UDP" }],
          });
          const env = await run("links-later");
          assert.equal(env.get("BAR_SERVICE_SERVICE_HOST"), bar.spec.clusterIP, `env: ${[...env]}`);
          assert.equal(env.get("BAR_SERVICE_PORT"), `udp://${bar.spec.clusterIP}:9000`);
          assert.equal(env.get("FOOSERVICE_SERVICE_HOST"), fooIP);
        },
      );

      await t.step(
        "enableServiceLinks: false leaves only the kubernetes Service's variables",
        async () => {
          const env = await run("no-links", { enableServiceLinks: false });
          assert.equal(env.has("FOOSERVICE_SERVICE_HOST"), false, `env: ${[...env]}`);
          assert.equal(env.has("BAR_SERVICE_SERVICE_HOST"), false);
          // Without the variable, the reference stays as written.
          assert.equal(
            env.get("FOO_ADDRESS"),
            "$(FOOSERVICE_SERVICE_HOST):$(FOOSERVICE_SERVICE_PORT)",
          );
          assert.equal(env.get("KUBERNETES_SERVICE_HOST"), kubeIP);
          assert.equal(env.get("KUBERNETES_PORT"), `tcp://${kubeIP}:${kubePort}`);
        },
      );
    } finally {
      await node.stop();
    }
  },
});
