import assert from "node:assert/strict";
import type { ConfigMap } from "../../lib/api/cluster_types.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import {
  configMapPayload,
  downwardAPIPayload,
  formatMap,
  memoryVolumeSize,
  setUpPodVolumes,
  tmpfsMountArgs,
  VolumeError,
} from "../../lib/volumes/mod.ts";
import { FakeMounter, pod, read } from "./_volumes_fakes.ts";
import { FakePodObjects, withTempDir } from "../kit/mod.ts";

const b64 = (s: string) => btoa(s);

Deno.test("setUpPodVolumes() writes configMap items with key→path and modes, all keys without items", async () => {
  await withTempDir(async (root) => {
    const objects = new FakePodObjects();
    objects.configMaps.set("ns/settings", {
      metadata: { name: "settings" },
      data: { "app.conf": "x=1", other: "o" },
      binaryData: { bin: b64("\u0001\u0002") },
    });
    const paths = await setUpPodVolumes(
      pod([
        { name: "all", configMap: { name: "settings", defaultMode: 0o640 } },
        {
          name: "some",
          configMap: {
            name: "settings",
            items: [{ key: "app.conf", path: "conf/app", mode: 0o600 }],
          },
        },
      ]),
      { rootDir: root, objects, mounter: new FakeMounter() },
    );
    const all = paths.get("all")!;
    assert.equal(all, `${root}/pods/uid-1/volumes/kubernetes.io~configmap/all`);
    assert.equal(await read(`${all}/app.conf`), "x=1");
    assert.deepEqual([...await Deno.readFile(`${all}/bin`)], [1, 2]);
    assert.equal((await Deno.stat(`${all}/other`)).mode! & 0o777, 0o640);
    const some = paths.get("some")!;
    assert.equal(await read(`${some}/conf/app`), "x=1");
    assert.equal((await Deno.stat(`${some}/conf/app`)).mode! & 0o777, 0o600);
    await assert.rejects(Deno.lstat(`${some}/other`), Deno.errors.NotFound);
  });
});

Deno.test("setUpPodVolumes() updates configMap content in place and removes deleted keys on the next sync", async () => {
  await withTempDir(async (root) => {
    const objects = new FakePodObjects();
    const cm = { metadata: { name: "c" }, data: { a: "1", b: "2" } };
    objects.configMaps.set("ns/c", cm);
    const p = pod([{ name: "cfg", configMap: { name: "c" } }]);
    const opts = { rootDir: root, objects, mounter: new FakeMounter(), clock: new FakeClock() };
    const dir = (await setUpPodVolumes(p, opts)).get("cfg")!;
    objects.configMaps.set("ns/c", { metadata: { name: "c" }, data: { a: "changed" } });
    opts.clock.tick(1500);
    await setUpPodVolumes(p, opts);
    assert.equal(await read(`${dir}/a`), "changed");
    await assert.rejects(Deno.lstat(`${dir}/b`), Deno.errors.NotFound);
  });
});

Deno.test("setUpPodVolumes() gives an optional missing configMap/secret an empty dir and fails a required one", async () => {
  await withTempDir(async (root) => {
    const objects = new FakePodObjects();
    const opts = { rootDir: root, objects, mounter: new FakeMounter() };
    const paths = await setUpPodVolumes(
      pod([
        { name: "cm", configMap: { name: "absent", optional: true } },
        { name: "sec", secret: { secretName: "absent", optional: true } },
      ]),
      opts,
    );
    for (const dir of paths.values()) {
      const names: string[] = [];
      for await (const e of Deno.readDir(dir)) names.push(e.name);
      assert.deepEqual(names.filter((n) => !n.startsWith("..")), []);
    }
    await assert.rejects(
      setUpPodVolumes(pod([{ name: "cfg", configMap: { name: "absent" } }]), opts),
      (err: unknown) => {
        assert.ok(err instanceof VolumeError);
        assert.equal(
          err.message,
          'volume "cfg" of pod "ns/web": MountVolume.SetUp failed: configmap "absent" not found',
        );
        return true;
      },
    );
    await assert.rejects(
      setUpPodVolumes(pod([{ name: "s", secret: { secretName: "absent" } }]), opts),
      /volume "s" of pod "ns\/web": MountVolume.SetUp failed: secret "absent" not found/,
    );
    // A required item missing from an existing object.
    objects.configMaps.set("ns/c", { metadata: { name: "c" }, data: {} });
    await assert.rejects(
      setUpPodVolumes(
        pod([{ name: "cfg", configMap: { name: "c", items: [{ key: "k", path: "k" }] } }]),
        opts,
      ),
      /configmap references non-existent config key: k/,
    );
  });
});

