import assert from "node:assert/strict";
import {
  cleanupPodDirs,
  commandMounter,
  type CommandResult,
  MOUNT_COMMANDS_IN_FLIGHT,
  type Mounter,
  mountPointsUnder,
  parseMountInfo,
  prepareSubPath,
  prepareSubPaths,
  setUpPodVolumes,
  tearDownPodVolumes,
} from "../../lib/volumes/mod.ts";
import { FakeMounter, pod } from "./_volumes_fakes.ts";
import { withTempDir } from "../kit/mod.ts";
import { makeTerminationLogFile } from "../../lib/volumes/mod.ts";

Deno.test("setUpPodVolumes() mounts emptyDir medium Memory as tmpfs and reports a failed mount", async () => {
  await withTempDir(async (root) => {
    const mounter = new FakeMounter();
    const p = pod([{ name: "shm", emptyDir: { medium: "Memory", sizeLimit: "8Mi" } }]);
    const dir = (await setUpPodVolumes(p, { rootDir: root, mounter })).get("shm")!;
    assert.equal(dir, `${root}/pods/uid-1/volumes/kubernetes.io~empty-dir/shm`);
    assert.deepEqual(mounter.calls, [`mount -t tmpfs -o size=8388608 tmpfs ${dir}`]);
    const failing: Mounter = {
      mountTmpfs: () => Promise.reject(new Error("mount: permission denied")),
      unmount: () => Promise.resolve(),
      mounts: () => Promise.resolve([]),
    };
    await assert.rejects(
      setUpPodVolumes(pod([{ name: "m", emptyDir: { medium: "Memory" } }]), {
        rootDir: root,
        mounter: failing,
      }),
      /volume "m" of pod "ns\/web": MountVolume.SetUp failed: mount: permission denied/,
    );
  });
});

Deno.test("cleanupPodDirs() unmounts tmpfs under the pod dir, deepest first, before removing it", async () => {
  await withTempDir(async (root) => {
    const mounter = new FakeMounter();
    const p = pod([{ name: "shm", emptyDir: { medium: "Memory" } }]);
    const dir = (await setUpPodVolumes(p, { rootDir: root, mounter })).get("shm")!;
    mounter.table.push(
      { mountPoint: `${dir}/inner`, fsType: "tmpfs", source: "tmpfs" },
      { mountPoint: `${root}/pods/uid-10`, fsType: "tmpfs", source: "tmpfs" },
    );
    await cleanupPodDirs(root, "uid-1", mounter);
    assert.deepEqual(mounter.calls.slice(1), [`umount ${dir}/inner`, `umount ${dir}`]);
    await assert.rejects(Deno.stat(`${root}/pods/uid-1`), Deno.errors.NotFound);
    // A failed unmount leaves the directory in place.
    await setUpPodVolumes(p, { rootDir: root, mounter });
    const stuck: Mounter = {
      mountTmpfs: (d, n) => mounter.mountTmpfs(d, n),
      mounts: () => mounter.mounts(),
      unmount: () => Promise.reject(new Error("busy")),
    };
    await assert.rejects(
      cleanupPodDirs(root, "uid-1", stuck),
      /failed to unmount the volumes of pod UID "uid-1"/,
    );
    assert.ok((await Deno.stat(dir)).isDirectory);
  });
});

