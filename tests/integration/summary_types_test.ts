/**
 * The agent's JSON read by upstream's own Go types: `/stats/summary` (with
 * and without `only_cpu_and_memory`) decoded into k8s.io/kubelet's
 * stats/v1alpha1.Summary and `/pods` into k8s.io/api's core/v1.PodList, both
 * with unknown fields refused, by tools/summarycheck. The real agent runs a
 * two-container static pod with an emptyDir (so its `volume` list and
 * ephemeral-storage are decoded too) on the harness's containerd. Needs root and Go
 * (`go` on PATH or /usr/local/go/bin/go; modules from the Go module proxy on
 * the first build).
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { cacheDir, exec, startTestRuntime, type TestRuntime } from "../harness/mod.ts";
import { type AgentProcess, findPod, podManifest, startAgent } from "./_agent.ts";
import { waitFor } from "../kit/mod.ts";

const TOOL_DIR = new URL("../../tools/summarycheck/", import.meta.url).pathname;
const TOOL_FILES = ["go.mod", "go.sum", "main.go"];

/** The go command: on PATH, or where the Go tarball installs it. */
async function findGo(): Promise<string> {
  for (const dir of [...(Deno.env.get("PATH") ?? "").split(":"), "/usr/local/go/bin"]) {
    if (dir === "") continue;
    const candidate = join(dir, "go");
    try {
      if ((await Deno.stat(candidate)).isFile) return candidate;
    } catch {
      // not in this directory
    }
  }
  throw new Error(
    "summary_types_test: Go is required (the checker decodes with upstream's Go types) " +
      "but `go` is neither on PATH nor at /usr/local/go/bin/go",
  );
}

/**
 * Builds tools/summarycheck once per source version into the test cache
 * (outside the repo), named by a hash of its go.mod, go.sum and main.go.
 */
