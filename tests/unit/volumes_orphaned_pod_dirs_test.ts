import assert from "node:assert/strict";
import { cleanupOrphanedPodDirs } from "../../lib/volumes/mod.ts";
import { createLogger } from "../../lib/util/log.ts";
import { FakeMounter } from "./_volumes_fakes.ts";
import { pathExists, withTempDir } from "../kit/mod.ts";

const ORPHAN = "0f1e2d3c-4b5a-4968-8776-655443322110";
const DESIRED = "11111111-2222-4333-8444-555555555555";
const RUNNING = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee";
const MOUNTED = "99999999-8888-4777-8666-555555555555";
const STATIC = "3b5e0c3f0e7a4f0b9c1d2e3f4a5b6c7d";

/** A pod dir with an emptyDir holding a file and a termination message. */
async function podTree(root: string, uid: string): Promise<string> {
  const dir = `${root}/pods/${uid}`;
  await Deno.mkdir(`${dir}/volumes/kubernetes.io~empty-dir/scratch`, { recursive: true });
  await Deno.writeTextFile(`${dir}/volumes/kubernetes.io~empty-dir/scratch/blob`, "x");
  await Deno.mkdir(`${dir}/containers/app`, { recursive: true });
  await Deno.writeTextFile(`${dir}/containers/app/0a1b2c3d`, "done");
  await Deno.writeTextFile(`${dir}/etc-hosts`, "127.0.0.1 localhost\n");
  return dir;
}

function logs(): { lines: string[]; logger: ReturnType<typeof createLogger> } {
  const lines: string[] = [];
  return {
    lines,
    logger: createLogger({ write: (l) => lines.push(l), caller: false, verbosity: 5 }),
  };
}

Deno.test("cleanupOrphanedPodDirs() removes an orphan's dir and keeps known, running and non-UID dirs", async () => {
  await withTempDir(async (root) => {
    for (const uid of [ORPHAN, DESIRED, RUNNING, STATIC]) await podTree(root, uid);
    await Deno.mkdir(`${root}/pods/not-a-uid`);
    // A symlink under pods is never followed.
    await Deno.mkdir(`${root}/outside/keep`, { recursive: true });
    await Deno.symlink(`${root}/outside`, `${root}/pods/${"f".repeat(32)}`);
    const known = new Set([DESIRED, RUNNING]);
    const { lines, logger } = logs();
    const result = await cleanupOrphanedPodDirs({
      rootDir: root,
      isKnown: (uid) => known.has(uid),
      logger,
      mounter: new FakeMounter(),
    });
    assert.deepEqual(result, { total: 2, errors: 0 });
    assert.equal(await pathExists(`${root}/pods/${ORPHAN}`), false);
    assert.equal(await pathExists(`${root}/pods/${STATIC}`), false);
    for (const uid of [DESIRED, RUNNING]) {
      assert.ok(
        await pathExists(`${root}/pods/${uid}/volumes/kubernetes.io~empty-dir/scratch/blob`),
      );
    }
    assert.ok(await pathExists(`${root}/pods/not-a-uid`));
    assert.ok(await pathExists(`${root}/outside/keep`));
    assert.ok(
      lines.some((l) => l.includes('"Orphaned pod found, removing"') && l.includes(ORPHAN)),
    );
    assert.ok(lines.some((l) => l.includes("not a pod UID") && l.includes("not-a-uid")));
    // Nothing left to do: the next pass finds no orphan.
    assert.deepEqual(
      await cleanupOrphanedPodDirs({
        rootDir: root,
        isKnown: (u) => known.has(u),
        logger,
        mounter: new FakeMounter(),
      }),
      { total: 0, errors: 0 },
    );
  });
});

