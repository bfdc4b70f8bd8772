import { deepStrictEqual, match, ok, strictEqual } from "node:assert";
import type { RuntimeService } from "../../lib/cri/types.ts";
import { computePodActions } from "../../lib/kuberuntime/compute_pod_actions.ts";
import { hashContainer } from "../../lib/kuberuntime/hash.ts";
import { planReasons } from "../../lib/kuberuntime/plan_reasons.ts";
import { backoffKey } from "../../lib/kuberuntime/types.ts";
import { instrumentRuntime } from "../../lib/metrics/mod.ts";
import { syncTraceHandler } from "../../lib/server/sync_trace_route.ts";
import { subresourcesFor } from "../../lib/server_auth/attributes.ts";
import {
  currentSync,
  explainAnswer,
  MAX_CALLS,
  MAX_TEXT,
  type PodSyncTrace,
  renderExplanation,
  SyncTracer,
} from "../../lib/trace/mod.ts";
import { parseExplainArgs } from "../../lib/trace/explain.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { helpText, parseFlags } from "../../lib/options/mod.ts";
import {
  exitedContainer,
  runtimeContainer,
  runtimePodStatus,
  runtimeSandbox,
  testPod,
} from "../kit/mod.ts";

const POD = { uid: "u1", namespace: "default", name: "web" };

Deno.test("SyncTracer keeps the last `depth` syncs of a pod, oldest first", async () => {
  const tracer = new SyncTracer({ depth: 3, clock: new FakeClock() });
  for (let i = 0; i < 5; i++) await tracer.run(POD, "sync", () => Promise.resolve(i));
  const trace = tracer.trace("default", "web")!;
  deepStrictEqual(trace.syncs.map((s) => s.seq), [3, 4, 5]);
  strictEqual(trace.depth, 3);
  strictEqual(trace.uid, "u1");
});

Deno.test("SyncTracer gives a sync every trigger noted since the previous one", async () => {
  const clock = new FakeClock();
  const tracer = new SyncTracer({ depth: 5, clock });
  tracer.noteTrigger(POD, "config", "ADD from source file");
  tracer.noteTrigger(POD, "pleg", "ContainerStarted abc");
  await tracer.run(POD, "sync", () => Promise.resolve());
  await tracer.run(POD, "sync", () => Promise.resolve());
  const [first, second] = tracer.trace("default", "web")!.syncs;
  deepStrictEqual(first!.triggers.map((t) => t.source), ["config", "pleg"]);
  // Nobody asked for the second: the worker's own resync.
  deepStrictEqual(second!.triggers.map((t) => [t.source, t.detail]), [[
    "resync",
    "periodic resync",
  ]]);
});

Deno.test("SyncTracer names an expired back-off as the reason of an unasked sync", async () => {
  const clock = new FakeClock();
  const tracer = new SyncTracer({ depth: 5, clock });
  await tracer.run(POD, "sync", () => {
    currentSync()!.plan({
      killPod: false,
      createSandbox: false,
      start: [],
      kill: [],
      update: [],
      backoff: [{
        name: "main",
        reason: "CrashLoopBackOff",
        message: "",
        until: clock.now() + 10_000,
      }],
      reasons: [],
    });
    return Promise.resolve();
  });
  clock.tick(10_000);
  await tracer.run(POD, "sync", () => Promise.reject(new Error("boom"))).catch(() => {});
  await tracer.run(POD, "sync", () => Promise.resolve());
  const syncs = tracer.trace("default", "web")!.syncs;
  deepStrictEqual(syncs[1]!.triggers[0]!.source, "backoff-expired");
  strictEqual(syncs[1]!.error, "boom");
  deepStrictEqual(syncs[2]!.triggers[0]!.detail, "retry after error");
});