async function buildChecker(): Promise<string> {
  const hash = new Uint8Array(
    await crypto.subtle.digest(
      "SHA-256",
      new TextEncoder().encode(
        (await Promise.all(TOOL_FILES.map((f) => Deno.readTextFile(join(TOOL_DIR, f))))).join(
          "\0",
        ),
      ),
    ),
  );
  const key = [...hash.slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("");
  const dir = cacheDir();
  const bin = join(dir, `summarycheck-${key}`);
  try {
    await Deno.stat(bin);
    return bin;
  } catch {
    // not built yet
  }
  const go = await findGo();
  await Deno.mkdir(dir, { recursive: true });
  const tmp = `${bin}.tmp-${Deno.pid}`;
  const out = await new Deno.Command(go, {
    args: ["build", "-o", tmp, "."],
    cwd: TOOL_DIR,
    env: { PATH: `${join(go, "..")}:${Deno.env.get("PATH") ?? ""}` },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(
      `building tools/summarycheck with ${go} failed (exit ${out.code}):\n` +
        new TextDecoder().decode(out.stderr),
    );
  }
  await Deno.rename(tmp, bin);
  return bin;
}

/**
 * Pipes `json` through the checker.
 * @returns the JSON as upstream's types re-encode it
 * @throws when the types refuse it (the checker's message, and the input's head)
 */
async function check(bin: string, json: string, args: string[]): Promise<string> {
  const out = await exec(bin, args, { stdin: json, allowFailure: true });
  if (out.code !== 0) {
    throw new Error(
      `upstream types refused the agent's JSON (summarycheck ${args.join(" ")}): ` +
        `${out.stderr.trim()}\n--- input (head) ---\n${json.slice(0, 2000)}`,
    );
  }
  return out.stdout;
}

interface Figures {
  cpu?: { usageCoreNanoSeconds?: number; usageNanoCores?: number };
  memory?: { workingSetBytes?: number; usageBytes?: number; rssBytes?: number };
}
interface SummaryJson {
  node: Figures & { nodeName: string; systemContainers?: ({ name: string } & Figures)[] };
  pods: (Figures & {
    podRef: { name: string; namespace: string; uid: string };
    containers: ({ name: string; rootfs?: { usedBytes?: number } } & Figures)[];
    volume?: { name?: string; usedBytes?: number; capacityBytes?: number }[];
    "ephemeral-storage"?: { usedBytes?: number; inodesUsed?: number };
  })[];
}

/** The figures a consumer acts on, in a comparable shape. */
function figures(s: SummaryJson, pod: string): Record<string, number | string | undefined> {
  const out: Record<string, number | string | undefined> = {
    nodeName: s.node.nodeName,
    nodeCpu: s.node.cpu?.usageCoreNanoSeconds,
    nodeWorkingSet: s.node.memory?.workingSetBytes,
    systemContainers: s.node.systemContainers?.map((c) => c.name).join(","),
  };
  const p = s.pods.find((x) => x.podRef.name === pod);
  out.podUid = p?.podRef.uid;
  out.podWorkingSet = p?.memory?.workingSetBytes;
  out.podEphemeral = p?.["ephemeral-storage"]?.usedBytes;
  out.podEphemeralInodes = p?.["ephemeral-storage"]?.inodesUsed;
  for (const v of p?.volume ?? []) {
    out[`volume.${v.name}`] = v.usedBytes;
    out[`volume.${v.name}.capacity`] = v.capacityBytes;
  }
  for (const c of p?.containers ?? []) {
    out[`${c.name}.cpu`] = c.cpu?.usageCoreNanoSeconds;
    out[`${c.name}.nanoCores`] = c.cpu?.usageNanoCores;
    out[`${c.name}.usage`] = c.memory?.usageBytes;
    out[`${c.name}.workingSet`] = c.memory?.workingSetBytes;
    out[`${c.name}.rss`] = c.memory?.rssBytes;
    out[`${c.name}.rootfs`] = c.rootfs?.usedBytes;
  }
  return out;
}

Deno.test({
  name: "upstream's Go types accept /stats/summary and /pods from the real agent",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    // Build first: a missing Go fails here, before any daemon starts.
    const bin = await buildChecker();
    // The checker itself refuses what upstream's types lack, in any spelling.
    for (
      const bad of [
        '{"node":{"nodeName":"n","usageBytes":1},"pods":[]}',
        '{"node":{"NodeName":"n"},"pods":[]}',
      ]
    ) {
      await assert.rejects(check(bin, bad, []), /rejected by upstream types/);
    }
    let rt: TestRuntime | undefined;
    let agent: AgentProcess | undefined;
    try {
      rt = await startTestRuntime({ name: "summary-types" });
      agent = await startAgent({ runtime: rt, extraArgs: ["--volume-stats-agg-period=1s"] });
      const a = agent;
      const manifest = JSON.parse(podManifest({
        name: "types",
        image: rt.images.busybox,
        command: [],
        hostNetwork: false,
        containers: [
          { name: "one", command: ["sleep", "3600"] },
          {
            name: "two",
            command: ["sh", "-c", "head -c 4000000 /dev/zero >/dev/null; sleep 3600"],
          },
        ],
      }));
      // A volume, so the pod's `volume` list and ephemeral-storage are decoded too.
      manifest.spec.volumes = [{ name: "scratch", emptyDir: {} }];
      await Deno.writeTextFile(join(a.manifestDir, "types.yaml"), JSON.stringify(manifest));
      const pod = "types-testnode";
      const base = `http://127.0.0.1:${a.readOnlyPort}`;
      const get = async (path: string) => {
        const resp = await fetch(`${base}${path}`);
        const text = await resp.text();
        if (!resp.ok) throw new Error(`${path} answered ${resp.status}: ${text}`);
        return text;
      };
      const summaryText = await waitFor(
        "both containers of types-testnode in /stats/summary with cpu and memory, and its volume",
        async () => {
          const text = await get("/stats/summary");
          const s = JSON.parse(text) as SummaryJson;
          const cs = s.pods.find((p) => p.podRef.name === pod)?.containers ?? [];
          const withVolume = s.pods.find((p) => p.podRef.name === pod)?.volume?.length === 1;
          const ok = withVolume && ["one", "two"].every((name) => {
            const c = cs.find((x) => x.name === name);
            return c?.cpu?.usageCoreNanoSeconds !== undefined &&
              (c.memory?.workingSetBytes ?? 0) > 0;
          });
          return ok ? text : undefined;
        },
        { timeoutMs: 60_000, log: a.log },
      );

      // The full Summary: node fs, imageFs, rlimit, system containers, rootfs, logs, volume,
      // ephemeral-storage.
      const summary = JSON.parse(summaryText) as SummaryJson;
      const reencoded = JSON.parse(await check(bin, summaryText, [])) as SummaryJson;
      const want = figures(summary, pod);
      assert.equal(want["one.cpu"] !== undefined && want["two.workingSet"] !== undefined, true);
      assert.ok((want.nodeCpu as number) > 0, "node CPU is reported");
      assert.ok((want.podEphemeral as number) > 0 && want["volume.scratch"] !== undefined);
      assert.deepEqual(figures(reencoded, pod), want, "upstream's types keep every figure");
      assert.equal(reencoded.pods.length, summary.pods.length);

      // metrics-server's view.
      const onlyText = await get("/stats/summary?only_cpu_and_memory=true");
      const only = JSON.parse(onlyText) as SummaryJson;
      const onlyBack = JSON.parse(
        await check(bin, onlyText, ["-only-cpu-and-memory"]),
      ) as SummaryJson;
      assert.deepEqual(figures(onlyBack, pod), figures(only, pod));
      assert.ok(figures(only, pod)["two.workingSet"] !== undefined);

      // /pods as upstream's PodList.
      const podsText = await get("/pods");
      const pods = JSON.parse(podsText) as { items: { metadata: { name: string } }[] };
      const back = JSON.parse(await check(bin, podsText, ["-kind=podlist"]));
      const ours = findPod(await a.pods(), "types");
      const theirs = findPod(back.items, "types");
      assert.equal(back.items.length, pods.items.length);
      assert.deepEqual(
        theirs?.status?.containerStatuses?.map((c) => [c.name, c.containerID, c.restartCount]),
        ours?.status?.containerStatuses?.map((c) => [c.name, c.containerID, c.restartCount]),
      );
      assert.equal(theirs?.metadata.uid, ours?.metadata.uid);
      assert.equal(theirs?.status?.phase, "Running");
    } finally {
      await agent?.stop().catch(() => {});
      await rt?.stop().catch(() => {});
      await agent?.removeDirs();
    }
  },
});