Deno.test("tearDownPodVolumes() unmounts and removes a terminated pod's volumes, keeps its pod dir", async () => {
  await withTempDir(async (root) => {
    const mounter = new FakeMounter();
    const p = pod([
      { name: "scratch", emptyDir: {} },
      { name: "shm", emptyDir: { medium: "Memory" } },
      {
        name: "info",
        downwardAPI: { items: [{ path: "ns", fieldRef: { fieldPath: "metadata.namespace" } }] },
      },
    ]);
    const paths = await setUpPodVolumes(p, { rootDir: root, mounter });
    await Deno.writeTextFile(`${paths.get("scratch")}/blob`, "x".repeat(4096));
    const message = await makeTerminationLogFile(root, "uid-1", "app");
    // Another pod's volumes (a UID that shares the prefix) are not touched.
    const other = (await setUpPodVolumes({ ...p, metadata: { ...p.metadata, uid: "uid-10" } }, {
      rootDir: root,
      mounter,
    })).get("shm")!;
    mounter.calls = [];
    await tearDownPodVolumes(root, "uid-1", mounter);
    assert.deepEqual(mounter.calls, [`umount ${paths.get("shm")}`]);
    for (const dir of paths.values()) await assert.rejects(Deno.stat(dir), Deno.errors.NotFound);
    // The pod dir stays until the pod is deleted: termination messages and plugin dirs.
    assert.ok((await Deno.stat(message)).isFile);
    assert.ok((await Deno.stat(`${root}/pods/uid-1/volumes/kubernetes.io~empty-dir`)).isDirectory);
    assert.ok((await Deno.stat(other)).isDirectory);
    assert.deepEqual(mounter.table.map((m) => m.mountPoint), [other]);
    // Idempotent, and a pod without a dir has nothing to tear down.
    await tearDownPodVolumes(root, "uid-1", mounter);
    await tearDownPodVolumes(root, "uid-2", mounter);
    // A failed unmount removes nothing.
    await setUpPodVolumes(p, { rootDir: root, mounter });
    const stuck: Mounter = {
      mountTmpfs: (d, n) => mounter.mountTmpfs(d, n),
      mounts: () => mounter.mounts(),
      unmount: () => Promise.reject(new Error("busy")),
    };
    await assert.rejects(
      tearDownPodVolumes(root, "uid-1", stuck),
      /failed to unmount the volumes of pod UID "uid-1"/,
    );
    assert.ok((await Deno.stat(paths.get("scratch")!)).isDirectory);
  });
});

Deno.test("parseMountInfo() and mountPointsUnder() read /proc/self/mountinfo lines", () => {
  const text = [
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw",
    "90 22 0:50 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~secret/a\\040b rw shared:50 - tmpfs tmpfs rw,size=65536k",
    "91 22 0:51 / /var/lib/kubelet/pods/u10/volumes/x rw - tmpfs tmpfs rw",
  ].join("\n");
  const mounts = parseMountInfo(text);
  assert.equal(mounts.length, 3);
  assert.deepEqual(mounts[1], {
    mountPoint: "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~secret/a b",
    fsType: "tmpfs",
    source: "tmpfs",
  });
  assert.deepEqual(mountPointsUnder(mounts, "/var/lib/kubelet/pods/u1/"), [
    "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~secret/a b",
  ]);
});

Deno.test("prepareSubPath() creates a missing subPath and rejects escapes through .. or symlinks", async () => {
  await withTempDir(async (root) => {
    const vol = `${root}/vol`;
    await Deno.mkdir(vol);
    await Deno.chmod(vol, 0o777);
    const made = await prepareSubPath(vol, "a/b");
    assert.equal(made, `${vol}/a/b`);
    assert.equal((await Deno.stat(made)).mode! & 0o777, 0o777);
    await assert.rejects(
      prepareSubPath(vol, "../etc"),
      /unable to provision SubPath `\.\.\/etc`: must not contain '\.\.'/,
    );
    await assert.rejects(
      prepareSubPath(vol, "/etc"),
      /SubPath `\/etc` must not be an absolute path/,
    );
    await Deno.symlink("/etc", `${vol}/evil`);
    await assert.rejects(prepareSubPath(vol, "evil"), /resolves to "\/etc", outside the volume/);
    // A configMap-style key link inside the volume is fine.
    await Deno.writeTextFile(`${vol}/a/file`, "x");
    await Deno.symlink("a/file", `${vol}/key`);
    assert.equal(await prepareSubPath(vol, "key"), `${vol}/key`);
  });
});

