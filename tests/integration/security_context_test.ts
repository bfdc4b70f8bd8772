/**
 * The pod and container securityContext as containers on a real containerd +
 * runc feel it: the seccomp mode in /proc/self/status (Unconfined,
 * RuntimeDefault, seccompDefault, a Localhost profile that denies mkdir), the
 * sysctls a pod sets, procMount's masked /proc paths, fsGroup among the
 * process's groups, and hostUsers: false refused as upstream refuses it on a
 * runtime without user namespaces. Then, through the agent: pods refused at
 * admission (a sysctl outside the allowlist, AppArmor on a host without it)
 * go Failed with upstream's reason while the pods beside them run. Needs root.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { createRuntimeService } from "../../lib/cri/mod.ts";
import { startTestRuntime } from "../harness/mod.ts";
import { runPod, testRuntimeManager } from "./_manager.ts";
import { type AgentProcess, findPod, startAgent } from "./_agent.ts";
import { hostNetworkPod, waitFor } from "../kit/mod.ts";
import { hostAppArmorEnabled } from "../../lib/admission/mod.ts";

/** The `Seccomp:` mode of a process in the container: 0 none, 2 filter. */
async function seccompMode(
  exec: (c: string, cmd: string[]) => Promise<{ out: string }>,
  container: string,
): Promise<string> {
  const { out } = await exec(container, ["cat", "/proc/self/status"]);
  return /^Seccomp:\s*(\d)/m.exec(out)?.[1] ?? `no Seccomp line in ${out}`;
}

const SLEEP = ["sleep", "3600"];

