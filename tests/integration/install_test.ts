/**
 * install.sh in a scratch prefix (no systemd needed) and the unit under
 * `systemd-analyze verify`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { exec } from "../harness/mod.ts";
import { pathExists } from "../kit/mod.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const INSTALL = `${ROOT}install.sh`;
const UNIT = `${ROOT}systemd/denolet.service`;

interface Run {
  code: number;
  out: string;
}

async function run(cmd: string, args: string[]): Promise<Run> {
  const out = await exec(cmd, args, { allowFailure: true });
  return { code: out.code, out: out.stdout + out.stderr };
}

/** A scratch prefix and a dummy binary next to it. */
async function scratch(): Promise<{ dir: string; prefix: string; binary: string }> {
  const dir = await Deno.makeTempDir({ prefix: "denolet-install-" });
  const prefix = `${dir}/root`;
  await Deno.mkdir(prefix);
  const binary = `${dir}/denolet`;
  await Deno.writeTextFile(binary, "#!/bin/sh\necho denolet test\n", { mode: 0o755 });
  return { dir, prefix, binary };
}

Deno.test("install.sh installs binary, config, manifests dir and unit into a prefix", async () => {
  const { dir, prefix, binary } = await scratch();
  try {
    const first = await run("bash", [INSTALL, "--prefix", prefix, "--binary", binary]);
    assert.equal(first.code, 0, first.out);
    const bin = await Deno.stat(`${prefix}/usr/local/bin/denolet`);
    assert.equal(bin.mode! & 0o777, 0o755);
    assert.equal(
      await Deno.readTextFile(`${prefix}/usr/local/bin/denolet`),
      await Deno.readTextFile(binary),
    );
    assert.equal(
      await Deno.readTextFile(`${prefix}/etc/systemd/system/denolet.service`),
      await Deno.readTextFile(UNIT),
    );
    const config = await Deno.readTextFile(`${prefix}/var/lib/kubelet/config.yaml`);
    assert.match(config, /^apiVersion: kubelet\.config\.k8s\.io\/v1beta1$/m);
    assert.match(config, /^kind: KubeletConfiguration$/m);
    assert.match(config, /^staticPodPath: \/etc\/kubernetes\/manifests$/m);
    assert.ok((await Deno.stat(`${prefix}/etc/kubernetes/manifests`)).isDirectory);
    // A scratch prefix never reaches the host's systemd.
    assert.match(first.out, /not touching systemd: prefix is /);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("install.sh changes nothing on a second run and keeps an edited config", async () => {
  const { dir, prefix, binary } = await scratch();
  try {
    assert.equal((await run("bash", [INSTALL, "--prefix", prefix, "--binary", binary])).code, 0);
    const configPath = `${prefix}/var/lib/kubelet/config.yaml`;
    await Deno.writeTextFile(configPath, "# mine\nkind: KubeletConfiguration\n");
    const before = (await Deno.stat(`${prefix}/usr/local/bin/denolet`)).mtime;
    const second = await run("bash", [INSTALL, "--prefix", prefix, "--binary", binary]);
    assert.equal(second.code, 0, second.out);
    assert.match(second.out, /nothing to change/);
    assert.match(second.out, /keeping existing .*config\.yaml/);
    assert.equal(await Deno.readTextFile(configPath), "# mine\nkind: KubeletConfiguration\n");
    assert.deepEqual((await Deno.stat(`${prefix}/usr/local/bin/denolet`)).mtime, before);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("install.sh replaces a changed binary and reports it", async () => {
  const { dir, prefix, binary } = await scratch();
  try {
    assert.equal((await run("bash", [INSTALL, "--prefix", prefix, "--binary", binary])).code, 0);
    await Deno.writeTextFile(binary, "#!/bin/sh\necho denolet v2\n", { mode: 0o755 });
    const again = await run("bash", [INSTALL, "--prefix", prefix, "--binary", binary]);
    assert.equal(again.code, 0, again.out);
    assert.match(again.out, /installed .*usr\/local\/bin\/denolet/);
    assert.match(again.out, /done \(1 change\(s\)\)/);
    assert.match(await Deno.readTextFile(`${prefix}/usr/local/bin/denolet`), /v2/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("install.sh --uninstall removes binary and unit and keeps config and data", async () => {
  const { dir, prefix, binary } = await scratch();
  try {
    assert.equal((await run("bash", [INSTALL, "--prefix", prefix, "--binary", binary])).code, 0);
    await Deno.writeTextFile(`${prefix}/var/lib/kubelet/data`, "state");
    const un = await run("bash", [INSTALL, "--prefix", prefix, "--uninstall"]);
    assert.equal(un.code, 0, un.out);
    assert.equal(await pathExists(`${prefix}/usr/local/bin/denolet`), false);
    assert.equal(await pathExists(`${prefix}/etc/systemd/system/denolet.service`), false);
    assert.equal(await pathExists(`${prefix}/var/lib/kubelet/config.yaml`), true);
    assert.equal(await Deno.readTextFile(`${prefix}/var/lib/kubelet/data`), "state");
    assert.equal(await pathExists(`${prefix}/etc/kubernetes/manifests`), true);
    const again = await run("bash", [INSTALL, "--prefix", prefix, "--uninstall"]);
    assert.match(again.out, /nothing to uninstall/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("install.sh warns when containerd's config disables CRI and leaves it alone", async () => {
  const { dir, prefix, binary } = await scratch();
  try {
    await Deno.mkdir(`${prefix}/usr/bin`, { recursive: true });
    await Deno.writeTextFile(`${prefix}/usr/bin/containerd`, "#!/bin/sh\n", { mode: 0o755 });
    await Deno.mkdir(`${prefix}/etc/containerd`, { recursive: true });
    const toml = 'disabled_plugins = ["cri"]\n';
    await Deno.writeTextFile(`${prefix}/etc/containerd/config.toml`, toml);
    const res = await run("bash", [INSTALL, "--prefix", prefix, "--binary", binary]);
    assert.equal(res.code, 0, res.out);
    assert.match(res.out, /WARNING: .*disables the CRI plugin/);
    assert.match(res.out, /\[plugins\."io\.containerd\.grpc\.v1\.cri"\]/);
    assert.equal(await Deno.readTextFile(`${prefix}/etc/containerd/config.toml`), toml);

    await Deno.writeTextFile(`${prefix}/etc/containerd/config.toml`, "version = 2\n");
    const ok = await run("bash", [INSTALL, "--prefix", prefix, "--binary", binary]);
    assert.doesNotMatch(ok.out, /WARNING/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("install.sh rejects a missing binary with a clear message", async () => {
  const { dir, prefix } = await scratch();
  try {
    const res = await run("bash", [INSTALL, "--prefix", prefix, "--binary", `${dir}/nope`]);
    assert.equal(res.code, 1);
    assert.match(res.out, /--binary .*nope: no such file/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("install.sh passes shellcheck", async () => {
  // Debian package: shellcheck. Missing means a broken setup, not a skip.
  const res = await run("shellcheck", [INSTALL]);
  assert.equal(res.code, 0, res.out);
});

Deno.test("systemd/denolet.service passes systemd-analyze verify", async () => {
  // systemd-analyze comes with Debian's `systemd` package; verify does not need systemd
  // running. It checks the unit against a scratch root holding the dummy binary and the
  // distribution's own units (for multi-user.target and friends), and warnings about
  // unknown keys or bad values go to stderr with exit 0, so any output is a failure.
  const { dir, prefix, binary } = await scratch();
  try {
    assert.equal((await run("bash", [INSTALL, "--prefix", prefix, "--binary", binary])).code, 0);
    await Deno.mkdir(`${prefix}/usr/lib/systemd`, { recursive: true });
    const cp = await run("cp", ["-a", "/usr/lib/systemd/system", `${prefix}/usr/lib/systemd/`]);
    assert.equal(cp.code, 0, cp.out);
    const res = await run("systemd-analyze", ["verify", `--root=${prefix}`, "denolet.service"]);
    assert.equal(res.code, 0, res.out);
    assert.equal(res.out.trim(), "");

    // The check does catch mistakes: a bad value makes it speak.
    const unitPath = `${prefix}/etc/systemd/system/denolet.service`;
    const unit = await Deno.readTextFile(unitPath);
    await Deno.writeTextFile(unitPath, unit.replace(/^KillMode=process$/m, "KillMode=bogus"));
    const bad = await run("systemd-analyze", ["verify", `--root=${prefix}`, "denolet.service"]);
    assert.match(bad.out, /kill mode/i);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("systemd/denolet.service keeps pods across agent restarts and orders after containerd", async () => {
  const unit = await Deno.readTextFile(UNIT);
  const directives = new Set(unit.split("\n").filter((l) => /^\w+=/.test(l)));
  for (
    const d of [
      "KillMode=process",
      "Restart=always",
      "RestartSec=10",
      "After=containerd.service network-online.target",
      "Wants=containerd.service network-online.target",
      "CPUAccounting=yes",
      "MemoryAccounting=yes",
    ]
  ) {
    assert.ok(directives.has(d), `missing ${d}`);
  }
  // Any of these gives the service a private mount namespace: tmpfs emptyDirs would
  // be invisible to containerd.
  for (const key of ["ProtectSystem", "PrivateTmp", "ProtectHome", "PrivateDevices"]) {
    assert.ok(![...directives].some((d) => d.startsWith(`${key}=`)), `${key} must not be set`);
  }
});
