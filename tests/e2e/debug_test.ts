/**
 * `kubectl debug` against denolet behind a real kube-apiserver: kubectl adds
 * an ephemeral container through the pods/ephemeralcontainers subresource,
 * the watch brings the changed spec to the node, denolet starts the container
 * in the pod's sandbox in its target's process namespace, reports it in
 * `status.ephemeralContainerStatuses`, serves its logs, and attaches to it
 * (`kubectl debug -i`).
 */

import assert from "node:assert/strict";
import type { ContainerStatus, Pod } from "../../lib/api/types.ts";
import { requireRoot } from "../harness/mod.ts";
import { waitFor } from "../kit/mod.ts";
import { busyboxPod, NODE, startNode } from "./_node.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * Runs a command whose stdin stays open until its stdout matches `until`.
 * containerd ends an attach's output when the client's stdin closes and the
 * container's `stdinOnce` is off (`kubectl debug -i` leaves it off): with a
 * pipe closed at once, the container's answer reached its log but not
 * kubectl (seen here; upstream's kubelet proxies the same stream).
 */
async function interactive(
  bin: string,
  args: string[],
  input: string,
  until: RegExp,
  timeoutMs = 60_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = new Deno.Command(bin, {
    args,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  try {
    const stdin = child.stdin.getWriter();
    await stdin.write(enc.encode(input));
    const stderr = new Response(child.stderr).text();
    let stdout = "";
    let closed = false;
    for await (const chunk of child.stdout) {
      stdout += dec.decode(chunk, { stream: true });
      if (!closed && until.test(stdout)) {
        closed = true;
        await stdin.close();
      }
    }
    if (!closed) await stdin.close().catch(() => {});
    const { code } = await child.status;
    return { code, stdout, stderr: await stderr };
  } finally {
    clearTimeout(timer);
  }
}

Deno.test({
  name: "kubectl debug: an ephemeral container starts, reports its status, logs and attaches",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    requireRoot();
    const node = await startNode({ name: "debug" });
    try {
      const { cluster: c, runtime: rt, log } = node;
      const ns = await node.namespace();
      await node.runPod(busyboxPod(rt, "target", ns));
      const debug = (args: string[]) =>
        c.kubectl([
          ...["debug", "-n", ns, "target", `--image=${rt.images.busybox}`],
          ...["--image-pull-policy=Never", "--target=main", ...args],
        ]);
      const ephemeralStatus = async (name: string) => {
        const pod = await c.kubectlJson<Pod>(["get", "pod", "-n", ns, "target"]);
        const found = (pod.status?.ephemeralContainerStatuses ?? []).find((s) => s.name === name);
        return { pod, status: found };
      };

      await t.step(
        "the debugger ends Terminated in the API's and the node's /pods status",
        async () => {
          const added = await debug(["-c", "dbg", "--", "sh", "-c", "ps; echo done"]);
          assert.equal(added.code, 0, `kubectl debug: ${added.stderr}`);
          const { pod, status } = await waitFor(
            "dbg Terminated in ephemeralContainerStatuses",
            () => ephemeralStatus("dbg"),
            {
              timeoutMs: 60_000,
              log,
              until: (r) => r.status?.state.terminated !== undefined,
            },
          );
          const dbg = status as ContainerStatus;
          assert.equal(dbg.state.terminated?.exitCode, 0);
          assert.equal(dbg.ready, false);
          assert.match(dbg.containerID ?? "", /^containerd:\/\//);
          // It counts for neither phase nor readiness: the pod runs on, ready.
          assert.equal(pod.status?.phase, "Running");
          assert.equal(pod.status?.conditions?.find((x) => x.type === "Ready")?.status, "True");
          assert.deepEqual(pod.status?.containerStatuses?.map((s) => s.name), ["main"]);
          // The node's own /pods serves the same status.
          const raw = await c.kubectl(["get", "--raw", `/api/v1/nodes/${NODE}/proxy/pods`]);
          assert.equal(raw.code, 0, raw.stderr);
          const served = (JSON.parse(raw.stdout).items as Pod[])
            .find((p) => p.metadata.name === "target" && p.metadata.namespace === ns);
          assert.equal(
            served?.status?.ephemeralContainerStatuses?.[0]?.state.terminated?.exitCode,
            0,
          );
        },
      );

      await t.step("kubectl logs -c dbg shows main's sleep as PID 1", async () => {
        const logs = await c.kubectl(["logs", "-n", ns, "target", "-c", "dbg"]);
        assert.equal(logs.code, 0, logs.stderr);
        assert.match(logs.stdout, /^\s*1\s.*sleep 3600$/m, logs.stdout);
        assert.match(logs.stdout, /done\n$/);
      });

      await t.step("kubectl debug -i attaches: stdin in, stdout back", async () => {
        const attached = await interactive(
          `${c.binDir}/kubectl`,
          [
            ...["--kubeconfig", c.adminKubeconfig, "debug", "-i", "-n", ns, "target"],
            ...[`--image=${rt.images.busybox}`, "--image-pull-policy=Never", "--target=main"],
            ...["-c", "reader", "--", "sh", "-c", 'read line; echo "got $line"'],
          ],
          "hello from kubectl\n",
          /got hello from kubectl\n/,
        );
        assert.equal(attached.code, 0, `kubectl debug -i: ${attached.stderr}\n${log()}`);
        assert.match(attached.stdout, /got hello from kubectl\n/, attached.stderr);
        const { status } = await waitFor("reader Terminated", () => ephemeralStatus("reader"), {
          timeoutMs: 30_000,
          log,
          until: (r) => r.status?.state.terminated !== undefined,
        });
        assert.equal(status?.state.terminated?.exitCode, 0);
        assert.equal(status?.restartCount, 0);
      });
    } finally {
      await node.stop();
    }
  },
});
