/**
 * The sync trace on the real agent and containerd: a crash-looping static
 * pod's syncs served at /debug/pods/{ns}/{name}/syncs, and `denolet explain`
 * answering why it is not running.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startTestRuntime } from "../harness/mod.ts";
import type { PodSyncTrace } from "../../lib/trace/mod.ts";
import { type AgentProcess, findPod, podManifest, startAgent } from "./_agent.ts";
import { waitFor } from "../kit/mod.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** Runs `denolet explain` as a user would, against the agent. */
async function explain(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", `${ROOT}main.ts`, "explain", ...args],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

Deno.test({
  name: "a crash-looping pod's sync trace is served and `denolet explain` names why it is down",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const rt = await startTestRuntime({ name: "trace" });
    let agent: AgentProcess | undefined;
    try {
      agent = await startAgent({ runtime: rt });
      const a = agent;
      await Deno.writeTextFile(
        join(a.manifestDir, "crash.yaml"),
        podManifest({
          name: "crash",
          image: rt.images.busybox,
          command: ["sh", "-c", "echo starting; echo config missing: /etc/app.conf; exit 3"],
        }),
      );
      const restarts = await waitFor("crash in CrashLoopBackOff after a restart", async () => {
        const cs = findPod(await a.pods(), "crash")?.status?.containerStatuses?.[0];
        return cs?.state.waiting?.reason === "CrashLoopBackOff" && cs.restartCount >= 1
          ? cs.restartCount
          : undefined;
      }, { timeoutMs: 60_000, log: a.log });
      const route = "/debug/pods/default/crash-testnode/syncs";

      await t.step(
        "the route serves the pod's syncs: triggers, plan, CRI calls, status",
        async () => {
          const resp = await fetch(`http://127.0.0.1:${a.readOnlyPort}${route}`);
          assert.equal(resp.status, 200);
          const trace = await resp.json() as PodSyncTrace;
          assert.equal(trace.pod, "default/crash-testnode");
          assert.equal(trace.depth, 20);
          assert.ok(trace.syncs.length > 1 && trace.syncs.length <= 20);
          const all = trace.syncs;
          // seq counts every pod's syncs; this is the only pod, so seq 1 is its first: the ADD.
          if (all[0]!.seq === 1) {
            assert.match(all[0]!.triggers[0]!.detail, /^ADD from source file/);
          }
          assert.ok(all.some((s) => s.triggers.some((x) => x.source === "pleg")), "a PLEG trigger");
          const calls = all.flatMap((s) => s.calls);
          assert.ok(
            calls.some((c) => c.rpc === "createContainer" && /name=main image=/.test(c.args)),
            "createContainer with the container's name and image",
          );
          assert.ok(calls.some((c) => c.rpc === "startContainer" && c.ms >= 0));
          const held = all.find((s) => s.plan?.backoff.some((b) => b.name === "main"));
          assert.ok(held, "a sync whose plan held main back");
          assert.match(
            held.plan!.reasons.join("\n"),
            /hold main: CrashLoopBackOff for \d+s, exit code 3/,
          );
          const started = all.find((s) => s.plan?.start.includes("main") && s.steps.length > 0);
          assert.ok(
            started?.steps.some((s) => s.action === "StartContainer" && s.target === "main"),
          );
          const last = all.findLast((s) => s.status)!.status!;
          assert.equal(last.containers[0]?.reason, "CrashLoopBackOff");
          assert.equal(last.containers[0]?.lastExitCode, 3);
          // Unknown pods are 404.
          assert.equal(
            await fetch(`http://127.0.0.1:${a.readOnlyPort}/debug/pods/default/nope/syncs`)
              .then(async (r) => (await r.body?.cancel(), r.status)),
            404,
          );
        },
      );

      await t.step("`denolet explain` on the read-only port answers first", async () => {
        const out = await explain(["default/crash-testnode", `--read-only-port=${a.readOnlyPort}`]);
        assert.equal(out.code, 0, out.stderr);
        const answer = out.stdout.split("\n")[0]!;
        const m = answer.match(
          /^default\/crash-testnode: not running because: CrashLoopBackOff, next start in \d+ s \(restart (\d+), exit code 3, last log line: not served here/,
        );
        assert.ok(m, answer);
        assert.ok(Number(m[1]) >= restarts, answer);
        assert.match(out.stdout, /sync #\d+ \(\d+ ms\) ← /);
        assert.match(out.stdout, /call {3}createContainer sandbox=\S+ name=main image=/);
      });

      await t.step(
        "`denolet explain --server` reads the last log line on the secure port",
        async () => {
          const out = await explain([
            "default/crash-testnode",
            `--server=https://127.0.0.1:${a.port}`,
            // The self-signed serving certificate names the node's IP, not loopback.
            "--insecure-skip-tls-verify",
          ]);
          assert.equal(out.code, 0, out.stderr);
          if (Deno.env.get("TRACE_PRINT")) console.log(out.stdout);
          assert.match(
            out.stdout.split("\n")[0]!,
            /CrashLoopBackOff, next start in \d+ s \(restart \d+, exit code 3, last log line: "config missing: \/etc\/app.conf"\)$/,
          );
        },
      );
    } finally {
      if (agent) await agent.stop("SIGKILL");
      await rt.stop();
      await agent?.removeDirs();
    }
  },
});
