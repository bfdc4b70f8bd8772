/** tools/run_task.ts: the runtime options of `deno task run`, shared with the harness and compile. */

import assert from "node:assert/strict";
import { compileOptions, runTaskOptions } from "../../tools/run_task.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

Deno.test("runTaskOptions() reads the permission set and runtime flags of deno.json's run task", () => {
  const options = runTaskOptions();
  assert.equal(options[0], "-P=agent");
  const v8 = options.find((o) => o.startsWith("--v8-flags="));
  assert.ok(v8, `no --v8-flags in ${options}`);
  assert.match(v8, /--max-semi-space-size=1/);
  assert.match(v8, /--heap-growing-percent=20/);
  assert.match(v8, /--gc-memory-reducer-start-delay-ms=\d+/);
  assert.match(v8, /--max-opt=2/);
  assert.deepEqual(compileOptions(), options.filter((o) => o !== "--quiet"));
});

Deno.test("the run task's options are accepted by this deno and its V8", async () => {
  const dir = await Deno.makeTempDir({ prefix: "denolet-run-task-" });
  try {
    await Deno.writeTextFile(`${dir}/ok.ts`, "console.log('ok');\n");
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", `--config=${ROOT}deno.json`, ...runTaskOptions(), `${dir}/ok.ts`],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.ok(out.success, stderr);
    assert.equal(new TextDecoder().decode(out.stdout).trim(), "ok");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
