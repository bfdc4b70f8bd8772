/**
 * The bundled agent (tools/bundle.ts: `dist/denolet.js`, the program `deno task compile`
 * puts in the binary and the side-by-side bench runs) on a real containerd + runc: it
 * runs a static pod like the agent run from main.ts, and its klog callers name the `.ts`
 * file and line, from the bundle's line table, without a source map.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startTestRuntime } from "../harness/mod.ts";
import { bundleAgent, bundleLinesIn } from "../../tools/bundle.ts";
import { sourceLine } from "../../lib/util/bundle_lines.ts";
import { type AgentProcess, findPod, podManifest, startAgent } from "./_agent.ts";
import { waitFor } from "../kit/mod.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** The 1-based line of the first line of `file` (under the repository) holding `text`. */
async function lineOf(file: string, text: string): Promise<number> {
  const lines = (await Deno.readTextFile(`${ROOT}${file}`)).split("\n");
  const at = lines.findIndex((l) => l.includes(text));
  assert.ok(at >= 0, `${text} in ${file}`);
  return at + 1;
}

Deno.test({
  name: "the bundled agent runs a static pod and its log names the .ts callers",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const program = await bundleAgent();
    const code = await Deno.readTextFile(program);
    assert.doesNotMatch(code, /sourceMappingURL/, "no source map for Deno to load");
    assert.doesNotMatch(code, /[\u0100-\uffff]/, "one byte a character in V8");
    assert.doesNotMatch(code, /^\s*\/\*\*/m, "no doc comments (V8 holds the text)");
    const rt = await startTestRuntime({ name: "bundle" });
    let agent: AgentProcess | undefined;
    try {
      agent = await startAgent({ runtime: rt, program });
      const a = agent;
      await Deno.writeTextFile(
        join(a.manifestDir, "web.yaml"),
        podManifest({ name: "web", image: rt.images.busybox, command: ["sleep", "3600"] }),
      );
      await waitFor("web running", async () => {
        const p = findPod(await a.pods(), "web");
        return p?.status?.phase === "Running" ? p : undefined;
      }, { timeoutMs: 30_000, log: a.log });
      const [status, body] = await a.healthz();
      assert.equal(status, 200, body);

      // The same records as main.ts's agent writes, with the same callers.
      const started = await lineOf("main.ts", 'logger.info("Starting denolet"');
      assert.match(a.log(), new RegExp(` main\\.ts:${started}\\] "Starting denolet"`), a.log());
      // The table read back from the file (bench/heap_per_pod.ts's frames) says the same.
      const bundleLine = code.split("\n").findIndex((l) => l.includes('"Starting denolet"')) + 1;
      assert.deepEqual(sourceLine(bundleLinesIn(code), bundleLine), {
        file: "../main.ts",
        line: started,
      });
      const cgroups = await lineOf("lib/cm/pod_cgroups.ts", '"QoS cgroups ready"');
      assert.match(a.log(), new RegExp(` pod_cgroups\\.ts:${cgroups}\\] "QoS cgroups ready"`));
      assert.doesNotMatch(a.log(), /denolet\.js:\d+\]|\?\?\?:1\]/, "no caller left unmapped");
    } finally {
      await agent?.stop("SIGKILL");
      await rt.stop();
      await agent?.removeDirs();
    }
  },
});
