/**
 * The agent's Deno permissions: the `agent` set in deno.json, why it grants
 * every kind, and the start-up check that turns a flag pointing outside the
 * granted paths into exit status 2 with a message.
 *
 * The `agent` set is all-access (see the comment in deno.json and
 * docs/install.md): Deno 2.9.6 reads /proc and /sys only with every permission
 * unscoped. So "a path outside the list" cannot happen under `-P=agent`; the
 * start-up check is exercised with a narrowed run instead.
 *
 * @module
 */

import assert from "node:assert/strict";
import { readDenoJson } from "../../tools/run_task.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const decoder = new TextDecoder();
const KINDS = ["read", "write", "net", "env", "sys", "run", "ffi", "import"];

/** Runs a script reading the stats sources, under the given permission flags. */
async function readStatsSources(flags: string[]): Promise<{ code: number; out: string }> {
  const dir = await Deno.makeTempDir({ prefix: "denolet-perm-" });
  try {
    const script = `${dir}/read.ts`;
    await Deno.writeTextFile(
      script,
      `for (const p of ["/proc/meminfo", "/proc/self/mountinfo", "/proc/stat"]) ` +
        `Deno.readTextFileSync(p);\n` +
        `for (const _ of Deno.readDirSync("/sys/fs/cgroup")) break;\n` +
        `console.log("read ok");\n`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--quiet", "--no-prompt", `--config=${ROOT}deno.json`, ...flags, script],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    return { code: out.code, out: decoder.decode(out.stdout) + decoder.decode(out.stderr) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("deno.json's agent set lists every permission kind explicitly, in full", () => {
  const { permissions, tasks } = readDenoJson();
  const set = permissions.agent ?? {};
  assert.equal(set.all, undefined, "the set must list kinds, not all: true (-A)");
  for (const kind of KINDS) assert.equal(set[kind], true, `agent.${kind}`);
  assert.match(tasks.run ?? "", /-P=agent/);
  assert.doesNotMatch(tasks.run ?? "", /(^|\s)(-A|--allow-all)(\s|$)/);
});

Deno.test("the agent set (-P=agent) can read /proc and /sys/fs/cgroup", async () => {
  const res = await readStatsSources(["-P=agent"]);
  assert.equal(res.code, 0, res.out);
  assert.match(res.out, /read ok/);
});

Deno.test("a scoped permission set cannot read /proc, which is why the agent set is full", async () => {
  // Every kind granted but net scoped to loopback: still not "all access".
  const res = await readStatsSources([
    "--allow-read",
    "--allow-write",
    "--allow-net=127.0.0.1",
    "--allow-env",
    "--allow-sys",
    "--allow-run",
    "--allow-ffi",
    "--allow-import",
  ]);
  assert.notEqual(
    res.code,
    0,
    "Deno now reads /proc without all permissions: narrow the agent set in deno.json " +
      "and update docs/install.md",
  );
  assert.match(res.out, /NotCapable: Requires all access to "\/proc\/meminfo"/);
});

Deno.test("the agent exits 2 naming --root-dir when the flag points outside its permissions", async () => {
  const allowed = await Deno.makeTempDir({ prefix: "denolet-allowed-" });
  const outside = `/var/tmp/denolet-outside-${crypto.randomUUID()}`;
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "--no-prompt",
        // The narrowed run: the repository (modules) and one scratch dir only.
        `--allow-read=${ROOT},${allowed}`,
        `--allow-write=${allowed}`,
        "--allow-net=127.0.0.1",
        "--allow-env",
        "--allow-sys",
        "--allow-run=mount,umount",
        `${ROOT}main.ts`,
        `--root-dir=${outside}`,
        `--pod-logs-dir=${allowed}/logs`,
        `--pod-manifest-path=${allowed}/manifests`,
        `--container-runtime-endpoint=unix://${allowed}/containerd.sock`,
        "--healthz-port=0",
        "--read-only-port=0",
      ],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(60_000),
    }).output();
    const stderr = decoder.decode(out.stderr);
    assert.equal(
      out.code,
      2,
      `expected exit 2 (main.ts must call checkPermissions(agentPathPermissions(opts)) and ` +
        `exit 2 before starting anything); stderr:\n${stderr}`,
    );
    assert.match(stderr, new RegExp(`--root-dir=${outside}: denolet may not write`));
    assert.match(stderr, /permissions\.agent\.write in deno\.json/);
    assert.doesNotMatch(stderr, /NotCapable|\n\s+at /, "a message, not a stack trace");
    await assert.rejects(Deno.stat(outside), Deno.errors.NotFound);
  } finally {
    await Deno.remove(allowed, { recursive: true });
  }
});