Deno.test({
  name:
    "securityContext on containerd: seccomp modes, sysctls, procMount, fsGroup groups, hostUsers refused",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const rt = await startTestRuntime({ name: "secctx" });
    const runtime = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
    try {
      const manager = testRuntimeManager(rt, runtime);
      const image = rt.images.busybox;

      await t.step(
        "seccomp: none named → Unconfined (0); RuntimeDefault → filter (2); a Localhost profile under <root-dir>/seccomp applies",
        async () => {
          const profileDir = `${rt.dir}/kubelet/seccomp/profiles`;
          await Deno.mkdir(profileDir, { recursive: true });
          await Deno.writeTextFile(
            `${profileDir}/deny-mkdir.json`,
            JSON.stringify({
              defaultAction: "SCMP_ACT_ALLOW",
              syscalls: [{ names: ["mkdir", "mkdirat"], action: "SCMP_ACT_ERRNO" }],
            }),
          );
          const p = hostNetworkPod(image, {
            name: "seccomp",
            namespace: "sec",
            containers: [
              { name: "plain", command: SLEEP },
              {
                name: "default",
                command: SLEEP,
                securityContext: { seccompProfile: { type: "RuntimeDefault" } },
              },
              {
                name: "local",
                command: SLEEP,
                securityContext: {
                  seccompProfile: {
                    type: "Localhost",
                    localhostProfile: "profiles/deny-mkdir.json",
                  },
                },
              },
            ],
          });
          const { exec, cleanup } = await runPod(runtime!, manager, p);
          try {
            assert.equal(await seccompMode(exec, "plain"), "0");
            assert.equal(await seccompMode(exec, "default"), "2");
            assert.equal(await seccompMode(exec, "local"), "2");
            assert.equal((await exec("plain", ["mkdir", "/tmp/x"])).code, 0);
            const denied = await exec("local", ["mkdir", "/tmp/x"]);
            assert.notEqual(denied.code, 0);
            assert.match(denied.err, /Operation not permitted/);
          } finally {
            await cleanup();
          }
        },
      );

      await t.step(
        "seccompDefault: a container naming no profile gets RuntimeDefault; Unconfined still wins",
        async () => {
          const withDefault = testRuntimeManager(rt, runtime, { seccompDefault: true });
          const p = hostNetworkPod(image, {
            name: "seccomp-default",
            namespace: "sec",
            containers: [
              { name: "plain", command: SLEEP },
              {
                name: "open",
                command: SLEEP,
                securityContext: { seccompProfile: { type: "Unconfined" } },
              },
            ],
          });
          const { exec, cleanup } = await runPod(runtime!, withDefault, p);
          try {
            assert.equal(await seccompMode(exec, "plain"), "2");
            assert.equal(await seccompMode(exec, "open"), "0");
          } finally {
            await cleanup();
          }
        },
      );

      await t.step(
        "sysctls: a pod-network pod's safe net and IPC sysctls hold inside it",
        async () => {
          const p = hostNetworkPod(image, {
            name: "sysctls",
            namespace: "sec",
            containers: [{ name: "main", command: SLEEP }],
            spec: {
              hostNetwork: false,
              securityContext: {
                sysctls: [
                  { name: "net.ipv4.ip_unprivileged_port_start", value: "0" },
                  { name: "kernel.shm_rmid_forced", value: "1" },
                ],
              },
            },
          });
          const { exec, cleanup } = await runPod(runtime!, manager, p);
          try {
            const port = await exec("main", [
              "cat",
              "/proc/sys/net/ipv4/ip_unprivileged_port_start",
            ]);
            assert.equal(port.out.trim(), "0");
            const shm = await exec("main", ["cat", "/proc/sys/kernel/shm_rmid_forced"]);
            assert.equal(shm.out.trim(), "1");
          } finally {
            await cleanup();
          }
        },
      );

      await t.step(
        "procMount: Default masks /proc/keys and makes /proc/sys read-only; Unmasked does neither",
        async () => {
          const p = hostNetworkPod(image, {
            name: "procmount",
            namespace: "sec",
            containers: [
              { name: "masked", command: SLEEP },
              { name: "unmasked", command: SLEEP, securityContext: { procMount: "Unmasked" } },
            ],
          });
          const { exec, cleanup } = await runPod(runtime!, manager, p);
          try {
            // A masked file is bind-mounted over by /dev/null, a character device.
            const kind = async (c: string) =>
              (await exec(c, ["ls", "-l", "/proc/keys"])).out.slice(0, 1);
            assert.equal(await kind("masked"), "c");
            assert.equal(await kind("unmasked"), "-");
            const mounts = async (c: string) => (await exec(c, ["cat", "/proc/self/mounts"])).out;
            assert.match(await mounts("masked"), /^proc \/proc\/sys proc ro,/m);
            assert.doesNotMatch(await mounts("unmasked"), /^proc \/proc\/sys proc ro,/m);
          } finally {
            await cleanup();
          }
        },
      );

      await t.step(
        "fsGroup: the process carries it; emptyDir and downwardAPI volumes are the group's (setgid dirs), hostPath is untouched",
        async () => {
          const hostDir = `${rt.dir}/host-data`;
          await Deno.mkdir(hostDir, { recursive: true });
          const p = hostNetworkPod(image, {
            name: "fsgroup",
            namespace: "sec",
            containers: [{
              name: "main",
              command: SLEEP,
              volumeMounts: [
                { name: "data", mountPath: "/data" },
                { name: "info", mountPath: "/info" },
                { name: "host", mountPath: "/host" },
              ],
            }],
            spec: {
              securityContext: { runAsUser: 1000, fsGroup: 2345, supplementalGroups: [3456] },
              volumes: [
                { name: "data", emptyDir: {} },
                {
                  name: "info",
                  downwardAPI: {
                    items: [{ path: "name", fieldRef: { fieldPath: "metadata.name" } }],
                  },
                },
                { name: "host", hostPath: { path: hostDir } },
              ],
            },
          });
          const { exec, cleanup } = await runPod(runtime!, manager, p);
          try {
            const groups = (await exec("main", ["id", "-G"])).out.trim().split(" ");
            assert.ok(groups.includes("2345") && groups.includes("3456"), groups.join(" "));
            // `ls -ln`: mode, links, uid, gid.
            const ls = async (...args: string[]) => {
              const r = await exec("main", ["ls", "-ln", ...args]);
              assert.equal(r.code, 0, r.err);
              const [mode, , uid, gid] = r.out.trim().split(/\s+/);
              return `${mode} ${uid} ${gid}`;
            };
            assert.equal(await ls("-d", "/data"), "drwxrwsrwx 0 2345");
            assert.equal((await exec("main", ["touch", "/data/new"])).code, 0);
            assert.equal(await ls("/data/new"), "-rw-r--r-- 1000 2345");
            assert.equal(await ls("-L", "/info/name"), "-rw-r--r-- 0 2345");
            assert.equal(await ls("-d", "/host"), "drwxr-xr-x 0 0");
          } finally {
            await cleanup();
          }
        },
      );

      await t.step("hostUsers: false fails sandbox creation with upstream's words", async () => {
        const p = hostNetworkPod(image, {
          name: "userns",
          namespace: "sec",
          containers: [{ name: "main", command: SLEEP }],
          spec: { hostUsers: false },
        });
        const uid = p.metadata.uid!;
        const signal = new AbortController().signal;
        const res = await manager.syncPod(p, await manager.getPodStatus(uid), signal);
        const failed = res.steps.filter((s) => s.error);
        assert.deepEqual(failed.map((s) => [s.action, s.error?.reason]), [
          ["CreatePodSandbox", "CreatePodSandboxError"],
        ]);
        assert.match(
          failed[0]!.error!.message,
          /can't set `spec\.hostUsers: false`, runtime does not support user namespaces/,
        );
        assert.deepEqual((await manager.getPodStatus(uid)).sandboxes, []);
      });
    } finally {
      runtime.close();
      await rt.stop();
    }
  },
});

