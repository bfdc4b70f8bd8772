/**
 * `registerNode: false` against a real kube-apiserver: the agent creates no Node, waits
 * for one someone else creates, and then keeps its status (Ready, addresses) without
 * touching its labels, as upstream.
 */
import assert from "node:assert/strict";
import type { Node } from "../../lib/api/cluster_types.ts";
import { waitFor } from "../kit/mod.ts";
import { NODE, startNode } from "./_node.ts";

Deno.test({
  name: "registerNode: false waits for a Node made by someone else, then updates only its status",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const node = await startNode({
    name: "regnode",
    config: { registerNode: false },
    awaitReady: false,
  });
  try {
    const c = node.cluster;
    // The agent looked for its Node and found none; it did not create one.
    await waitFor(
      "the agent to find no Node",
      () => node.log().includes("Unable to update node status, will retry") || undefined,
      {
        timeoutMs: 60_000,
        log: node.log,
      },
    );
    const absent = await c.kubectl(["get", "node", NODE]);
    assert.notEqual(absent.code, 0, "registerNode: false must not create the Node");
    assert.match(absent.stderr, /NotFound/);

    const made = await c.kubectl(["create", "-f", "-"], {
      stdin: JSON.stringify({
        apiVersion: "v1",
        kind: "Node",
        metadata: { name: NODE, labels: { "example.com/made-by": "operator" } },
      }),
    });
    assert.equal(made.code, 0, made.stderr);
    const ready = await waitFor("the agent's status on the Node it was given", async () => {
      const n = await c.kubectlJson<Node>(["get", "node", NODE]).catch(() => undefined);
      const isReady = n?.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True");
      return isReady ? n : undefined;
    }, { timeoutMs: 60_000, log: node.log });
    assert.ok(
      ready.status?.addresses?.some((a) => a.type === "InternalIP" && a.address === node.nodeIP),
      JSON.stringify(ready.status?.addresses),
    );
    // Registration's labels (hostname, os, arch) are not added: the Node is not the agent's.
    assert.deepEqual(ready.metadata.labels, { "example.com/made-by": "operator" });
  } finally {
    await node.stop();
  }
});