Deno.test("cleanupOrphanedPodDirs() unmounts an orphan's tmpfs volume as teardown does, then removes it", async () => {
  await withTempDir(async (root) => {
    const dir = await podTree(root, ORPHAN);
    const shm = `${dir}/volumes/kubernetes.io~empty-dir/shm`;
    await Deno.mkdir(shm);
    const mounter = new FakeMounter();
    mounter.table.push({ mountPoint: await Deno.realPath(shm), fsType: "tmpfs", source: "tmpfs" });
    const { logger } = logs();
    const result = await cleanupOrphanedPodDirs({
      rootDir: root,
      isKnown: () => false,
      logger,
      mounter,
    });
    assert.deepEqual(result, { total: 1, errors: 0 });
    assert.deepEqual(mounter.calls, [
      `umount ${await Deno.realPath(root)}/pods/${ORPHAN}/volumes/kubernetes.io~empty-dir/shm`,
    ]);
    assert.equal(await pathExists(dir), false);
  });
});

Deno.test("cleanupOrphanedPodDirs() keeps an orphan whose volume stays mounted, with upstream's log line", async () => {
  await withTempDir(async (root) => {
    const dir = await podTree(root, MOUNTED);
    const shm = `${dir}/volumes/kubernetes.io~empty-dir/shm`;
    await Deno.mkdir(shm);
    await Deno.writeTextFile(`${shm}/data`, "precious");
    const mounter = new FakeMounter();
    mounter.table.push({ mountPoint: await Deno.realPath(shm), fsType: "tmpfs", source: "tmpfs" });
    mounter.unmount = (d) => {
      mounter.calls.push(`umount ${d}`);
      return Promise.reject(new Error(`umount: ${d}: target is busy.`));
    };
    const { lines, logger } = logs();
    const result = await cleanupOrphanedPodDirs({
      rootDir: root,
      isKnown: () => false,
      logger,
      mounter,
    });
    assert.deepEqual(result, { total: 1, errors: 1 });
    assert.equal(await Deno.readTextFile(`${shm}/data`), "precious");
    assert.ok(await pathExists(`${dir}/volumes/kubernetes.io~empty-dir/scratch/blob`));
    assert.ok(await pathExists(`${dir}/etc-hosts`));
    assert.ok(
      lines.some((l) =>
        l.includes('"Orphaned pod found, but volumes are not cleaned up"') && l.includes(MOUNTED)
      ),
    );
  });
});

Deno.test("cleanupOrphanedPodDirs() leaves a foreign plugin's volume with files, and reports one rolled-up error", async () => {
  await withTempDir(async (root) => {
    const dir = `${root}/pods/${ORPHAN}`;
    const csi = `${dir}/volumes/kubernetes.io~csi/pvc-1`;
    await Deno.mkdir(csi, { recursive: true });
    await Deno.writeTextFile(`${csi}/vol_data.json`, "{}");
    const { lines, logger } = logs();
    const result = await cleanupOrphanedPodDirs({
      rootDir: root,
      isKnown: () => false,
      logger,
      mounter: new FakeMounter(),
    });
    assert.deepEqual(result, { total: 1, errors: 1 });
    assert.ok(await pathExists(`${csi}/vol_data.json`));
    const summary = lines.filter((l) => l.includes("There were many similar errors"));
    assert.equal(summary.length, 1);
    assert.match(summary[0]!, /numErrs=1/);
    assert.match(summary[0]!, /failed to rmdir\(\) volume at path/);
  });
});

Deno.test("cleanupOrphanedPodDirs() removes volume-subpaths only when nothing is mounted there", async () => {
  await withTempDir(async (root) => {
    const dir = `${root}/pods/${ORPHAN}`;
    const sub = `${dir}/volume-subpaths/data/app/0`;
    await Deno.mkdir(sub, { recursive: true });
    const mounter = new FakeMounter();
    mounter.table.push({
      mountPoint: await Deno.realPath(sub),
      fsType: "ext4",
      source: "/dev/sda1",
    });
    const { logger } = logs();
    assert.deepEqual(
      await cleanupOrphanedPodDirs({ rootDir: root, isKnown: () => false, logger, mounter }),
      { total: 1, errors: 1 },
    );
    assert.ok(await pathExists(sub));
    mounter.table = [];
    assert.deepEqual(
      await cleanupOrphanedPodDirs({ rootDir: root, isKnown: () => false, logger, mounter }),
      { total: 1, errors: 0 },
    );
    assert.equal(await pathExists(dir), false);
  });
});
