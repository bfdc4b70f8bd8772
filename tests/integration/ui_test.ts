/**
 * The node page in a real browser: headless Chromium (Debian's `chromium`,
 * installed by tools/dev.sh) loads `/ui` from a running agent on real
 * containerd, runs the page's script and the DOM it renders is checked: the
 * pods listed, a crash-looping pod shown with its back-off, sparklines with
 * points, the page refreshed in place. It also takes a screenshot; with
 * `DENOLET_UI_SCREENSHOT=docs/ui.png` it lands where the README shows it.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startTestRuntime } from "../harness/mod.ts";
import type { NodePageData } from "../../lib/ui/mod.ts";
import { type AgentProcess, podManifest, startAgent } from "./_agent.ts";
import { chromiumPath, runChromium, waitFor } from "../kit/mod.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

async function pageData(agent: AgentProcess): Promise<NodePageData> {
  const resp = await fetch(`http://127.0.0.1:${agent.readOnlyPort}/ui/data`);
  if (!resp.ok) throw new Error(`/ui/data answered ${resp.status}`);
  return await resp.json();
}

Deno.test({
  name: "node page: headless Chromium renders pods, a crash loop's back-off and sparklines",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const browser = chromiumPath();
    const rt = await startTestRuntime({ name: "ui" });
    const profile = await Deno.makeTempDir({ prefix: "denolet-ui-chromium-" });
    let agent: AgentProcess | undefined;
    try {
      agent = await startAgent({ runtime: rt });
      const a = agent;
      const sh = (cmd: string) => ["sh", "-c", cmd];
      await Deno.writeTextFile(
        join(a.manifestDir, "crasher.json"),
        podManifest({
          name: "crasher",
          image: rt.images.busybox,
          command: sh("echo boom; exit 1"),
        }),
      );
      await Deno.writeTextFile(
        join(a.manifestDir, "web.json"),
        JSON.stringify({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "web", namespace: "default" },
          spec: {
            hostNetwork: true,
            terminationGracePeriodSeconds: 1,
            containers: [{
              name: "server",
              image: rt.images.busybox,
              imagePullPolicy: "Never",
              command: sh("trap 'exit 0' TERM; touch /tmp/ready; while true; do sleep 0.2; done"),
              readinessProbe: { exec: { command: ["test", "-f", "/tmp/ready"] }, periodSeconds: 1 },
              livenessProbe: { exec: { command: ["true"] }, periodSeconds: 2 },
            }],
          },
        }),
      );

      // What the browser should find: the data first, so a failure says which side is wrong.
      const data = await waitFor(
        "the crash loop and the web pod's samples in /ui/data",
        async () => {
          const d = await pageData(a);
          const crasher = d.pods.find((p) => p.name === "crasher-testnode");
          const web = d.pods.find((p) => p.name === "web-testnode");
          const ok = crasher?.containers[0]?.reason === "CrashLoopBackOff" &&
            web?.containers[0]?.ready && web.memory.points >= 3 && web.cpu.points >= 2 &&
            web.containers[0].probes.every((p) => p.result === "success");
          return ok ? d : undefined;
        },
        { timeoutMs: 90_000, intervalMs: 500, log: a.log },
      );
      assert.equal(data.node.source, "local");
      assert.ok(data.node.conditions.some((c) => c.type === "Ready"));

      // The authenticated server (flag defaults: anonymous, AlwaysAllow), over TLS. The
      // virtual-time budget lets the page fetch ui/data and refresh itself a few times.
      const dom = await runChromium(`https://127.0.0.1:${a.port}/ui`, {
        profile,
        args: ["--virtual-time-budget=10000", "--dump-dom"],
      });
      assert.match(dom, /<body[^>]* data-state="ready"/, `the page's script ran:\n${dom}`);
      const refreshes = Number(/data-refreshes="(\d+)"/.exec(dom)?.[1] ?? 0);
      assert.ok(refreshes >= 2, `refreshed in place ${refreshes} times`);
      assert.match(dom, /<span id="podcount">2<\/span>/);
      assert.ok(dom.includes("default/crasher-testnode"), "the crash-looping pod is listed");
      assert.ok(dom.includes("default/web-testnode"), "the web pod is listed");
      assert.match(dom, /data-status="CrashLoopBackOff"/, "the pod's status is its back-off");
      assert.match(
        dom,
        /data-name="main" data-state="waiting" data-reason="CrashLoopBackOff"/,
        "the container waits in CrashLoopBackOff",
      );
      assert.match(dom, /back-off \d+s restarting failed container=main/, "with the back-off");
      assert.match(dom, /last: Error, exit 1/, "and its last exit");
      assert.match(dom, /data-type="Readiness" data-result="success"/, "a probe and its result");
      assert.match(dom, /href="debug\/pods\/default\/web-testnode\/syncs"/, "the sync trace link");
      const points = [...dom.matchAll(/data-points="(\d+)"/g)].map((m) => Number(m[1]));
      assert.ok(points.some((n) => n >= 3), `a sparkline has points: ${points}`);
      assert.match(dom, /<path d="M[\d.]+ [\d.]+L[\d.]+ [\d.]+/, "drawn as a path");
      assert.match(dom, /data-type="Ready"/, "the node's conditions");

      // A screenshot from the read-only port: the README's, when asked for.
      const shot = join(profile, "ui.png");
      await runChromium(`http://127.0.0.1:${a.readOnlyPort}/ui`, {
        profile,
        args: ["--virtual-time-budget=5000", "--hide-scrollbars", `--screenshot=${shot}`],
      });
      const png = await Deno.readFile(shot);
      assert.deepEqual([...png.subarray(1, 4)], [0x50, 0x4e, 0x47], "a PNG");
      assert.ok(png.length > 10_000, `a screenshot of something (${png.length} bytes)`);
      const keep = Deno.env.get("DENOLET_UI_SCREENSHOT");
      if (keep) await Deno.copyFile(shot, join(ROOT, keep));
      console.log(`chromium ${browser}: ${refreshes} refreshes, screenshot ${png.length} bytes`);
    } finally {
      await agent?.stop();
      await rt.stop();
      await agent?.removeDirs();
      await Deno.remove(profile, { recursive: true }).catch(() => {});
    }
  },
});
