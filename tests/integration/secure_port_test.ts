/**
 * The agent process's secure port (--port) without an apiserver: the flag
 * defaults serve it (anonymous, AlwaysAllow) with a self-signed certificate
 * under --cert-dir, and the config file's defaults (webhook modes) fail
 * start-up as upstream does when there is no client.
 */

import assert from "node:assert/strict";
import { requireRoot, startTestRuntime } from "../harness/mod.ts";
import { startAgent } from "./_agent.ts";

const dec = new TextDecoder();

async function curlK(port: number, path: string): Promise<{ status: number; body: string }> {
  const out = await new Deno.Command("curl", {
    args: ["-sSk", "-w", "\n%{http_code}", `https://127.0.0.1:${port}${path}`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = dec.decode(out.stdout);
  const nl = text.lastIndexOf("\n");
  return { status: Number(text.slice(nl + 1)), body: text.slice(0, nl) };
}

Deno.test({
  name:
    "secure port: flag defaults serve it anonymously; --config's webhook defaults need an apiserver",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    requireRoot();
    const rt = await startTestRuntime({ name: "secure-port" });
    try {
      await t.step(
        "flags only: anonymous and AlwaysAllow, as upstream's flag defaults",
        async () => {
          const agent = await startAgent({ runtime: rt });
          try {
            const pods = await curlK(agent.port, "/pods");
            assert.equal(pods.status, 200, pods.body);
            assert.equal(JSON.parse(pods.body).kind, "PodList");
            assert.deepEqual(await curlK(agent.port, "/healthz"), { status: 200, body: "ok" });
            // The stream handlers answer a plain GET as upstream's do: its options are checked
            // (400), then its pod (404); one that passes is refused for not upgrading (500,
            // lib/streaming's tests).
            assert.deepEqual(await curlK(agent.port, "/exec/default/x/y"), {
              status: 400,
              body: "you must specify at least 1 of stdin, stdout, stderr",
            });
            assert.deepEqual(await curlK(agent.port, "/attach/default/x/y?output=1"), {
              status: 404,
              body: "pod does not exist",
            });
            assert.deepEqual(await curlK(agent.port, "/portForward/default/x"), {
              status: 404,
              body: "pod does not exist",
            });
            const running = await curlK(agent.port, "/runningpods/");
            assert.equal(running.status, 200, running.body);
            assert.deepEqual(JSON.parse(running.body), {
              kind: "PodList",
              apiVersion: "v1",
              metadata: {},
              items: [],
            });
            const cert = await Deno.readTextFile(`${agent.rootDir}/pki/kubelet.crt`);
            assert.match(cert, /BEGIN CERTIFICATE/);
          } finally {
            await agent.stop();
            await agent.removeDirs();
          }
        },
      );

      await t.step(
        "--config without --kubeconfig: start-up fails naming the missing client",
        async () => {
          const dir = await Deno.makeTempDir();
          try {
            await Deno.writeTextFile(
              `${dir}/kubelet.yaml`,
              JSON.stringify({
                apiVersion: "kubelet.config.k8s.io/v1beta1",
                kind: "KubeletConfiguration",
              }),
            );
            await assert.rejects(
              startAgent({
                runtime: rt,
                rootDir: `${dir}/root`,
                manifestDir: `${dir}/manifests`,
                extraArgs: [`--config=${dir}/kubelet.yaml`],
              }),
              /exited with code 1[\s\S]*no client provided, cannot use webhook authentication/,
            );
          } finally {
            await Deno.remove(dir, { recursive: true });
          }
        },
      );
    } finally {
      await rt.stop();
    }
  },
});
