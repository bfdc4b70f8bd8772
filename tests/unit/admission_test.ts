import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import {
  AppArmorAdmitHandler,
  canAdmitPod,
  safeSysctls,
  SysctlAllowlist,
} from "../../lib/admission/mod.ts";
import { normalizeSysctlName } from "../../lib/api/sysctl.ts";
import { testPod } from "../kit/mod.ts";

function podWith(
  sysctls: string[],
  spec: { hostNetwork?: boolean; hostIPC?: boolean } = {},
): Pod {
  const pod = testPod({ name: "p", containers: ["app"], spec });
  pod.spec.securityContext = { sysctls: sysctls.map((name) => ({ name, value: "1" })) };
  return pod;
}

Deno.test("safeSysctls() is upstream's v1.37 list, each namespaced entry from its kernel on", () => {
  const all = safeSysctls("6.1.0-18-amd64");
  assert.deepEqual(all, [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_notsent_lowat",
  ]);
  const old = safeSysctls("4.5.0");
  assert.ok(old.includes("net.ipv4.tcp_keepalive_time"));
  assert.ok(!old.includes("net.ipv4.tcp_fin_timeout"));
  assert.ok(!old.includes("net.ipv4.tcp_rmem"));
  assert.equal(safeSysctls("weird").length, 5);
});

Deno.test("normalizeSysctlName() swaps separators of a slashed name, as upstream", () => {
  assert.equal(
    normalizeSysctlName("net/ipv4/conf/eno2.100/rp_filter"),
    "net.ipv4.conf.eno2/100.rp_filter",
  );
  assert.equal(
    normalizeSysctlName("net.ipv4.conf.eno2/100.rp_filter"),
    "net.ipv4.conf.eno2/100.rp_filter",
  );
});

Deno.test("SysctlAllowlist admits safe and allowed unsafe sysctls and refuses the rest with SysctlForbidden", async (t) => {
  const list = new SysctlAllowlist([...safeSysctls("6.1.0"), "kernel.msg*", "net.core.somaxconn"]);
  const cases: { name: string; pod: Pod; want: string | undefined }[] = [
    { name: "no sysctls", pod: podWith([]), want: undefined },
    {
      name: "safe",
      pod: podWith(["kernel.shm_rmid_forced", "net.ipv4.tcp_syncookies"]),
      want: undefined,
    },
    { name: "safe, slashed", pod: podWith(["net/ipv4/ip_local_port_range"]), want: undefined },
    { name: "allowed unsafe name", pod: podWith(["net.core.somaxconn"]), want: undefined },
    { name: "allowed unsafe prefix", pod: podWith(["kernel.msgmax"]), want: undefined },
    {
      name: "unsafe, not allowed",
      pod: podWith(["kernel.shm_rmid_forced", "kernel.shmmax"]),
      want: 'forbidden sysctl: "kernel.shmmax" not allowlisted',
    },
    {
      name: "net sysctl on a host-network pod",
      pod: podWith(["net.ipv4.tcp_syncookies"], { hostNetwork: true }),
      want: 'forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host Net enabled',
    },
    {
      name: "IPC sysctl on a host-IPC pod",
      pod: podWith(["kernel.shm_rmid_forced"], { hostIPC: true }),
      want: 'forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled',
    },
  ];
  for (const tc of cases) {
    await t.step(tc.name, () => {
      const got = list.admit(tc.pod);
      if (tc.want === undefined) assert.deepEqual(got, { admit: true });
      else assert.deepEqual(got, { admit: false, reason: "SysctlForbidden", message: tc.want });
    });
  }
});

Deno.test("SysctlAllowlist refuses allowedUnsafeSysctls it cannot place, with upstream's words", () => {
  assert.throws(() => new SysctlAllowlist(["vm.swappiness"]), {
    message: 'the sysctls "vm.swappiness" are not known to be namespaced',
  });
  assert.throws(
    () => new SysctlAllowlist(["Net.Core"]),
    /sysctl "Net.Core" must have at most 253 characters and match regex/,
  );
  assert.ok(new SysctlAllowlist(["net.*", "fs.mqueue.*", "kernel.sem"]));
});

Deno.test("AppArmorAdmitHandler refuses a confined pod on a host without AppArmor, as upstream", () => {
  const confined = testPod({ name: "a", containers: ["app"] });
  confined.spec.containers[0]!.securityContext = { appArmorProfile: { type: "RuntimeDefault" } };
  const unconfined = testPod({ name: "u", containers: ["app"] });
  unconfined.spec.securityContext = { appArmorProfile: { type: "Unconfined" } };
  const annotated = testPod({ name: "n", containers: ["app"] });
  annotated.metadata.annotations = {
    "container.apparmor.security.beta.kubernetes.io/app": "runtime/default",
  };

  const without = new AppArmorAdmitHandler(false);
  const refused = {
    admit: false,
    reason: "AppArmor",
    message: "Cannot enforce AppArmor: AppArmor is not enabled on the host",
  };
  assert.deepEqual(without.admit(confined), refused);
  assert.deepEqual(without.admit(annotated), refused);
  assert.deepEqual(without.admit(unconfined), { admit: true });
  assert.deepEqual(new AppArmorAdmitHandler(true).admit(confined), { admit: true });
});

Deno.test("canAdmitPod() returns the first refusal in handler order", () => {
  const pod = podWith(["kernel.shmmax"]);
  pod.spec.securityContext!.appArmorProfile = { type: "RuntimeDefault" };
  const got = canAdmitPod([
    new SysctlAllowlist(safeSysctls("6.1")),
    new AppArmorAdmitHandler(false),
  ], pod);
  assert.equal(got.admit ? "" : got.reason, "SysctlForbidden");
  assert.deepEqual(canAdmitPod([], pod), { admit: true });
});