Deno.test("setUpPodVolumes() puts secrets on tmpfs sized to the pod's memory limit and decodes them", async () => {
  await withTempDir(async (root) => {
    const objects = new FakePodObjects();
    objects.secrets.set("ns/creds", {
      metadata: { name: "creds" },
      data: { password: b64("s3cret") },
    });
    const mounter = new FakeMounter();
    const p = pod([{ name: "creds", secret: { secretName: "creds", defaultMode: 0o400 } }]);
    const opts = { rootDir: root, objects, mounter, allocatable: { memory: "1Gi" } };
    const dir = (await setUpPodVolumes(p, opts)).get("creds")!;
    assert.equal(dir, `${root}/pods/uid-1/volumes/kubernetes.io~secret/creds`);
    assert.deepEqual(mounter.calls, [`mount -t tmpfs -o size=${64 * 2 ** 20} tmpfs ${dir}`]);
    assert.equal(await read(`${dir}/password`), "s3cret");
    assert.equal((await Deno.stat(`${dir}/password`)).mode! & 0o777, 0o400);
    // Mounted once: a second sync sees the mount and does not mount again.
    await setUpPodVolumes(p, opts);
    assert.equal(mounter.calls.length, 1);
  });
});

Deno.test("setUpPodVolumes() builds the kube-api-access projected volume: token, ca.crt, namespace", async () => {
  await withTempDir(async (root) => {
    const objects = new FakePodObjects();
    objects.configMaps.set("ns/kube-root-ca.crt", {
      metadata: { name: "kube-root-ca.crt" },
      data: { "ca.crt": "-----BEGIN CERTIFICATE-----\n" },
    });
    const clock = new FakeClock();
    const p = pod([{
      name: "kube-api-access-abcde",
      projected: {
        defaultMode: 420,
        sources: [
          { serviceAccountToken: { expirationSeconds: 3607, path: "token" } },
          {
            configMap: {
              name: "kube-root-ca.crt",
              items: [{ key: "ca.crt", path: "ca.crt" }],
            },
          },
          {
            downwardAPI: {
              items: [{ path: "namespace", fieldRef: { fieldPath: "metadata.namespace" } }],
            },
          },
        ],
      },
    }]);
    const opts = { rootDir: root, objects, mounter: new FakeMounter(), clock };
    const dir = (await setUpPodVolumes(p, opts)).get("kube-api-access-abcde")!;
    assert.equal(dir, `${root}/pods/uid-1/volumes/kubernetes.io~projected/kube-api-access-abcde`);
    assert.equal(await read(`${dir}/token`), "token-1");
    assert.equal(await read(`${dir}/ca.crt`), "-----BEGIN CERTIFICATE-----\n");
    assert.equal(await read(`${dir}/namespace`), "ns");
    assert.equal((await Deno.stat(`${dir}/token`)).mode! & 0o777, 0o644);
    assert.deepEqual(objects.tokenRequests, [{
      ns: "ns",
      sa: "builder",
      req: { audiences: [], expirationSeconds: 3607, boundPod: { name: "web", uid: "uid-1" } },
    }]);
    // A rotated token reaches the file on the next sync.
    objects.token = "token-2";
    clock.tick(1000);
    await setUpPodVolumes(p, opts);
    assert.equal(await read(`${dir}/token`), "token-2");
  });
});