function manifest(name: string, image: string, spec: Record<string, unknown>, command = SLEEP) {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: {
      hostNetwork: true,
      restartPolicy: "Never",
      terminationGracePeriodSeconds: 1,
      containers: [{ name: "main", image, imagePullPolicy: "Never", command }],
      ...spec,
    },
  });
}

Deno.test({
  name:
    "admission: a forbidden sysctl or AppArmor pod goes Failed with upstream's reason; the allowed unsafe sysctl pod runs with its value",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const rt = await startTestRuntime({ name: "admit" });
    let agent: AgentProcess | undefined;
    try {
      agent = await startAgent({
        runtime: rt,
        extraArgs: ["--allowed-unsafe-sysctls=kernel.msgmax"],
      });
      const a = agent;
      const image = rt.images.busybox;
      const write = (name: string, spec: Record<string, unknown>, command?: string[]) =>
        Deno.writeTextFile(
          join(a.manifestDir, `${name}.json`),
          manifest(name, image, spec, command),
        );
      await write("forbidden", {
        securityContext: { sysctls: [{ name: "kernel.shmmax", value: "1000000" }] },
      });
      await write("apparmor", {
        securityContext: { appArmorProfile: { type: "RuntimeDefault" } },
      });
      // Runs (and stays Running) only when the sysctl holds inside the container.
      await write(
        "allowed",
        { securityContext: { sysctls: [{ name: "kernel.msgmax", value: "12345" }] } },
        ["sh", "-c", 'test "$(cat /proc/sys/kernel/msgmax)" = 12345 && exec sleep 3600'],
      );

      const phases = await waitFor("the three pods settled", async () => {
        const pods = await a.pods();
        const get = (n: string) => findPod(pods, n)?.status;
        const running = get("allowed")?.containerStatuses?.[0]?.state.running !== undefined;
        const out = { forbidden: get("forbidden"), apparmor: get("apparmor"), running };
        // On a host with AppArmor (not these machines) the profile is enforced instead.
        const apparmorSettled = hostAppArmorEnabled()
          ? out.apparmor?.containerStatuses?.[0]?.state.running !== undefined
          : out.apparmor?.phase === "Failed";
        return out.forbidden?.phase === "Failed" && apparmorSettled && running ? out : undefined;
      }, { timeoutMs: 60_000, log: a.log });
      assert.equal(phases.forbidden?.reason, "SysctlForbidden");
      assert.equal(
        phases.forbidden?.message,
        'Pod was rejected: forbidden sysctl: "kernel.shmmax" not allowlisted',
      );
      if (!hostAppArmorEnabled()) {
        assert.equal(phases.apparmor?.reason, "AppArmor");
        assert.equal(
          phases.apparmor?.message,
          "Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host",
        );
      }
      // The refused pods never reached the runtime.
      const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
      try {
        const sandboxes = await cri.listPodSandbox();
        const names = sandboxes.map((s) => s.metadata.name);
        assert.ok(names.includes("allowed-testnode"), names.join(","));
        assert.ok(!names.includes("forbidden-testnode"), names.join(","));
      } finally {
        cri.close();
      }
    } finally {
      if (agent) await agent.stop("SIGKILL");
      await rt.stop();
      await agent?.removeDirs();
    }
  },
});