Deno.test("SyncTracer records the CRI calls of the sync running in the async context only", async () => {
  const clock = new FakeClock();
  const tracer = new SyncTracer({ depth: 5, clock });
  const inner = {
    createContainer: () => Promise.resolve("c1"),
    startContainer: () => Promise.reject(new Error("exec format error")),
    listContainers: () => Promise.resolve([]),
    close: () => {},
  } as unknown as RuntimeService;
  const cri = instrumentRuntime(inner, { observeRuntimeOperation: () => {} });
  let late: (() => Promise<unknown>) | undefined;
  await tracer.run(POD, "sync", async () => {
    await cri.createContainer(
      "0123456789abcdef0123",
      { metadata: { name: "main", attempt: 0 }, image: { image: "busybox:1" } },
      { metadata: { name: "web", namespace: "default", uid: "u1", attempt: 0 } },
    );
    await cri.startContainer("c1").catch(() => {});
    // A callback made inside the sync but run after it (a probe timer's) records nothing.
    late = () => cri.listContainers();
  });
  await cri.listContainers(); // outside any sync
  await late!();
  const calls = tracer.trace("default", "web")!.syncs[0]!.calls;
  deepStrictEqual(calls.map((c) => [c.rpc, c.args, c.error]), [
    ["createContainer", "sandbox=0123456789abc name=main image=busybox:1", undefined],
    ["startContainer", "id=c1", "exec format error"],
  ]);
});

Deno.test("SyncTracer bounds a sync's calls and its strings", async () => {
  const tracer = new SyncTracer({ depth: 1, clock: new FakeClock() });
  await tracer.run(POD, "sync", () => {
    for (let i = 0; i < MAX_CALLS + 5; i++) currentSync()!.call("version", "", 1);
    currentSync()!.step({ action: "StartContainer", target: "x".repeat(MAX_TEXT * 4) });
    return Promise.resolve();
  });
  const sync = tracer.trace("default", "web")!.syncs[0]!;
  strictEqual(sync.calls.length, MAX_CALLS);
  strictEqual(sync.truncated, 5);
  strictEqual(sync.steps[0]!.target.length, MAX_TEXT + 1);
});

Deno.test("SyncTracer cuts the plan's strings too, and never half a character", async () => {
  const tracer = new SyncTracer({ depth: 1, clock: new FakeClock() });
  const long = "m".repeat(MAX_TEXT * 2);
  // A cut at MAX_TEXT would keep the first half of the emoji's surrogate pair.
  const emoji = `${"x".repeat(MAX_TEXT - 1)}\u{1F600}tail`;
  await tracer.run(POD, "sync", () => {
    currentSync()!.plan({
      killPod: false,
      createSandbox: false,
      start: [],
      kill: [{ name: "side", reason: long, message: long }],
      backoff: [{ name: "main", reason: "CrashLoopBackOff", message: long, until: 5 }],
      update: [],
      reasons: [emoji, "short"],
    });
    return Promise.resolve();
  });
  const plan = tracer.trace("default", "web")!.syncs[0]!.plan!;
  const cut = `${"m".repeat(MAX_TEXT)}…`;
  deepStrictEqual(plan.kill, [{ name: "side", reason: cut, message: cut }]);
  deepStrictEqual(plan.backoff, [{
    name: "main",
    reason: "CrashLoopBackOff",
    message: cut,
    until: 5,
  }]);
  deepStrictEqual(plan.reasons, [`${"x".repeat(MAX_TEXT - 1)}…`, "short"]);
});

Deno.test("SyncTracer.retain() drops the traces of pods gone from the node", async () => {
  const tracer = new SyncTracer({ depth: 2, clock: new FakeClock() });
  await tracer.run(POD, "sync", () => Promise.resolve());
  await tracer.run({ ...POD, uid: "u2", name: "db" }, "sync", () => Promise.resolve());
  tracer.retain((uid) => uid === "u2");
  strictEqual(tracer.trace("default", "web"), undefined);
  ok(tracer.trace("default", "db"));
  strictEqual(tracer.podCount, 1);
});

