/**
 * Smoke tests of the e2e harness itself: one control plane shared by the tests of this
 * file (started by the first, stopped by the last), checked the way a user would, with
 * kubectl.
 */

import assert from "node:assert/strict";
import { isAlive } from "../harness/_exec.ts";
import { type Cluster, SERVICE_ACCOUNT_ISSUER, startCluster } from "./_cluster.ts";
import { waitFor } from "../kit/mod.ts";

let started: Promise<Cluster> | undefined;

/** The shared cluster, started on first use. */
function cluster(): Promise<Cluster> {
  started ??= (async () => {
    const t0 = Date.now();
    const c = await startCluster();
    console.log(`control plane ready in ${((Date.now() - t0) / 1000).toFixed(1)} s (${c.dir})`);
    return c;
  })();
  return started;
}

function node(name: string): string {
  return JSON.stringify({ apiVersion: "v1", kind: "Node", metadata: { name } });
}

interface Named {
  metadata: { name: string };
}

Deno.test("startCluster() serves /readyz and the built kube-apiserver version", async () => {
  const c = await cluster();
  const readyz = await c.kubectl(["get", "--raw", "/readyz"]);
  assert.equal(readyz.code, 0, readyz.stderr);
  assert.equal(readyz.stdout.trim(), "ok");
  const version = await c.kubectlJson<{ serverVersion: { gitVersion: string } }>(["version"]);
  const wanted = c.binDir.split("/").at(-1);
  assert.equal(version.serverVersion.gitVersion, wanted);
  assert.match(c.apiserverUrl, /^https:\/\/127\.0\.0\.1:\d+$/);
});

Deno.test("startCluster() gives a new namespace its default ServiceAccount and kube-root-ca.crt", async () => {
  const c = await cluster();
  const created = await c.kubectl(["create", "namespace", "e2e-smoke"]);
  assert.equal(created.code, 0, created.stderr);
  await waitFor(
    "ServiceAccount e2e-smoke/default",
    async () =>
      (await c.kubectl(["-n", "e2e-smoke", "get", "serviceaccount", "default"])).code === 0,
  );
  await waitFor(
    "ConfigMap e2e-smoke/kube-root-ca.crt",
    async () =>
      (await c.kubectl(["-n", "e2e-smoke", "get", "configmap", "kube-root-ca.crt"])).code === 0,
  );
  const cm = await c.kubectlJson<{ data: Record<string, string> }>(
    ["-n", "e2e-smoke", "get", "configmap", "kube-root-ca.crt"],
  );
  assert.equal(cm.data["ca.crt"]?.trim(), (await Deno.readTextFile(c.caFile)).trim());
});

Deno.test("startCluster() lets a ServiceAccount token be requested (TokenRequest)", async () => {
  const c = await cluster();
  const token = await c.kubectl(["-n", "default", "create", "token", "default"]);
  assert.equal(token.code, 0, token.stderr);
  // A JWT's payload is its second, base64url-encoded part.
  const part = token.stdout.trim().split(".")[1] ?? "";
  const payload = JSON.parse(
    new TextDecoder().decode(Uint8Array.from(
      atob(part.replace(/-/g, "+").replace(/_/g, "/")),
      (ch) => ch.charCodeAt(0),
    )),
  );
  assert.deepEqual(payload.aud, [SERVICE_ACCOUNT_ISSUER]);
  assert.equal(payload.sub, "system:serviceaccount:default:default");
});

Deno.test("nodeKubeconfig() authenticates as system:node:<name> in group system:nodes", async () => {
  const c = await cluster();
  for (const embed of [false, true]) {
    const kubeconfig = await c.nodeKubeconfig("e2e-node-a", { embed });
    const review = await c.kubectlJson<
      { status: { userInfo: { username: string; groups: string[] } } }
    >(["auth", "whoami"], { kubeconfig });
    assert.equal(review.status.userInfo.username, "system:node:e2e-node-a");
    assert.ok(review.status.userInfo.groups.includes("system:nodes"), `embed=${embed}`);
  }
});

Deno.test("nodeKubeconfig() may create its own Node but not another node's (NodeRestriction)", async () => {
  const c = await cluster();
  const kubeconfig = await c.nodeKubeconfig("e2e-node-a");
  const own = await c.kubectl(["create", "-f", "-"], { kubeconfig, stdin: node("e2e-node-a") });
  assert.equal(own.code, 0, own.stderr);
  const other = await c.kubectl(["create", "-f", "-"], { kubeconfig, stdin: node("e2e-node-b") });
  assert.notEqual(other.code, 0);
  assert.match(other.stderr, /forbidden/i);
  assert.match(other.stderr, /e2e-node-b/);
  const nodes = await c.kubectlJson<{ items: Named[] }>(["get", "nodes"]);
  assert.deepEqual(nodes.items.map((n) => n.metadata.name), ["e2e-node-a"]);
});

Deno.test("stopApiserver() and startApiserver() keep the port and the data", async () => {
  const c = await cluster();
  const before = c.pids().length;
  await c.stopApiserver();
  assert.equal(c.pids().length, before - 1);
  const down = await c.kubectl(["get", "--raw", "/readyz", "--request-timeout=3s"]);
  assert.notEqual(down.code, 0);
  await c.startApiserver();
  assert.equal(c.pids().length, before);
  const ns = await c.kubectlJson<Named>(["get", "namespace", "e2e-smoke"]);
  assert.equal(ns.metadata.name, "e2e-smoke");
  const own = await c.kubectlJson<Named>(["get", "node", "e2e-node-a"]);
  assert.equal(own.metadata.name, "e2e-node-a");
});

Deno.test("stop() ends every control-plane process and removes the directory", async () => {
  const c = await cluster();
  const pids = c.pids();
  assert.equal(pids.length, 3, `etcd, kube-apiserver, kube-controller-manager: ${pids}`);
  await c.stop();
  assert.deepEqual(pids.filter(isAlive), []);
  assert.deepEqual(c.pids(), []);
  await assert.rejects(Deno.stat(c.dir), Deno.errors.NotFound);
});
