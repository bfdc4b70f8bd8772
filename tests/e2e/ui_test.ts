/**
 * The node page behind a real kube-apiserver: `kubectl proxy` to the
 * apiserver, which proxies `nodes/<node>/proxy/ui` to denolet's secure port
 * (authorised there as `nodes/proxy`); headless Chromium loads it from there,
 * so the page's relative `ui/data` requests go through both proxies too, and
 * it shows the registered Node and a pod created through the API.
 */

import assert from "node:assert/strict";
import { requireRoot } from "../harness/mod.ts";
import { runChromium, waitFor } from "../kit/mod.ts";
import { NODE, startNode } from "./_node.ts";

Deno.test({
  name: "node page through kubectl proxy and the apiserver's node proxy, in headless Chromium",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    requireRoot();
    const node = await startNode({ name: "ui" });
    const profile = await Deno.makeTempDir({ prefix: "denolet-ui-chromium-" });
    let proxy: Deno.ChildProcess | undefined;
    let reader: ReadableStreamDefaultReader<string> | undefined;
    try {
      const ns = await node.namespace();
      await node.runPod({
        metadata: { name: "api-web", namespace: ns },
        spec: {
          nodeName: NODE,
          terminationGracePeriodSeconds: 1,
          containers: [{
            name: "main",
            image: node.runtime.images.busybox,
            imagePullPolicy: "Never",
            command: ["sleep", "3600"],
            readinessProbe: { exec: { command: ["true"] }, periodSeconds: 1 },
          }],
        },
      });

      proxy = new Deno.Command(`${node.cluster.binDir}/kubectl`, {
        args: [`--kubeconfig=${node.cluster.adminKubeconfig}`, "proxy", "--port=0"],
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      // "Starting to serve on 127.0.0.1:PORT"
      reader = proxy.stdout.pipeThrough(new TextDecoderStream()).getReader();
      let banner = "";
      while (!/serve on [\d.]+:\d+/.test(banner)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`kubectl proxy ended: ${banner}`);
        banner += value;
      }
      const base = `http://${/serve on ([\d.]+:\d+)/.exec(banner)![1]}`;
      const page = `${base}/api/v1/nodes/${NODE}/proxy/ui`;

      const data = await waitFor("the pod on the node page's data", async () => {
        const resp = await fetch(`${page}/data`);
        const d = await resp.json();
        return d.pods?.some((p: { name: string }) => p.name === "api-web") ? d : undefined;
      }, { timeoutMs: 30_000, log: node.log });
      assert.equal(data.node.source, "apiserver", "the registered Node's status");

      const dom = await runChromium(page, {
        profile,
        args: ["--virtual-time-budget=6000", "--dump-dom"],
      });
      assert.match(dom, /<body[^>]* data-state="ready"/, `the page's script ran:\n${dom}`);
      assert.ok(dom.includes(`${ns}/api-web`), "the API pod is listed");
      assert.match(dom, /data-source="apiserver"/);
      assert.ok(dom.includes("(registered Node)"));
      assert.match(dom, /data-type="Ready"/);
      assert.match(dom, /data-type="Readiness" data-result="success"/);
    } finally {
      if (proxy) {
        proxy.kill("SIGTERM");
        await proxy.status;
        await reader?.cancel().catch(() => {});
        await proxy.stderr.cancel().catch(() => {});
      }
      await node.stop();
      await Deno.remove(profile, { recursive: true }).catch(() => {});
    }
  },
});
