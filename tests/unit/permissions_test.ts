import assert from "node:assert/strict";
import { agentPathPermissions, checkPermissions } from "../../lib/agent/permissions.ts";

const MODULE = new URL("../../lib/agent/permissions.ts", import.meta.url).href;

/**
 * Runs checkPermissions() in a child `deno run` with a narrow permission set
 * (this test process itself runs with -A, where every query is granted).
 */
async function checkInChild(allow: string[], paths: unknown): Promise<string[]> {
  const dir = await Deno.makeTempDir({ prefix: "denolet-perm-" });
  try {
    const script = `${dir}/check.ts`;
    await Deno.writeTextFile(
      script,
      `import { checkPermissions } from ${JSON.stringify(MODULE)};\n` +
        `console.log(JSON.stringify(checkPermissions(${JSON.stringify(paths)})));\n`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--quiet", "--no-prompt", ...allow, script],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, stderr);
    return JSON.parse(new TextDecoder().decode(out.stdout));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("checkPermissions() names the flag, path and grant for a denied write", async () => {
  const problems = await checkInChild(
    ["--allow-read=/var/lib/kubelet", "--allow-write=/var/lib/kubelet"],
    [
      { flag: "--root-dir", path: "/var/lib/kubelet", access: "write" },
      { flag: "--root-dir", path: "/srv/elsewhere", access: "write" },
    ],
  );
  assert.equal(problems.length, 1);
  const msg = problems[0]!;
  assert.ok(msg.startsWith("--root-dir=/srv/elsewhere: denolet may not write"), msg);
  assert.ok(msg.includes("permissions.agent.write in deno.json"), msg);
  assert.ok(msg.includes("--allow-write=/srv/elsewhere"), msg);
});

Deno.test("checkPermissions() grants paths under an allowed directory", async () => {
  const problems = await checkInChild(["--allow-read=/etc/kubernetes"], [
    { flag: "--pod-manifest-path", path: "/etc/kubernetes/manifests", access: "read" },
    { flag: "--kubeconfig", path: "/etc/kubernetes/kubelet.conf", access: "read" },
  ]);
  assert.deepEqual(problems, []);
});

Deno.test("checkPermissions() reports read and write separately", async () => {
  const problems = await checkInChild(["--allow-read=/data"], [
    { flag: "--pod-logs-dir", path: "/data/logs", access: "read" },
    { flag: "--pod-logs-dir", path: "/data/logs", access: "write" },
  ]);
  assert.equal(problems.length, 1);
  assert.ok(problems[0]!.includes("may not write"), problems[0]!);
});

Deno.test("checkPermissions() returns nothing under full access", () => {
  // This test process runs with -A.
  assert.deepEqual(
    checkPermissions([{ flag: "--root-dir", path: "/nowhere", access: "write" }]),
    [],
  );
});

Deno.test("agentPathPermissions() lists dirs, files and the CRI socket without its scheme", () => {
  const list = agentPathPermissions({
    rootDir: "/var/lib/kubelet",
    podLogsDir: "/var/log/pods",
    podManifestPath: "/etc/kubernetes/manifests",
    containerRuntimeEndpoint: "unix:///run/containerd/containerd.sock",
    imageServiceEndpoint: "",
    kubeconfig: "/etc/kubernetes/kubelet.conf",
    configFile: "/var/lib/kubelet/config.yaml",
    certDir: "/var/lib/kubelet/pki",
  });
  const rows = list.map((p) => `${p.access} ${p.flag} ${p.path}`);
  assert.deepEqual(rows, [
    "read --root-dir /var/lib/kubelet",
    "write --root-dir /var/lib/kubelet",
    "read --pod-logs-dir /var/log/pods",
    "write --pod-logs-dir /var/log/pods",
    "read --pod-manifest-path /etc/kubernetes/manifests",
    "read --kubeconfig /etc/kubernetes/kubelet.conf",
    "read --config /var/lib/kubelet/config.yaml",
    "read --cert-dir /var/lib/kubelet/pki",
    "write --cert-dir /var/lib/kubelet/pki",
    "read --container-runtime-endpoint /run/containerd/containerd.sock",
    "write --container-runtime-endpoint /run/containerd/containerd.sock",
  ]);
});

Deno.test("agentPathPermissions() skips endpoints that are not unix sockets", () => {
  const list = agentPathPermissions({
    rootDir: "/r",
    podLogsDir: "/l",
    containerRuntimeEndpoint: "tcp://127.0.0.1:1234",
  });
  assert.equal(list.length, 4);
});
