/**
 * What a burst of container stops in the runtime leaves of the CPUs to a process beside
 * it, with no agent at all: the scale test's mass delete (tests/scale/pods_test.ts) made
 * by hand. A private containerd in a cpu cgroup of its own (as the scale test runs it)
 * starts N host-network busybox pods (`sleep 3600`, the configs the agent would send);
 * then a CPU-hungry thread starts in another cpu cgroup of its own, at the same weight
 * (as the scale test runs the agent), and the pods are torn down one of these ways:
 *
 * - `all`: every pod at once, each StopContainer (1 s grace, as the scale test's pods),
 *   StopPodSandbox, RemoveContainer, RemovePodSandbox, as N pod workers would;
 * - `stops-all-<k>`: every StopContainer at once, then the rest `k` pods at a time;
 * - `<k>`: the whole teardown `k` pods at a time.
 *
 * The hungry thread spins in 50 ms slices with a timer turn between them, like an event
 * loop with work queued, and reports every 5 s the CPU it got and the time it waited on a
 * run queue (its schedstat). With fair shares it gets most of one CPU of the two.
 *
 * Run (root): `deno run -A bench/runtime_burst.ts [--pods=250] [--modes=all,stops-all-8,8]`.
 * Figures: docs/reliability.md ("Scale").
 *
 * @module
 */

import { createCpuCgroup, removeCgroupParent, startTestRuntime } from "../tests/harness/mod.ts";
import { createRuntimeService } from "../lib/cri/mod.ts";
import type { Pod } from "../lib/api/types.ts";
import { Slots } from "../lib/util/slots.ts";
import { hostDnsConfig, rawPodConfigs, startRawPod } from "./_raw_configs.ts";

/** The hungry thread's report period, ms. */
const REPORT_MS = 5_000;

/** Runs `fn` over `items`, at most `limit` at once. */
async function inBatches<T>(limit: number, items: readonly T[], fn: (t: T) => Promise<unknown>) {
  const slots = new Slots(limit);
  await Promise.all(items.map((item) => slots.run(() => fn(item))));
}

/** The hungry thread (this file run with `--hungry`): spins until killed, a line per period. */
async function hungry(): Promise<never> {
  const sched = () =>
    Deno.readTextFileSync("/proc/thread-self/schedstat").split(" ").map(Number) as [
      number,
      number,
    ];
  let [ran0, waited0] = sched();
  let since = performance.now();
  for (;;) {
    const slice = performance.now();
    while (performance.now() - slice < 50) { /* work */ }
    await new Promise((r) => setTimeout(r, 0));
    const now = performance.now();
    if (now - since >= REPORT_MS) {
      const [ran, waited] = sched();
      console.log(JSON.stringify({
        spanMs: Math.round(now - since),
        ranMs: Math.round((ran - ran0) / 1e6),
        waitedMs: Math.round((waited - waited0) / 1e6),
      }));
      [ran0, waited0, since] = [ran, waited, now];
    }
  }
}

/** One teardown's figures. */
export interface BurstRound {
  mode: string;
  pods: number;
  startedMs: number;
  teardownMs: number;
  /** The hungry thread's CPU per period while the teardown ran, ms per 5 s. */
  ranMs: number[];
  /** The same after it, until the hungry thread was stopped (one period or two). */
  afterMs: number[];
}

/**
 * @param pods pods per round
 * @param modes the teardowns, one round each on a fresh set of pods
 * @returns a round's figures per mode
 */
