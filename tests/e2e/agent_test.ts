/**
 * denolet as a node of a real cluster: etcd + kube-apiserver +
 * kube-controller-manager from tests/e2e/_cluster.ts, containerd + runc from
 * tests/harness, and the agent authenticating as system:node:testnode with a
 * client certificate. Every check is one a user makes with kubectl.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { requireRoot, startTestRuntime, type TestRuntime } from "../harness/mod.ts";
import type { Pod } from "../../lib/api/types.ts";
import type { Lease, Node } from "../../lib/api/cluster_types.ts";
import { type AgentProcess, podManifest, startAgent } from "../integration/_agent.ts";
import { delay, pathExists, waitFor } from "../kit/mod.ts";
import { type Cluster, startCluster } from "./_cluster.ts";

const NODE = "testnode";
/** How long the apiserver stays down in the outage step. */
const OUTAGE_MS = 60_000;

function readyCondition(node: Node | undefined) {
  return node?.status?.conditions?.find((c) => c.type === "Ready");
}

function mainStatus(pod: Pod | undefined, name = "main") {
  return pod?.status?.containerStatuses?.find((c) => c.name === name);
}

/** The lines a container wrote to stdout, from its CRI log file under the pod logs dir. */
async function containerLog(agent: AgentProcess, pod: Pod, container: string): Promise<string> {
  const { namespace, name, uid } = pod.metadata;
  const dir = join(agent.rootDir, "logs", `${namespace}_${name}_${uid}`, container);
  const text = await Deno.readTextFile(join(dir, "0.log"));
  // CRI log lines: "<time> stdout F <text>".
  return text.split("\n").filter((l) => l).map((l) => l.split(" ").slice(3).join(" ")).join(
    "\n",
  );
}