Deno.test("SyncTracer with depth 0 records nothing and still runs the sync", async () => {
  const tracer = new SyncTracer({ depth: 0, clock: new FakeClock() });
  tracer.noteTrigger(POD, "config", "ADD");
  strictEqual(await tracer.run(POD, "sync", () => Promise.resolve(7)), 7);
  strictEqual(tracer.trace("default", "web"), undefined);
  strictEqual(tracer.podCount, 0);
});

Deno.test("planReasons() says why each container starts or waits, without changing the plan", () => {
  const now = Date.UTC(2026, 0, 1, 0, 10);
  const pod = testPod({ ...POD, containers: ["main", "side"], spec: { restartPolicy: "Always" } });
  const [main, side] = pod.spec.containers;
  const status = runtimePodStatus({
    ...POD,
    sandboxes: [runtimeSandbox({ createdAt: now - 120_000 })],
    containers: [
      exitedContainer(main!, 1, {
        id: "m1",
        finishedAt: now - 5_000,
        restartCount: 3,
        reason: "Error",
      }),
      exitedContainer(side!, 2, { id: "s1", finishedAt: now - 5_000, reason: "Error" }),
    ],
  });
  const backoff = new Map([[backoffKey(POD, "main", hashContainer(main!)), {
    delayMs: 40_000,
    lastUpdate: now - 5_000,
  }]]);
  const input = { pod, status, backoff, now };
  const before = JSON.stringify(computePodActions(input));
  const actions = computePodActions(input);
  deepStrictEqual(planReasons(input, actions), [
    "start container side: exited with code 2 (Error), restart 1",
    "hold main: CrashLoopBackOff for 35s, exit code 1 " +
    "(back-off 40s restarting failed container=main pod=web_default(u1))",
  ]);
  strictEqual(JSON.stringify(actions), before);
});

Deno.test("planReasons() explains a new pod's sandbox and a pod that runs as specified", () => {
  const pod = testPod({ ...POD });
  const fresh = {
    pod,
    status: runtimePodStatus({ ...POD, sandboxes: [] }),
    backoff: new Map(),
    now: 0,
  };
  deepStrictEqual(planReasons(fresh, computePodActions(fresh)), [
    "create sandbox (attempt 0): no sandbox",
    "start container main: never started in this sandbox",
  ]);
  const running = {
    ...fresh,
    status: runtimePodStatus({ ...POD, containers: [runtimeContainer(pod.spec.containers[0]!)] }),
  };
  deepStrictEqual(planReasons(running, computePodActions(running)), [
    "nothing to do: the pod runs as specified",
  ]);
});

/** A crash-looping pod's trace as the agent serves it. */
function crashLoopTrace(now: number): PodSyncTrace {
  return {
    pod: "default/web",
    uid: "u1",
    depth: 20,
    syncs: [{
      seq: 7,
      kind: "sync",
      startedAt: now - 3_000,
      endedAt: now - 2_990,
      triggers: [{ at: now - 3_000, source: "pleg", detail: "ContainerDied 3f2a" }],
      plan: {
        killPod: false,
        createSandbox: false,
        start: [],
        kill: [],
        update: [],
        backoff: [{
          name: "main",
          reason: "CrashLoopBackOff",
          message: "back-off 40s",
          until: now + 37_000,
        }],
        reasons: ["hold main: CrashLoopBackOff for 40s, exit code 1 (back-off 40s)"],
      },
      calls: [{ at: now - 2_999, rpc: "containerStatus", args: "id=3f2a", ms: 1.5 }],
      steps: [],
      status: {
        phase: "Running",
        containers: [{
          name: "main",
          state: "waiting",
          reason: "CrashLoopBackOff",
          message: "back-off 40s restarting failed container=main",
          restartCount: 4,
          lastExitCode: 1,
        }],
      },
    }],
  };
}

Deno.test("explainAnswer() puts the back-off, restarts, exit code and last log line first", () => {
  const now = Date.UTC(2026, 0, 1, 5, 21, 6);
  const answer = explainAnswer(crashLoopTrace(now), {
    now,
    lastLogLines: new Map([["main", "panic: no config"]]),
  });
  strictEqual(
    answer,
    'default/web: not running because: CrashLoopBackOff, next start in 37 s (restart 4, exit code 1, last log line: "panic: no config")',
  );
});

