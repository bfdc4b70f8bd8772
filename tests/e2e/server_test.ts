/**
 * The kubelet's secure port (--port) behind a real kube-apiserver: the
 * apiserver proxies `nodes/<node>/proxy/...` to it with its kubelet client
 * certificate (O=system:masters), denolet authenticates that certificate
 * against the cluster CA and asks the apiserver SubjectAccessReview; users
 * without RBAC are refused as upstream refuses them.
 */

import assert from "node:assert/strict";
import { requireRoot } from "../harness/mod.ts";
import type { Node } from "../../lib/api/cluster_types.ts";
import { waitFor } from "../kit/mod.ts";
import { makeCert, writeCa } from "./_pki.ts";
import { NODE, startNode } from "./_node.ts";

const dec = new TextDecoder();

interface CurlResult {
  status: number;
  body: string;
}

/** curl straight to the node's secure port (not through the apiserver); -k: the cert is self-signed. */
async function curl(port: number, path: string, args: string[] = []): Promise<CurlResult> {
  const out = await new Deno.Command("curl", {
    args: ["-sSk", "-w", "\n%{http_code}", ...args, `https://127.0.0.1:${port}${path}`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = dec.decode(out.stdout);
  const nl = text.lastIndexOf("\n");
  if (!out.success) throw new Error(`curl ${path}: ${dec.decode(out.stderr)}`);
  return { status: Number(text.slice(nl + 1)), body: text.slice(0, nl) };
}

/**
 * GETs `path` from the apiserver as a WebSocket (protocol binary.k8s.io, the admin
 * certificate) and returns the payloads of its binary frames up to the close frame.
 */
async function webSocketLog(apiserverUrl: string, clusterDir: string, path: string) {
  const admin = `${clusterDir}/pki/admin.pem`;
  const out = await new Deno.Command("curl", {
    args: [
      ...["-sSk", "--http1.1", "--max-time", "10", "--cert", admin, "--key", admin],
      ...["-H", "Connection: Upgrade", "-H", "Upgrade: websocket"],
      ...["-H", "Sec-WebSocket-Version: 13", "-H", "Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA=="],
      ...["-H", "Sec-WebSocket-Protocol: binary.k8s.io"],
      `${apiserverUrl}${path}`,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  // curl without WebSocket support hands over the frames as they came (a server's are unmasked).
  const bytes = out.stdout;
  let text = "";
  for (let i = 0; i + 1 < bytes.length;) {
    const opcode = bytes[i]! & 0x0f;
    let len = bytes[i + 1]! & 0x7f;
    let at = i + 2;
    if (len === 126) {
      len = (bytes[at]! << 8) | bytes[at + 1]!;
      at += 2;
    } else if (len === 127) {
      len = Number(new DataView(bytes.buffer, bytes.byteOffset + at, 8).getBigUint64(0));
      at += 8;
    }
    if (opcode === 0x8) return text;
    if (opcode === 0x2) text += dec.decode(bytes.subarray(at, at + len));
    i = at + len;
  }
  throw new Error(`no close frame from ${path}: ${dec.decode(out.stderr)}`);
}

/** One path per endpoint family and the subresources upstream asks SubjectAccessReview about. */
const FAMILIES: [string, string][] = [
  ["/stats/summary", "stats"],
  ["/metrics", "metrics"],
  ["/metrics/resource", "metrics"],
  ["/pods", "pods proxy"],
  ["/configz", "configz proxy"],
  ["/containerLogs/default/web/main", "proxy"],
  ["/logs/", "log"],
];

Deno.test({
  name: "denolet's secure port: kubectl get --raw through the apiserver, and 401/403 as upstream",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    requireRoot();
    const node = await startNode({
      name: "server",
      // The file's defaults: webhook authentication on, anonymous off, authorization Webhook.
      // A denial is cached this long: the RBAC grant below shows within it.
      config: { authorization: { webhook: { cacheUnauthorizedTTL: "2s" } } },
    });
    try {
      const { cluster: c, runtime: rt, port, nodeIP, scratch, log } = node;
      const raw = async (path: string) => {
        const res = await c.kubectl(["get", "--raw", `/api/v1/nodes/${NODE}/proxy${path}`]);
        assert.equal(res.code, 0, `kubectl get --raw ${path}: ${res.stderr}\n${log()}`);
        return res.stdout;
      };

      await t.step("the node advertises the secure port", async () => {
        const n = await c.kubectlJson<Node>(["get", "node", NODE]);
        const endpoints = n.status?.daemonEndpoints as
          | { kubeletEndpoint?: { Port?: number } }
          | undefined;
        assert.equal(endpoints?.kubeletEndpoint?.Port, port);
        const internal = n.status?.addresses?.find((x) => x.type === "InternalIP");
        assert.equal(internal?.address, nodeIP);
      });

      await t.step(
        "kubectl get --raw nodes/<node>/proxy/...: summary, pods, metrics, configz",
        async () => {
          const summary = await waitFor("a Summary with the node's stats", async () => {
            const s = JSON.parse(await raw("/stats/summary"));
            return s.node?.cpu ? s : undefined;
          }, { timeoutMs: 30_000, log });
          assert.equal(summary.node.nodeName, NODE);
          const pods = JSON.parse(await raw("/pods"));
          assert.equal(pods.kind, "PodList");
          assert.ok(Array.isArray(pods.items));
          assert.match(await raw("/metrics/resource"), /^node_cpu_usage_seconds_total /m);
          const configz = JSON.parse(await raw("/configz"));
          assert.equal(configz.kubeletconfig.port, port);
          assert.equal(configz.kubeletconfig.authorization.mode, "Webhook");
          assert.equal(configz.kubeletconfig.authentication.anonymous.enabled, false);
          assert.equal(await raw("/healthz"), "ok");
        },
      );

      await t.step(
        "anonymous, another CA's certificate, a token TokenReview rejects: 401",
        async () => {
          for (const [path] of FAMILIES) {
            assert.deepEqual(await curl(port, path), { status: 401, body: "Unauthorized" }, path);
          }
          const other = `${scratch}/other-ca`;
          await Deno.mkdir(other);
          await writeCa(other);
          await makeCert(other, "mallory", { subject: "/O=system:masters/CN=mallory" });
          const foreign = await curl(port, "/stats/summary", [
            ...["--cert", `${other}/mallory.crt`, "--key", `${other}/mallory.key`],
          ]);
          assert.deepEqual(foreign, { status: 401, body: "Unauthorized" });
          const bogus = await curl(port, "/stats/summary", [
            "-H",
            "Authorization: Bearer not-a-real-token",
          ]);
          assert.deepEqual(bogus, { status: 401, body: "Unauthorized" });
        },
      );

      const ns = `e2e-${crypto.randomUUID().slice(0, 8)}`;
      assert.equal((await c.kubectl(["create", "namespace", ns])).code, 0);
      const sa = `system:serviceaccount:${ns}:scraper`;
      let token = "";

      await t.step(
        "a user without RBAC: 403 on every endpoint family, with upstream's body",
        async () => {
          const created = await c.kubectl(["create", "serviceaccount", "scraper", "-n", ns]);
          assert.equal(created.code, 0, created.stderr);
          const tok = await c.kubectl(["create", "token", "scraper", "-n", ns]);
          assert.equal(tok.code, 0, tok.stderr);
          token = tok.stdout.trim();
          for (const [path, subresources] of FAMILIES) {
            const res = await curl(port, path, ["-H", `Authorization: Bearer ${token}`]);
            assert.deepEqual(res, {
              status: 403,
              body:
                `Forbidden (user=${sa}, verb=get, resource=nodes, subresource(s)=[${subresources}])\n`,
            }, path);
          }
          // A client certificate of the cluster CA for a user with no RBAC: authenticated, refused.
          await makeCert(`${c.dir}/pki`, "eve", { subject: "/CN=eve" });
          const eve = await curl(port, "/metrics", [
            ...["--cert", `${c.dir}/pki/eve.crt`, "--key", `${c.dir}/pki/eve.key`],
          ]);
          assert.deepEqual(eve, {
            status: 403,
            body: "Forbidden (user=eve, verb=get, resource=nodes, subresource(s)=[metrics])\n",
          });
        },
      );

      await t.step(
        "after a ClusterRole with nodes/stats get is bound: 200 on /stats/summary",
        async () => {
          const role = await c.kubectl([
            ...["create", "clusterrole", `${ns}-stats`, "--verb=get", "--resource=nodes/stats"],
          ]);
          assert.equal(role.code, 0, role.stderr);
          const binding = await c.kubectl([
            ...["create", "clusterrolebinding", `${ns}-stats`, `--clusterrole=${ns}-stats`],
            `--serviceaccount=${ns}:scraper`,
          ]);
          assert.equal(binding.code, 0, binding.stderr);
          const ok = await waitFor("the service account's /stats/summary allowed", async () => {
            const res = await curl(port, "/stats/summary", [
              "-H",
              `Authorization: Bearer ${token}`,
            ]);
            return res.status === 200 ? res : undefined;
          }, { timeoutMs: 30_000, log });
          assert.equal(JSON.parse(ok.body).node.nodeName, NODE);
          const metrics = await curl(port, "/metrics", ["-H", `Authorization: Bearer ${token}`]);
          assert.equal(metrics.status, 403, "nodes/stats does not grant nodes/metrics");
        },
      );

      await t.step(
        "kubectl logs through the apiserver: plain, --tail, --since, --since-time, --timestamps, --previous, -f",
        async () => {
          // The first run logs three lines and fails; the restarted one logs three more and stays.
          const script = [
            "n=$(cat /data/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /data/n",
            "for i in 1 2 3; do echo run$n-line$i; done",
            "[ $n -ge 2 ] || exit 1",
            "sleep 3600",
          ].join("; ");
          const created = await c.kubectl(["apply", "-f", "-"], {
            stdin: JSON.stringify({
              apiVersion: "v1",
              kind: "Pod",
              metadata: { name: "logger", namespace: ns },
              spec: {
                nodeName: NODE,
                terminationGracePeriodSeconds: 1,
                automountServiceAccountToken: false,
                containers: [{
                  name: "main",
                  image: rt.images.busybox,
                  imagePullPolicy: "Never",
                  command: ["sh", "-c", script],
                  volumeMounts: [{ name: "data", mountPath: "/data" }],
                }],
                volumes: [{ name: "data", emptyDir: {} }],
              },
            }),
          });
          assert.equal(created.code, 0, created.stderr);
          const logs = (...args: string[]) => c.kubectl(["logs", "-n", ns, "logger", ...args]);
          const current = await waitFor("the restarted container's three lines", async () => {
            const res = await logs();
            return res.code === 0 && res.stdout.includes("run2-line3") ? res.stdout : undefined;
          }, { timeoutMs: 60_000, log });
          assert.equal(current, "run2-line1\nrun2-line2\nrun2-line3\n");
          // Over a WebSocket, as upstream's Conformance "Pods should support retrieving logs
          // from the container over websockets" reads it: the apiserver copies the body itself.
          assert.equal(
            await webSocketLog(c.apiserverUrl, c.dir, `/api/v1/namespaces/${ns}/pods/logger/log`),
            current,
          );
          assert.equal((await logs("--tail=1")).stdout, "run2-line3\n");
          assert.equal((await logs("--since=1h")).stdout, current);
          // Lines stamped before sinceTime are left out: an hour ahead leaves none.
          const ahead = new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d+Z$/, "Z");
          const none = await logs(`--since-time=${ahead}`);
          assert.equal(none.code, 0, none.stderr);
          assert.equal(none.stdout, "");
          assert.equal(
            (await logs("--previous")).stdout,
            "run1-line1\nrun1-line2\nrun1-line3\n",
          );
          const stamped = (await logs("--timestamps", "--tail=2")).stdout.trimEnd().split("\n");
          assert.equal(stamped.length, 2);
          for (const line of stamped) {
            assert.match(line, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z run2-line[23]$/);
          }
          // -f keeps the stream open (the container sleeps); the request timeout ends it.
          const followed = await c.kubectl([
            ...["--request-timeout=3s", "logs", "-f", "--tail=1", "-n", ns, "logger"],
          ]);
          assert.match(followed.stdout, /^run2-line3\n/);
          const unknown = await logs("-c", "nope");
          assert.notEqual(unknown.code, 0);
        },
      );

      await t.step(
        "kubectl exec through the apiserver: output, exit code, stdin",
        async () => {
          const exec = (args: string[], stdin?: string) =>
            c.kubectl(
              ["exec", ...(stdin === undefined ? [] : ["-i"]), "-n", ns, "logger", "--", ...args],
              stdin === undefined ? {} : { stdin },
            );
          const ok = await exec(["sh", "-c", "echo hi; echo oops >&2"]);
          assert.equal(ok.code, 0, ok.stderr);
          assert.equal(ok.stdout, "hi\n");
          assert.match(ok.stderr, /oops/);
          const failed = await exec(["sh", "-c", "exit 3"]);
          assert.equal(failed.code, 3, `kubectl exec exit code: ${failed.stderr}`);
          const echoed = await exec(["cat"], "hello from stdin\n");
          assert.equal(echoed.code, 0, echoed.stderr);
          assert.equal(echoed.stdout, "hello from stdin\n");
          const missing = await c.kubectl(["exec", "-n", ns, "logger", "-c", "nope", "--", "true"]);
          assert.notEqual(missing.code, 0);
        },
      );

      await t.step(
        "the self-signed kubelet.crt/kubelet.key under --cert-dir are reused on restart",
        async () => {
          const pki = `${node.agent.rootDir}/pki`;
          const cert = await Deno.readFile(`${pki}/kubelet.crt`);
          const key = await Deno.readFile(`${pki}/kubelet.key`);
          assert.match(node.log(), /Generated self-signed serving certificate/);
          const b = await node.restartAgent();
          assert.deepEqual(await Deno.readFile(`${pki}/kubelet.crt`), cert);
          assert.deepEqual(await Deno.readFile(`${pki}/kubelet.key`), key);
          assert.doesNotMatch(b.log(), /Generated self-signed serving certificate/);
          const served = await new Deno.Command("openssl", {
            args: ["s_client", "-connect", `127.0.0.1:${port}`, "-showcerts"],
            stdin: "null",
            stdout: "piped",
            stderr: "null",
          }).output();
          const leaf = dec.decode(served.stdout).match(
            /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/,
          )?.[0];
          assert.ok(leaf, "openssl s_client saw a certificate");
          assert.ok(dec.decode(cert).includes(leaf), "the port serves kubelet.crt");
          await waitFor("kubectl get --raw after the restart", async () => {
            const res = await c.kubectl(["get", "--raw", `/api/v1/nodes/${NODE}/proxy/healthz`]);
            return res.code === 0 && res.stdout === "ok";
          }, { timeoutMs: 30_000, log: () => b.log() });
        },
      );
    } finally {
      await node.stop();
    }
  },
});