Deno.test({
  name: "denolet joins a real cluster and runs the pods bound to it",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    requireRoot();
    let cluster: Cluster | undefined;
    let rt: TestRuntime | undefined;
    let agent: AgentProcess | undefined;
    try {
      cluster = await startCluster();
      rt = await startTestRuntime({ name: "e2e" });
      const c = cluster;
      const r = rt;
      const kubeconfig = await c.nodeKubeconfig(NODE);
      const agentArgs = [`--kubeconfig=${kubeconfig}`, "--node-ip=127.0.0.1", "--v=2"];
      agent = await startAgent({ runtime: r, extraArgs: agentArgs });
      const log = () => agent?.log() ?? "";
      const ns = `e2e-${crypto.randomUUID().slice(0, 8)}`;
      const get = <T>(args: string[]) => c.kubectlJson<T>(args);
      const getPod = (name: string) => get<Pod>(["get", "pod", "-n", ns, name]);
      const apply = async (obj: unknown) => {
        const res = await c.kubectl(["apply", "-f", "-"], { stdin: JSON.stringify(obj) });
        assert.equal(res.code, 0, `kubectl apply failed: ${res.stderr}`);
      };
      const busybox = r.images.busybox;
      const nodeReadyIs = (status: "True" | "False", what: string) =>
        waitFor(what, async () => {
          const n = await get<Node>(["get", "node", NODE]).catch(() => undefined);
          return readyCondition(n)?.status === status ? n : undefined;
        }, { timeoutMs: 60_000, log: log });

      await t.step("the node registers and goes Ready, with its Lease renewed", async () => {
        const node = await nodeReadyIs("True", "node Ready");
        assert.equal(readyCondition(node)?.reason, "KubeletReady");
        assert.match(node.status?.nodeInfo?.kubeletVersion ?? "", /denolet/);
        assert.match(node.status?.nodeInfo?.containerRuntimeVersion ?? "", /^containerd:\/\//);
        assert.equal(node.status?.allocatable?.pods, "110");
        assert.ok(node.status?.addresses?.some((a) => a.type === "InternalIP"));
        assert.equal(node.metadata.labels?.["kubernetes.io/hostname"], NODE);
        const lease = await get<Lease>(["get", "lease", "-n", "kube-node-lease", NODE]);
        assert.equal(lease.spec.holderIdentity, NODE);
        assert.equal(lease.spec.leaseDurationSeconds, 40);
        const renewed = await waitFor("lease renewed", async () => {
          const l = await get<Lease>(["get", "lease", "-n", "kube-node-lease", NODE]);
          return l.spec.renewTime !== lease.spec.renewTime ? l : undefined;
        }, { timeoutMs: 30_000, log: log });
        assert.ok(Date.parse(renewed.spec.renewTime!) > Date.parse(lease.spec.renewTime!));
      });

      await t.step("a pod bound to the node runs with its API volumes and env", async () => {
        assert.equal((await c.kubectl(["create", "namespace", ns])).code, 0);
        await waitFor("default service account and kube-root-ca.crt", async () => {
          const sa = await c.kubectl(["get", "sa", "default", "-n", ns]);
          const ca = await c.kubectl(["get", "configmap", "kube-root-ca.crt", "-n", ns]);
          return sa.code === 0 && ca.code === 0 ? true : undefined;
        }, { timeoutMs: 60_000 });
        await apply({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "cfg", namespace: ns },
          data: { greeting: "hello from a configmap", color: "blue" },
        });
        await apply({
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: "sec", namespace: ns },
          stringData: { password: "s3cret" },
        });
        const script = [
          "cat /cfg/greeting; echo",
          "cat /sec/password; echo",
          "cat /info/podname; echo",
          "cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; echo",
          "echo token-bytes=$(wc -c < /var/run/secrets/kubernetes.io/serviceaccount/token)",
          "head -n 1 /var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
          "echo via-subpath > /sub/note; cat /mem/sub/note",
          'awk \'$2 == "/mem" { print "mem-fs=" $3 }\' /proc/mounts',
          'echo "env=$COLOR/$MY_POD/$KUBERNETES_SERVICE_HOST"',
          'echo "envfrom=$CFG_color/$password"',
          "sleep 3600",
        ].join("; ");
        await apply({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "web", namespace: ns, labels: { app: "web" } },
          spec: {
            nodeName: NODE,
            terminationGracePeriodSeconds: 2,
            containers: [{
              name: "main",
              image: busybox,
              imagePullPolicy: "Never",
              command: ["sh", "-c", script],
              env: [
                { name: "COLOR", valueFrom: { configMapKeyRef: { name: "cfg", key: "color" } } },
                { name: "MY_POD", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
              ],
              envFrom: [
                { prefix: "CFG_", configMapRef: { name: "cfg" } },
                { secretRef: { name: "sec" } },
              ],
              volumeMounts: [
                { name: "cfg", mountPath: "/cfg" },
                { name: "sec", mountPath: "/sec" },
                { name: "info", mountPath: "/info" },
                { name: "mem", mountPath: "/mem" },
                { name: "mem", mountPath: "/sub", subPath: "sub" },
              ],
            }],
            volumes: [
              { name: "cfg", configMap: { name: "cfg" } },
              { name: "sec", secret: { secretName: "sec" } },
              { name: "mem", emptyDir: { medium: "Memory", sizeLimit: "8Mi" } },
              {
                name: "info",
                downwardAPI: {
                  items: [{ path: "podname", fieldRef: { fieldPath: "metadata.name" } }],
                },
              },
            ],
          },
        });
        const pod = await waitFor("pod web Running", async () => {
          const p = await getPod("web");
          return p.status?.phase === "Running" && mainStatus(p)?.ready ? p : undefined;
        }, { timeoutMs: 90_000, log: log });
        assert.ok(pod.status?.podIP, "podIP is set from the sandbox");
        assert.equal(pod.status?.hostIP, "127.0.0.1");
        const cs = mainStatus(pod)!;
        assert.ok(cs.state.running?.startedAt);
        assert.match(cs.containerID ?? "", /^containerd:\/\//);
        assert.equal(cs.restartCount, 0);
        assert.ok(pod.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True"));
        // The serviceaccount admission plugin gave it the projected kube-api-access volume.
        assert.ok(pod.spec.volumes?.some((v) => v.name.startsWith("kube-api-access-")));

        const out = await waitFor("container output", async () => {
          const text = await containerLog(agent!, pod, "main").catch(() => "");
          return text.includes("env=") ? text : undefined;
        }, { timeoutMs: 30_000 });
        const lines = out.split("\n");
        assert.deepEqual(lines.slice(0, 4), ["hello from a configmap", "s3cret", "web", ns]);
        const tokenBytes = Number(/token-bytes=(\d+)/.exec(out)?.[1]);
        assert.ok(tokenBytes > 100, `token has ${tokenBytes} bytes`);
        assert.ok(out.includes("-----BEGIN CERTIFICATE-----"));
        assert.match(out, /env=blue\/web\/10\.96\.0\.1/);
        // envFrom: every key of the configMap (with the prefix) and of the secret.
        assert.match(out, /envfrom=blue\/s3cret/);
        // A subPath of the Memory emptyDir is the same directory, and the emptyDir is a tmpfs.
        assert.ok(lines.includes("via-subpath"), out);
        assert.ok(lines.includes("mem-fs=tmpfs"), out);

        // kubectl describe's events: recorded by the agent through the apiserver.
        const reasons = await waitFor("pod events", async () => {
          const list = await get<
            { items: { reason: string; involvedObject: { name: string } }[] }
          >(
            ["get", "events", "-n", ns, "--field-selector", "involvedObject.name=web"],
          );
          const seen = new Set(list.items.map((e) => e.reason));
          return ["Pulled", "Created", "Started"].every((r) => seen.has(r)) ? seen : undefined;
        }, { timeoutMs: 30_000, log: log });
        assert.ok(reasons.has("Started"));
        // NodeReady is recorded, as upstream records it, only when an existing Ready
        // condition flips: a node whose first status is already Ready has none (a
        // CI run showed that). Both flips are checked by the runtime-outage step below.
        await waitFor("the node's Starting event", async () => {
          const list = await get<{ items: { reason: string }[] }>(
            ["get", "events", "-n", "default", "--field-selector", `involvedObject.name=${NODE}`],
          );
          return list.items.some((e) => e.reason === "Starting") || undefined;
        }, { timeoutMs: 30_000, log: log });
      });

      await t.step("a static pod shows a mirror pod owned by the node", async () => {
        await Deno.writeTextFile(
          join(agent!.manifestDir, "static.yaml"),
          podManifest({ name: "static", image: busybox, command: ["sleep", "3600"], grace: 1 }),
        );
        const mirror = await waitFor("mirror pod Running", async () => {
          const p = await get<Pod>(["get", "pod", "-n", "default", `static-${NODE}`]).catch(() =>
            undefined
          );
          return p?.status?.phase === "Running" ? p : undefined;
        }, { timeoutMs: 60_000, log: log });
        assert.ok(mirror.metadata.annotations?.["kubernetes.io/config.mirror"]);
        const owner = mirror.metadata.ownerReferences?.[0];
        assert.equal(owner?.kind, "Node");
        assert.equal(owner?.name, NODE);
        // Deleting the mirror pod does not stop the static pod: it comes back.
        const oldUid = mirror.metadata.uid;
        await c.kubectl(["delete", "pod", "-n", "default", `static-${NODE}`, "--wait=false"]);
        await waitFor("mirror pod recreated", async () => {
          const p = await get<Pod>(["get", "pod", "-n", "default", `static-${NODE}`]).catch(() =>
            undefined
          );
          return p && p.metadata.uid !== oldUid ? p : undefined;
        }, { timeoutMs: 60_000, log: log });
      });

      await t.step("deletion honours the grace period and removes the API object", async () => {
        await apply({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "graceful", namespace: ns },
          spec: {
            nodeName: NODE,
            terminationGracePeriodSeconds: 30,
            automountServiceAccountToken: false,
            containers: [{
              name: "main",
              image: busybox,
              imagePullPolicy: "Never",
              // Takes 3 s to shut down after SIGTERM, well within its grace period.
              command: ["sh", "-c", "trap 'sleep 3; exit 0' TERM; while true; do sleep 1; done"],
            }],
          },
        });
        await waitFor("pod graceful Running", async () => {
          const p = await getPod("graceful");
          return mainStatus(p)?.state.running ? p : undefined;
        }, { timeoutMs: 60_000, log: log });
        const started = Date.now();
        const del = await c.kubectl(["delete", "pod", "-n", ns, "graceful", "--wait=false"]);
        assert.equal(del.code, 0, del.stderr);
        await waitFor("API object gone", async () => {
          const res = await c.kubectl(["get", "pod", "-n", ns, "graceful"]);
          return res.code !== 0 && /NotFound|not found/.test(res.stderr) ? true : undefined;
        }, { timeoutMs: 60_000, log: log });
        const took = Date.now() - started;
        assert.ok(took >= 3000, `deleted after ${took} ms: before the container finished`);
        assert.ok(took < 30_000, `deleted after ${took} ms: the grace period was not honoured`);
        const left = (await agent!.pods()).filter((p) => p.metadata.name === "graceful");
        assert.equal(left.length, 0, "the agent forgot the pod");
      });

      await t.step(
        "a pod whose removal fails still leaves the API; the GC collects the rest later",
        async () => {
          await apply({
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: "stuck-logs", namespace: ns },
            spec: {
              nodeName: NODE,
              terminationGracePeriodSeconds: 1,
              automountServiceAccountToken: false,
              containers: [{
                name: "main",
                image: busybox,
                imagePullPolicy: "Never",
                command: ["sh", "-c", "echo started; exec sleep 3600"],
              }],
            },
          });
          const pod = await waitFor("pod stuck-logs Running", async () => {
            const p = await getPod("stuck-logs");
            return mainStatus(p)?.state.running ? p : undefined;
          }, { timeoutMs: 60_000, log: log });
          const { uid } = pod.metadata;
          // The pod's log dir read-only: removing the container's log fails (EROFS), so the
          // runtime removal fails as on a runtime that refuses to remove a container.
          const logDir = join(agent!.rootDir, "logs", `${ns}_stuck-logs_${uid}`);
          const podDir = join(agent!.rootDir, "pods", uid!);
          const mount = async (args: string[]) => {
            const out = await new Deno.Command("mount", { args, stderr: "piped" }).output();
            assert.ok(
              out.success,
              `mount ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`,
            );
          };
          await mount(["--bind", logDir, logDir]);
          let mounted = true;
          try {
            await mount(["-o", "remount,bind,ro", logDir]);
            const del = await c.kubectl(["delete", "pod", "-n", ns, "stuck-logs", "--wait=false"]);
            assert.equal(del.code, 0, del.stderr);
            await waitFor("API object gone though the removal failed", async () => {
              const res = await c.kubectl(["get", "pod", "-n", ns, "stuck-logs"]);
              return res.code !== 0 && /NotFound|not found/.test(res.stderr) ? true : undefined;
            }, { timeoutMs: 30_000, log: log });
            assert.match(log(), /Removal failed; left to garbage collection.*stuck-logs/);
            assert.ok(await pathExists(join(logDir, "main")), "the log dir stayed while read-only");
            const out = await new Deno.Command("umount", { args: [logDir] }).output();
            assert.ok(out.success, `umount ${logDir}`);
            mounted = false;
            // The container GC runs every minute and removes the log dir of a gone pod;
            // housekeeping removes its pod dir.
            await waitFor("log dir and pod dir collected", async () => {
              const left = (await pathExists(logDir)) || (await pathExists(podDir));
              return left ? undefined : true;
            }, { timeoutMs: 100_000, intervalMs: 1_000, log: log });
          } finally {
            if (mounted) await new Deno.Command("umount", { args: [logDir] }).output();
          }
        },
      );

      await t.step("a restarted denolet keeps its Node, Lease and pods", async () => {
        const before = await get<Node>(["get", "node", NODE]);
        const podBefore = await getPod("web");
        const exited = await agent!.stop("SIGTERM");
        assert.equal(exited.code, 0);
        agent = await startAgent({
          runtime: r,
          manifestDir: agent!.manifestDir,
          rootDir: agent!.rootDir,
          extraArgs: agentArgs,
        });
        const node = await get<Node>(["get", "node", NODE]);
        assert.equal(node.metadata.uid, before.metadata.uid);
        await waitFor("lease renewed by the new agent", async () => {
          const l = await get<Lease>(["get", "lease", "-n", "kube-node-lease", NODE]);
          return Date.now() - Date.parse(l.spec.renewTime!) < 15_000 ? l : undefined;
        }, { timeoutMs: 30_000, log: log });
        const pod = await waitFor("web still running", async () => {
          const p = await getPod("web");
          return mainStatus(p)?.ready ? p : undefined;
        }, { timeoutMs: 30_000, log: log });
        assert.equal(mainStatus(pod)?.containerID, mainStatus(podBefore)?.containerID);
        assert.equal(mainStatus(pod)?.restartCount, 0);
      });

      await t.step(
        "with the runtime down the node goes NotReady, and Ready again once it is back",
        async () => {
          const webBefore = await getPod("web");
          const nodeEvent = (reason: string) =>
            waitFor(`${reason} event`, async () => {
              const list = await get<{ items: { reason: string }[] }>(
                [
                  "get",
                  "events",
                  "-n",
                  "default",
                  "--field-selector",
                  `involvedObject.name=${NODE}`,
                ],
              );
              return list.items.some((e) => e.reason === reason) || undefined;
            }, { timeoutMs: 30_000, log: log });
          await r.restart(async () => {
            const node = await nodeReadyIs("False", "node NotReady while containerd is down");
            assert.equal(readyCondition(node)?.reason, "KubeletNotReady");
            assert.match(readyCondition(node)?.message ?? "", /container runtime is down/);
            await nodeEvent("NodeNotReady");
          });
          await nodeReadyIs("True", "node Ready once containerd is back");
          await nodeEvent("NodeReady");
          // The pods ran on without their runtime's daemon and were not restarted.
          const web = await getPod("web");
          assert.equal(mainStatus(web)?.containerID, mainStatus(webBefore)?.containerID);
          assert.equal(mainStatus(web)?.restartCount, 0);
          assert.ok(mainStatus(web)?.state.running);
        },
      );

      await t.step(
        `with the apiserver down for ${OUTAGE_MS / 1000} s pods keep running and statuses converge`,
        async () => {
          await apply({
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: "job", namespace: ns },
            spec: {
              nodeName: NODE,
              restartPolicy: "Never",
              automountServiceAccountToken: false,
              containers: [{
                name: "main",
                image: busybox,
                imagePullPolicy: "Never",
                command: ["sh", "-c", "sleep 20; exit 0"],
              }],
            },
          });
          await waitFor("job Running", async () => {
            const p = await getPod("job");
            return mainStatus(p)?.state.running ? p : undefined;
          }, { timeoutMs: 60_000, log: log });
          const webBefore = await getPod("web");
          // A write the agent's pod watch does not see, then etcd compacted past
          // it while the apiserver is down (its compactor does this every 5 min):
          // the watch, resumed from its last resourceVersion, must be told 410
          // Gone and relist.
          await apply({
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: "bump", namespace: ns },
            data: { at: String(Date.now()) },
          });
          const logMark = agent!.log().length;
          await c.stopApiserver();
          const downSince = Date.now();
          await c.compactEtcd();
          // Meanwhile the job finishes; the agent sees it.
          const local = await waitFor(
            "job Succeeded on the agent while the apiserver is down",
            async () => (await agent!.pods()).find((p) => p.metadata.name === "job"),
            { until: (p) => p?.status?.phase === "Succeeded", timeoutMs: 60_000, log },
          );
          assert.equal(local?.status?.phase, "Succeeded");
          // The outage's length is itself under test (the step's name; docs/status.md): it
          // outlasts the agent's 40 s node lease, so the agent comes back to an expired one.
          await delay(Math.max(0, OUTAGE_MS - (Date.now() - downSince)));
          await c.startApiserver();
          const job = await waitFor("job Succeeded in the API", async () => {
            const p = await getPod("job");
            return p.status?.phase === "Succeeded" ? p : undefined;
          }, { timeoutMs: 60_000, log: log });
          assert.equal(mainStatus(job)?.state.terminated?.exitCode, 0);
          const web = await getPod("web");
          assert.equal(mainStatus(web)?.containerID, mainStatus(webBefore)?.containerID);
          assert.equal(mainStatus(web)?.restartCount, 0);
          await waitFor(
            "the pod watch relisted after 410 Gone",
            () =>
              /resourceVersion too old, relisting/.test(agent!.log().slice(logMark)) || undefined,
            { timeoutMs: 60_000, log: log },
          );
          const node = await nodeReadyIs("True", "node Ready again");
          assert.ok(node);
        },
      );

      await t.step(
        "with kubeAPIQPS 2 and eventRecordQPS 1 the agent keeps to its limits and pods converge",
        async () => {
          await agent!.stop("SIGTERM");
          agent = await startAgent({
            runtime: r,
            manifestDir: agent!.manifestDir,
            rootDir: agent!.rootDir,
            extraArgs: [
              ...agentArgs,
              "--kube-api-qps=2",
              "--kube-api-burst=2",
              "--event-qps=1",
              "--event-burst=1",
            ],
          });
          const scrape = async () => {
            const text = await (await fetch(
              `http://127.0.0.1:${agent!.readOnlyPort}/metrics`,
            )).text();
            const sum = (re: RegExp) =>
              text.split("\n").filter((l) => re.test(l))
                .reduce((a, l) => a + Number(l.split(" ").at(-1)), 0);
            return {
              at: Date.now(),
              requests: sum(/^rest_client_requests_total\{/),
              waits: sum(/^rest_client_rate_limiter_duration_seconds_count\{/),
              waited: sum(/^rest_client_rate_limiter_duration_seconds_sum\{/),
            };
          };
          const before = await scrape();
          const names = ["rl-0", "rl-1", "rl-2", "rl-3"];
          for (const name of names) {
            await apply({
              apiVersion: "v1",
              kind: "Pod",
              metadata: { name, namespace: ns },
              spec: {
                nodeName: NODE,
                terminationGracePeriodSeconds: 1,
                containers: [{
                  name: "main",
                  image: busybox,
                  imagePullPolicy: "Never",
                  command: ["sleep", "3600"],
                }],
              },
            });
          }
          await waitFor("the rate-limited pods Running", async () => {
            for (const name of names) {
              if (mainStatus(await getPod(name))?.state.running === undefined) return undefined;
            }
            return true;
          }, { timeoutMs: 120_000, log: log });
          const after = await scrape();
          const seconds = (after.at - before.at) / 1000;
          const made = after.requests - before.requests;
          // Limited: 2/s + 1/s after bursts of 2 and 1; the heartbeat client (node
          // status, Lease) is not limited, as upstream's: at most 3 calls per 10 s.
          const bound = 3 * seconds + 3 + 0.3 * seconds + 3;
          assert.ok(made > 0, "requests are counted");
          assert.ok(made <= bound, `${made} requests in ${seconds.toFixed(1)} s, bound ${bound}`);
          assert.ok(after.waits > before.waits);
          assert.ok(
            after.waited - before.waited > 0.5,
            `the limiter held requests back ${(after.waited - before.waited).toFixed(2)} s in all`,
          );
        },
      );

      // The agent removes the pods (and unmounts their tmpfs volumes) before it stops.
      await c.kubectl(["delete", "namespace", ns, "--wait=false"]);
      for (const f of await Array.fromAsync(Deno.readDir(agent.manifestDir))) {
        await Deno.remove(join(agent.manifestDir, f.name));
      }
      await waitFor("the agent removed every pod", async () => {
        const pods = await agent!.pods();
        return pods.length === 0 || undefined;
      }, { timeoutMs: 120_000, log: log });
      const leftover = (await Deno.readTextFile("/proc/self/mountinfo")).split("\n")
        .filter((l) => l.includes(agent!.rootDir));
      assert.deepEqual(leftover, [], "no volume mounts left under the root dir");
    } finally {
      if (agent) {
        for (const f of await Array.fromAsync(Deno.readDir(agent.manifestDir))) {
          await Deno.remove(join(agent.manifestDir, f.name));
        }
        await agent.stop("SIGTERM");
      }
      await rt?.stop();
      await cluster?.stop();
      await agent?.removeDirs();
    }
  },
});
