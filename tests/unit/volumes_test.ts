import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import {
  checkHostPathType,
  cleanupPodDirs,
  emptyDirPath,
  makeTerminationLogFile,
  managedHostsContent,
  setUpPodVolumes,
  VolumeError,
  writeEtcHosts,
} from "../../lib/volumes/mod.ts";
import { testPod, withTempDir } from "../kit/mod.ts";

function pod(volumes: Pod["spec"]["volumes"]): Pod {
  return testPod({
    name: "p",
    namespace: "ns",
    uid: "uid-1",
    containers: [],
    ...(volumes ? { spec: { volumes } } : {}),
  });
}

Deno.test("setUpPodVolumes() creates emptyDirs 0777 under the pod dir and returns host paths", async () => {
  await withTempDir(async (root) => {
    const host = `${root}/host-data`;
    const paths = await setUpPodVolumes(
      pod([
        { name: "scratch", emptyDir: {} },
        { name: "implicit" },
        { name: "data", hostPath: { path: host, type: "DirectoryOrCreate" } },
      ]),
      { rootDir: root },
    );
    const scratch = `${root}/pods/uid-1/volumes/kubernetes.io~empty-dir/scratch`;
    assert.equal(emptyDirPath(root, "uid-1", "scratch"), scratch);
    assert.deepEqual([...paths], [
      ["scratch", scratch],
      ["implicit", `${root}/pods/uid-1/volumes/kubernetes.io~empty-dir/implicit`],
      ["data", host],
    ]);
    assert.equal((await Deno.stat(scratch)).mode! & 0o777, 0o777);
    assert.equal((await Deno.stat(host)).mode! & 0o777, 0o755);
    // Idempotent: a second setup keeps content.
    await Deno.writeTextFile(`${scratch}/f`, "x");
    await setUpPodVolumes(pod([{ name: "scratch", emptyDir: {} }]), { rootDir: root });
    assert.equal(await Deno.readTextFile(`${scratch}/f`), "x");
  });
});

Deno.test("setUpPodVolumes() names the pod and volume when a check fails", async () => {
  await withTempDir(async (root) => {
    await assert.rejects(
      setUpPodVolumes(
        pod([{ name: "d", hostPath: { path: `${root}/missing`, type: "Directory" } }]),
        { rootDir: root },
      ),
      (err: unknown) => {
        assert.ok(err instanceof VolumeError);
        assert.equal(err.volume, "d");
        assert.match(
          err.message,
          /^volume "d" of pod "ns\/p": MountVolume.SetUp failed: hostPath type check failed: .*missing is not a directory/,
        );
        return true;
      },
    );
    await assert.rejects(
      setUpPodVolumes(pod([{ name: "cm", configMap: { name: "x" } }]), { rootDir: root }),
      /volume "cm" of pod "ns\/p": MountVolume.SetUp failed: configmap "x" cannot be read: no apiserver/,
    );
  });
});

Deno.test("checkHostPathType() applies upstream's type rules", async () => {
  await withTempDir(async (root) => {
    const file = `${root}/file`;
    await checkHostPathType(file, "FileOrCreate");
    assert.equal((await Deno.stat(file)).isFile, true);
    await checkHostPathType(file, "File");
    await checkHostPathType(`${root}/anything`, "");
    await assert.rejects(checkHostPathType(file, "Directory"), /is not a directory/);
    await assert.rejects(checkHostPathType(root, "File"), /is not a file/);
    await assert.rejects(checkHostPathType(file, "DirectoryOrCreate"), /is not a directory/);
    await assert.rejects(checkHostPathType(`${root}/no/parent`, "FileOrCreate"));
    await assert.rejects(checkHostPathType(file, "Socket"), /is not a socket file/);
    await assert.rejects(checkHostPathType(file, "BlockDevice"), /is not a block device/);
    await checkHostPathType("/dev/null", "CharDevice");
    await assert.rejects(checkHostPathType(file, "CharDevice"), /is not a character device/);
  });
});

Deno.test("makeTerminationLogFile() and writeEtcHosts() live under the pod dir and cleanupPodDirs() removes them", async () => {
  await withTempDir(async (root) => {
    const log1 = await makeTerminationLogFile(root, "uid-1", "app");
    const log2 = await makeTerminationLogFile(root, "uid-1", "app");
    assert.notEqual(log1, log2);
    assert.ok(log1.startsWith(`${root}/pods/uid-1/containers/app/`));
    assert.equal((await Deno.stat(log1)).mode! & 0o777, 0o666);
    const hosts = await writeEtcHosts(
      root,
      "uid-1",
      managedHostsContent(["10.0.0.7"], "web", "sub.ns.svc.cluster.local"),
    );
    assert.equal(hosts, `${root}/pods/uid-1/etc-hosts`);
    const text = await Deno.readTextFile(hosts);
    assert.match(text, /^# Kubernetes-managed hosts file\.\n127\.0\.0\.1\tlocalhost\n/);
    assert.match(text, /\n10\.0\.0\.7\tweb\.sub\.ns\.svc\.cluster\.local\tweb\n$/);
    await cleanupPodDirs(root, "uid-1");
    await assert.rejects(Deno.stat(`${root}/pods/uid-1`), Deno.errors.NotFound);
    await cleanupPodDirs(root, "uid-1");
    await assert.rejects(cleanupPodDirs(root, "../x"), /invalid pod UID/);
  });
});

Deno.test("setUpPodVolumes() gives emptyDir and downwardAPI volumes to fsGroup as upstream's SetVolumeOwnership, hostPath never", async () => {
  // The process's own group: chown to it needs no privilege, so this runs unprivileged too.
  const group = Deno.gid() ?? 0;
  await withTempDir(async (root) => {
    const host = `${root}/host-data`;
    await Deno.mkdir(host, { mode: 0o755 });
    await Deno.chmod(host, 0o755);
    const p = pod([
      { name: "scratch", emptyDir: {} },
      {
        name: "info",
        downwardAPI: { items: [{ path: "name", fieldRef: { fieldPath: "metadata.name" } }] },
      },
      { name: "data", hostPath: { path: host } },
    ]);
    p.spec.securityContext = { fsGroup: group, fsGroupChangePolicy: "OnRootMismatch" };
    const paths = await setUpPodVolumes(p, { rootDir: root });
    const mode = async (path: string) => (await Deno.lstat(path)).mode! & 0o7777;

    // emptyDir: read-write, so 0660 added; the dir also setgid and group-exec.
    const scratch = paths.get("scratch")!;
    assert.equal(await mode(scratch), 0o2777);
    assert.equal((await Deno.stat(scratch)).gid, group);
    // Applied when the volume is set up, not on every sync: a later chmod stays.
    await Deno.chmod(scratch, 0o777);
    await setUpPodVolumes(p, { rootDir: root });
    assert.equal(await mode(scratch), 0o777);

    // downwardAPI: read-only, so 0440 added to the 0644 files; the payload dir setgid.
    const info = paths.get("info")!;
    const file = await Deno.realPath(`${info}/name`);
    assert.equal(await mode(file), 0o644);
    assert.equal((await Deno.stat(file)).gid, group);
    assert.equal(await mode(file.slice(0, file.lastIndexOf("/"))), 0o2755);

    // hostPath: never touched.
    assert.equal(await mode(host), 0o755);
  });
});