Deno.test("prepareSubPaths() creates each resolved subPath and names the mount and container on failure", async () => {
  await withTempDir(async (root) => {
    const vol = `${root}/vol`;
    await Deno.mkdir(vol);
    await Deno.chmod(vol, 0o777);
    const volumes = new Map([["work", vol]]);
    await prepareSubPaths("app", [{ volumeName: "work", subPath: "mypath/pod-a" }], volumes);
    // Every directory made gets the volume's mode, not the umask's.
    assert.equal((await Deno.stat(`${vol}/mypath`)).mode! & 0o777, 0o777);
    assert.equal((await Deno.stat(`${vol}/mypath/pod-a`)).mode! & 0o777, 0o777);
    // A link out of the volume is not followed to create the rest of the path.
    await Deno.mkdir(`${root}/host`);
    await Deno.symlink(`${root}/host`, `${vol}/out`);
    await assert.rejects(
      prepareSubPaths("app", [{ volumeName: "work", subPath: "out/x" }], volumes),
      /failed to prepare subPath for volumeMount "work" of container "app": subPath "out\/x" resolves to ".*\/host", outside the volume/,
    );
    assert.deepEqual([...Deno.readDirSync(`${root}/host`)], []);
  });
});

Deno.test("tearDownPodVolumes() refuses a volumes dir that is a symlink and removes nothing through it", async () => {
  await withTempDir(async (root) => {
    const elsewhere = `${root}/elsewhere/kubernetes.io~empty-dir/data`;
    await Deno.mkdir(elsewhere, { recursive: true });
    await Deno.writeTextFile(`${elsewhere}/keep`, "x");
    await Deno.mkdir(`${root}/pods/uid-1`, { recursive: true });
    await Deno.symlink(`${root}/elsewhere`, `${root}/pods/uid-1/volumes`);
    await assert.rejects(
      tearDownPodVolumes(root, "uid-1", new FakeMounter()),
      /volumes dir of pod UID "uid-1" is a symlink/,
    );
    assert.equal(await Deno.readTextFile(`${elsewhere}/keep`), "x");
  });
});

Deno.test("commandMounter() runs at most its limit of mount(8)/umount(8) at once, and names a failure's dir", async () => {
  let inFlight = 0;
  let most = 0;
  const ran: string[] = [];
  const finish: (() => void)[] = [];
  const enc = new TextEncoder();
  const run = async (cmd: string, args: string[]): Promise<CommandResult> => {
    ran.push(`${cmd} ${args.join(" ")}`);
    most = Math.max(most, ++inFlight);
    await new Promise<void>((r) => finish.push(r));
    inFlight--;
    const refused = args.at(-1) === "/d/7";
    return {
      success: !refused,
      code: refused ? 32 : 0,
      stdout: new Uint8Array(),
      stderr: enc.encode(refused ? "umount: /d/7: not mounted." : ""),
    };
  };
  const mounter = commandMounter({ inFlight: 3, run });
  const calls = Array.from(
    { length: 10 },
    (_, i) => i % 2 ? mounter.unmount(`/d/${i}`) : mounter.mountTmpfs(`/d/${i}`, 1024),
  );
  const outcomes = Promise.allSettled(calls);
  while (ran.length < 10 || finish.length > 0) {
    await new Promise((r) => setTimeout(r, 0));
    finish.shift()?.();
  }
  const settled = await outcomes;
  assert.equal(most, 3, "never more than 3 commands at once");
  assert.deepEqual(ran.slice(0, 2), ["mount -t tmpfs -o size=1024 tmpfs /d/0", "umount /d/1"]);
  assert.deepEqual(settled.map((s) => s.status), [
    ...Array(7).fill("fulfilled"),
    "rejected",
    ...Array(2).fill("fulfilled"),
  ]);
  assert.match(
    String((settled[7] as PromiseRejectedResult).reason),
    /failed to unmount "\/d\/7": umount \/d\/7 exited with 32: umount: \/d\/7: not mounted\./,
  );
  assert.ok(MOUNT_COMMANDS_IN_FLIGHT >= 1 && MOUNT_COMMANDS_IN_FLIGHT <= 8);
});