Deno.test("setUpPodVolumes() reports every failing projected source and no apiserver in standalone mode", async () => {
  await withTempDir(async (root) => {
    const p = pod([{
      name: "proj",
      projected: {
        sources: [
          { configMap: { name: "a" } },
          { secret: { name: "b" } },
          { serviceAccountToken: { path: "token", audience: "vault" } },
        ],
      },
    }]);
    await assert.rejects(
      setUpPodVolumes(p, {
        rootDir: root,
        objects: new FakePodObjects(),
        mounter: new FakeMounter(),
      }),
      /MountVolume.SetUp failed: \[sources\[0\]: configmap "a" not found, sources\[1\]: secret "b" not found\]/,
    );
    await assert.rejects(
      setUpPodVolumes(p, { rootDir: root, mounter: new FakeMounter() }),
      /volume "proj" of pod "ns\/web": .*configmap "a" cannot be read: no apiserver \(standalone mode\)/,
    );
  });
});

Deno.test("downwardAPIPayload() writes metadata fields, label maps and resources with divisors", () => {
  const p = pod([], (p) => {
    p.spec.containers[0]!.resources = {
      requests: { cpu: "250m", memory: "32Mi" },
      limits: { memory: "64Mi" },
    };
  });
  const files = downwardAPIPayload(
    p,
    [
      { path: "name", fieldRef: { fieldPath: "metadata.name" } },
      { path: "uid", fieldRef: { fieldPath: "metadata.uid" } },
      { path: "labels", fieldRef: { fieldPath: "metadata.labels" }, mode: 0o600 },
      { path: "annotations", fieldRef: { fieldPath: "metadata.annotations" } },
      { path: "app", fieldRef: { fieldPath: "metadata.labels['app']" } },
      {
        path: "cpu_m",
        resourceFieldRef: { containerName: "app", resource: "requests.cpu", divisor: "1m" },
      },
      { path: "cpu", resourceFieldRef: { containerName: "app", resource: "requests.cpu" } },
      {
        path: "mem_mi",
        resourceFieldRef: { containerName: "app", resource: "limits.memory", divisor: "1Mi" },
      },
      { path: "cpu_lim", resourceFieldRef: { containerName: "app", resource: "limits.cpu" } },
      // What the apiserver stores for a divisor left unset.
      {
        path: "cpu_lim0",
        resourceFieldRef: { containerName: "app", resource: "limits.cpu", divisor: "0" },
      },
      {
        path: "mem_req0",
        resourceFieldRef: { containerName: "app", resource: "requests.memory", divisor: "0" },
      },
    ],
    0o644,
    { cpu: 4, memory: "8Gi" },
  );
  const text = (k: string) => new TextDecoder().decode(files.get(k)!.data);
  assert.equal(text("name"), "web");
  assert.equal(text("uid"), "uid-1");
  assert.equal(text("labels"), 'app="web"\ntier="f\\"e"');
  assert.equal(files.get("labels")!.mode, 0o600);
  assert.equal(files.get("name")!.mode, 0o644);
  assert.equal(text("annotations"), 'note="line1\\nline2"');
  assert.equal(text("app"), "web");
  assert.equal(text("cpu_m"), "250");
  assert.equal(text("cpu"), "1"); // rounded up, as upstream
  assert.equal(text("mem_mi"), "64");
  assert.equal(text("cpu_lim"), "4"); // unset limit: node allocatable
  assert.equal(text("cpu_lim0"), "4");
  assert.equal(text("mem_req0"), String(32 * 1024 * 1024));
  assert.throws(
    () => downwardAPIPayload(p, [{ path: "x", fieldRef: { fieldPath: "spec.nodeName" } }], 0o644),
    /item "x": unsupported fieldRef fieldPath "spec.nodeName"/,
  );
  assert.throws(
    () =>
      downwardAPIPayload(p, [{
        path: "x",
        resourceFieldRef: { containerName: "nope", resource: "limits.cpu" },
      }], 0o644),
    /container "nope" not found/,
  );
  assert.equal(formatMap({}), "");
});

