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
        "--enable-debugging-handlers=false: 405 on the secure port's debugging paths (upgrades too), no /configz",
        async () => {
          const agent = await startAgent({
            runtime: rt,
            extraArgs: ["--enable-debugging-handlers=false"],
          });
          try {
            const disabled = { status: 405, body: "Debug endpoints are disabled.\n" };
            for (
              const path of ["/exec/default/x/y?output=1", "/containerLogs/default/x/y", "/logs/"]
            ) {
              assert.deepEqual(await curlK(agent.port, path), disabled, path);
            }
            assert.equal((await curlK(agent.port, "/configz")).status, 404);
            assert.equal((await curlK(agent.port, "/pods")).status, 200);
            assert.doesNotMatch(agent.log(), /--enable-debugging-handlers is not implemented/);
            // An upgrade is refused the same way, before any runtime call.
            const ws = await new Deno.Command("curl", {
              args: [
                ...["-sSk", "-w", "\n%{http_code}", "--http1.1"],
                ...["-H", "Connection: Upgrade", "-H", "Upgrade: websocket"],
                ...[
                  "-H",
                  "Sec-WebSocket-Version: 13",
                  "-H",
                  "Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==",
                ],
                `https://127.0.0.1:${agent.port}/exec/default/x/y?output=1`,
              ],
              stdout: "piped",
            }).output();
            assert.equal(dec.decode(ws.stdout), "Debug endpoints are disabled.\n\n405");
          } finally {
            await agent.stop();
            await agent.removeDirs();
          }
        },
      );

      await t.step(
        "the read-only port: no /configz, 405 on the debugging paths as upstream's",
        async () => {
          const agent = await startAgent({ runtime: rt });
          try {
            const ro = async (path: string) => {
              const res = await fetch(`http://127.0.0.1:${agent.readOnlyPort}${path}`);
              return { status: res.status, body: await res.text() };
            };
            assert.equal((await ro("/configz")).status, 404);
            assert.deepEqual(await ro("/exec/default/x/y"), {
              status: 405,
              body: "Debug endpoints are disabled.\n",
            });
            assert.equal((await ro("/pods")).status, 200);
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