Deno.test("renderExplanation() prints the answer, then each sync with its plan, calls and status", () => {
  const now = Date.UTC(2026, 0, 1, 5, 21, 6);
  const text = renderExplanation(crashLoopTrace(now), {
    now,
    logProblem: "not served here (read-only port; use --server)",
  });
  strictEqual(
    text,
    [
      "default/web: not running because: CrashLoopBackOff, next start in 37 s (restart 4, exit code 1, last log line: not served here (read-only port; use --server))",
      "",
      "last 1 sync(s) of default/web (uid u1, times UTC), oldest first:",
      "05:21:03.000 sync #7 (10 ms) ← pleg: ContainerDied 3f2a",
      "  plan   hold main: CrashLoopBackOff for 40s, exit code 1 (back-off 40s)",
      "  call   containerStatus id=3f2a  1.5 ms",
      "  status Running; main waiting CrashLoopBackOff (restart 4, last exit code 1)",
      "",
    ].join("\n"),
  );
});

Deno.test("explainAnswer() says a pod whose containers all run is running", () => {
  const trace = crashLoopTrace(0);
  trace.syncs[0]!.status!.containers = [{ name: "main", state: "running", restartCount: 2 }];
  match(explainAnswer(trace, { now: 0 }), /^default\/web: running \(1 container\(s\), 2 restart/);
});

Deno.test("/debug/pods/{ns}/{name}/syncs serves the trace as JSON, 404 for an unknown pod", async () => {
  const trace = crashLoopTrace(0);
  const handler = syncTraceHandler((
    ns,
    name,
  ) => (ns === "default" && name === "web" ? trace : undefined));
  const get = (path: string) =>
    Promise.resolve(handler(new Request(`http://x${path}`), new URL(`http://x${path}`)));
  const ok200 = await get("/debug/pods/default/web/syncs");
  strictEqual(ok200.status, 200);
  deepStrictEqual(await ok200.json(), trace);
  strictEqual((await get("/debug/pods/default/nope/syncs")).status, 404);
  strictEqual((await get("/debug/pods/default/web")).status, 404);
  // A name that does not decode is the request's fault, not the server's (found by the
  // fuzz suite, seed 1502946144: it was a 500).
  strictEqual((await get("/debug/pods/default/%c0%af/syncs")).status, 400);
  strictEqual((await get("/debug/pods/default/%zz/syncs")).status, 400);
  // Authorised as upstream authorises any path without a subresource of its own.
  deepStrictEqual(subresourcesFor("/debug/pods/default/web/syncs"), ["proxy"]);
});

Deno.test("parseExplainArgs() defaults to the read-only port on loopback", async () => {
  const args = await parseExplainArgs(["kube-system/dns", "--read-only-port=10266"]);
  deepStrictEqual(args, {
    namespace: "kube-system",
    name: "dns",
    target: { base: "http://127.0.0.1:10266" },
    json: false,
  });
  await parseExplainArgs(["dns"]).then(() => ok(false), (err) => match(err.message, /namespace/));
});

Deno.test("--sync-trace-depth is denolet's own flag: default 20, 0 turns the trace off", () => {
  const depth = (argv: string[]) => {
    const r = parseFlags(argv);
    if (r.kind !== "run") throw new Error(`parseFlags answered ${r.kind}`);
    return { depth: r.options.syncTraceDepth, warnings: r.options.warnings };
  };
  deepStrictEqual(depth([]).depth, 20);
  deepStrictEqual(depth(["--sync-trace-depth=5"]).depth, 5);
  deepStrictEqual(depth(["--sync-trace-depth=0"]).depth, 0);
  // Not deprecated in favour of --config, and not a "not implemented" warning.
  deepStrictEqual(depth(["--sync-trace-depth=5"]).warnings, depth([]).warnings);
  match(helpText(), /--sync-trace-depth int32 +\(denolet\) Syncs kept per pod .*\(default 20\)/);
});