Deno.test("configMapPayload() skips missing item keys only when optional", () => {
  const cm: ConfigMap = { metadata: { name: "c" }, data: { a: "1" } };
  const items = [{ key: "a", path: "x/a" }, { key: "missing", path: "m" }];
  assert.deepEqual([...configMapPayload(cm, items, 0o644, true).keys()], ["x/a"]);
  assert.throws(
    () => configMapPayload(cm, items, 0o644, false),
    /non-existent config key: missing/,
  );
  assert.equal(configMapPayload(undefined, undefined, 0o644, true).size, 0);
});

Deno.test("memoryVolumeSize() takes the smallest of node allocatable, pod limit and sizeLimit", () => {
  const Mi = 2 ** 20;
  const limited = pod([]); // one container, 64Mi limit
  const unlimited = pod([], (p) => (p.spec.containers[0]!.resources = {}));
  assert.equal(memoryVolumeSize(unlimited, undefined, 1024 * Mi), 1024 * Mi);
  assert.equal(memoryVolumeSize(limited, undefined, 1024 * Mi), 64 * Mi);
  assert.equal(memoryVolumeSize(limited, "16Mi", 1024 * Mi), 16 * Mi);
  assert.equal(memoryVolumeSize(limited, "128Mi", 1024 * Mi), 64 * Mi);
  assert.equal(memoryVolumeSize(unlimited, "2Gi", 1024 * Mi), 1024 * Mi);
  assert.equal(memoryVolumeSize(unlimited, undefined, 0), undefined);
  assert.deepEqual(tmpfsMountArgs("/v", 16 * Mi), [
    "-t",
    "tmpfs",
    "-o",
    "size=16777216",
    "tmpfs",
    "/v",
  ]);
  assert.deepEqual(tmpfsMountArgs("/v", undefined), ["-t", "tmpfs", "tmpfs", "/v"]);
});

Deno.test("setUpPodVolumes() makes a projected token 0600 (0640 after fsGroup) and its user's when the pod runs as one user, as upstream", async () => {
  await withTempDir(async (root) => {
    const objects = new FakePodObjects();
    const clock = new FakeClock();
    const me = Deno.uid() ?? 0;
    const group = Deno.gid() ?? 0;
    const p = pod([{
      name: "api",
      projected: { sources: [{ serviceAccountToken: { path: "token" } }] },
    }]);
    p.spec.securityContext = { runAsUser: me, fsGroup: group };
    const opts = { rootDir: root, objects, mounter: new FakeMounter(), clock };
    const dir = (await setUpPodVolumes(p, opts)).get("api")!;
    const file = await Deno.realPath(`${dir}/token`);
    const info = await Deno.stat(file);
    assert.equal(info.mode! & 0o7777, 0o640);
    assert.equal(info.uid, me);
    assert.equal(info.gid, group);
    // The group bits fsGroup added are not a change: no new payload on the next sync.
    clock.tick(1000);
    await setUpPodVolumes(p, opts);
    assert.equal(await Deno.realPath(`${dir}/token`), file);

    // Containers running as different users: no owner, and without fsGroup the default mode.
    const mixed = pod([{
      name: "api",
      projected: { sources: [{ serviceAccountToken: { path: "token" } }] },
    }]);
    mixed.metadata.uid = "uid-2";
    mixed.spec.containers = [
      { name: "a", image: "x", securityContext: { runAsUser: 1000 } },
      { name: "b", image: "x" },
    ];
    const mixedDir = (await setUpPodVolumes(mixed, opts)).get("api")!;
    assert.equal((await Deno.stat(`${mixedDir}/token`)).mode! & 0o7777, 0o644);
  });
});
