/**
 * The demo: a private containerd (the test harness's, in a temp dir), denolet
 * on it with the sample static pod in `demo/manifests/`, and a guided look at
 * what it serves. Runs until Ctrl-C (or `--seconds=N`), then cleans up.
 *
 * Usage: `deno task demo [--seconds=N]` as root.
 *
 * @module
 */

import { join } from "node:path";
import { startTestRuntime } from "../tests/harness/mod.ts";
import { startAgent } from "../tests/integration/_agent.ts";
import { waitFor } from "../tests/kit/mod.ts";
import type { Pod } from "../lib/api/types.ts";

const secondsArg = Deno.args.find((a) => a.startsWith("--seconds="));
const seconds = secondsArg ? Number(secondsArg.split("=")[1]) : Infinity;

function describe(pod: Pod): string {
  const lines = [
    `  pod ${pod.metadata.namespace}/${pod.metadata.name}  phase=${pod.status?.phase}`,
  ];
  for (const c of pod.status?.containerStatuses ?? []) {
    const [state, detail] = c.state.running
      ? ["running", `since ${c.state.running.startedAt}`]
      : c.state.waiting
      ? ["waiting", `${c.state.waiting.reason ?? ""}`]
      : ["terminated", `${c.state.terminated?.reason} exit=${c.state.terminated?.exitCode}`];
    lines.push(
      `    container ${c.name}: ${state} (${detail}) restarts=${c.restartCount} ready=${c.ready}`,
    );
  }
  return lines.join("\n");
}

console.log("Starting a private containerd and building the demo images (busybox, pause)...");
const runtime = await startTestRuntime({ name: "demo" });
let agent;
try {
  agent = await startAgent({ runtime });
  const sample = await Deno.readTextFile(new URL("./manifests/hello.yaml", import.meta.url));
  await Deno.writeTextFile(
    join(agent.manifestDir, "hello.yaml"),
    sample.replaceAll("IMAGE", runtime.images.busybox),
  );
  const a = agent;
  const pod = await waitFor("the hello pod to run", async () => {
    const p = (await a.pods()).find((p) => p.metadata.name?.startsWith("hello-"));
    return p?.status?.containerStatuses?.some((c) => c.state.running) ? p : undefined;
  }, { timeoutMs: 60_000, log: a.log });
  const logDir = join(
    agent.rootDir,
    "logs",
    `${pod.metadata.namespace}_${pod.metadata.name}_${pod.metadata.uid}`,
  );
  console.log(`
denolet is running the sample static pod:
${describe(pod)}

Where to look:
  curl -s http://127.0.0.1:${agent.readOnlyPort}/pods                 # PodList with status, as upstream's /pods
  curl -s http://127.0.0.1:${agent.readOnlyPort}/stats/summary        # Summary API (kubectl top reads this)
  curl -s http://127.0.0.1:${agent.readOnlyPort}/metrics/resource     # also /metrics/cadvisor, /metrics/probes, /metrics
  curl -s http://127.0.0.1:${agent.healthzPort}/healthz?verbose      # healthz checks
  manifest dir (add, edit or remove pods here): ${agent.manifestDir}
  container logs: ${logDir}/hello/0.log
  containerd socket: ${runtime.endpoint}

The second container exits with 1 every 20s: watch its restarts and CrashLoopBackOff.
${Number.isFinite(seconds) ? `Stopping in ${seconds}s.` : "Press Ctrl-C to stop and clean up."}
`);
  const stop = Promise.withResolvers<void>();
  Deno.addSignalListener("SIGINT", () => stop.resolve());
  Deno.addSignalListener("SIGTERM", () => stop.resolve());
  if (Number.isFinite(seconds)) setTimeout(() => stop.resolve(), seconds * 1000);
  const ticker = setInterval(async () => {
    for (const p of await a.pods().catch(() => [])) console.log(describe(p));
  }, 10_000);
  await stop.promise;
  clearInterval(ticker);
} finally {
  console.log("Cleaning up: stopping denolet, the pods and the private containerd...");
  await agent?.stop("SIGTERM");
  await runtime.stop();
  await agent?.removeDirs();
}
Deno.exit(0);