export async function runRuntimeBurst(pods: number, modes: string[]): Promise<BurstRound[]> {
  const rt = await startTestRuntime({ name: "burst", ownCpuCgroup: true });
  const cri = createRuntimeService({ endpoint: rt.endpoint });
  const hungryGroup = `${rt.cgroupParent}-hungry`;
  const [procs] = createCpuCgroup(hungryGroup);
  const logs = await Deno.makeTempDir({ prefix: "denolet-burst-logs-" });
  const dns = await hostDnsConfig();
  const rounds: BurstRound[] = [];
  try {
    for (const mode of modes) {
      const batch = mode === "all" ? pods : Number(mode.replace(/^stops-all-/, ""));
      if (!Number.isInteger(batch) || batch < 1) {
        throw new Error(`--modes: "${mode}" is not a mode`);
      }
      const made: { sandboxId: string; id: string }[] = [];
      const t0 = Date.now();
      await inBatches(pods, Array.from({ length: pods }, (_, i) => i), async (i) => {
        const pod = {
          metadata: { name: `burst-${mode}-${i}`, namespace: "burst" },
          spec: {
            hostNetwork: true,
            terminationGracePeriodSeconds: 1,
            containers: [{ name: "main", image: rt.images.busybox, command: ["sleep", "3600"] }],
          },
        } as Pod;
        made.push(await startRawPod(cri, rawPodConfigs(rt, pod, logs, dns)));
      });
      const startedMs = Date.now() - t0;
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", import.meta.filename!, "--hungry"],
        stdout: "piped",
        stderr: "inherit",
      }).spawn();
      Deno.writeTextFileSync(procs!, String(child.pid));
      const lines: { at: number; ranMs: number }[] = [];
      const reading = (async () => {
        let rest = "";
        for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
          rest += chunk;
          for (let nl = rest.indexOf("\n"); nl >= 0; nl = rest.indexOf("\n")) {
            lines.push({ at: Date.now(), ranMs: JSON.parse(rest.slice(0, nl)).ranMs });
            rest = rest.slice(nl + 1);
          }
        }
      })();
      // One period before the teardown, so the first line is of the quiet node.
      while (lines.length < 1) await new Promise((r) => setTimeout(r, 100));
      const t1 = Date.now();
      const rest = async ({ sandboxId, id }: { sandboxId: string; id: string }) => {
        await cri.stopPodSandbox(sandboxId);
        await cri.removeContainer(id);
        await cri.removePodSandbox(sandboxId);
      };
      if (mode.startsWith("stops-all-")) {
        await inBatches(pods, made, ({ id }) => cri.stopContainer(id, 1));
        await inBatches(batch, made, rest);
      } else {
        await inBatches(batch, made, async (m) => {
          await cri.stopContainer(m.id, 1);
          await rest(m);
        });
      }
      const t2 = Date.now();
      const settled = lines.length;
      while (lines.length < settled + 2) await new Promise((r) => setTimeout(r, 100));
      child.kill("SIGKILL");
      await child.status;
      await reading;
      rounds.push({
        mode,
        pods,
        startedMs,
        teardownMs: t2 - t1,
        ranMs: lines.filter((l) => l.at > t1 && l.at <= t2 + REPORT_MS).map((l) => l.ranMs),
        afterMs: lines.filter((l) => l.at > t2 + REPORT_MS).map((l) => l.ranMs),
      });
    }
  } finally {
    cri.close();
    await rt.stop();
    await removeCgroupParent(hungryGroup);
    await Deno.remove(logs, { recursive: true });
  }
  return rounds;
}

if (import.meta.main) {
  if (Deno.args.includes("--hungry")) await hungry();
  const arg = (name: string) =>
    Deno.args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const pods = Number(arg("pods") ?? 250);
  const modes = (arg("modes") ?? "all,stops-all-8,8").split(",");
  console.log(
    "| teardown | pods started in | teardown took | the hungry thread's CPU per 5 s, during | after |",
  );
  console.log("|---|---|---|---|---|");
  for (const r of await runRuntimeBurst(pods, modes)) {
    console.log(
      `| ${r.mode} (${r.pods} pods) | ${(r.startedMs / 1000).toFixed(1)} s | ${
        (r.teardownMs / 1000).toFixed(1)
      } s | ${r.ranMs.map((ms) => (ms / 1000).toFixed(2)).join(", ")} s | ${
        r.afterMs.map((ms) => (ms / 1000).toFixed(2)).join(", ")
      } s |`,
    );
  }
}
