import assert from "node:assert/strict";
import { diskUsage, filesUsage, fileUsage } from "../../lib/stats/disk_usage.ts";
import { withTempDir } from "../kit/mod.ts";

const KI = 1024;

/** Writes `bytes` of non-zero data, so the file is fully allocated (not sparse). */
async function writeFile(path: string, bytes: number): Promise<void> {
  await Deno.writeFile(path, new Uint8Array(bytes).fill(7));
}

/** The blocks a directory itself holds (4 KiB on ext4, 0 on tmpfs). */
async function dirBytes(...dirs: string[]): Promise<number> {
  let n = 0;
  for (const d of dirs) n += ((await Deno.lstat(d)).blocks ?? 0) * 512;
  return n;
}

Deno.test("diskUsage() sums allocated blocks and counts every entry, a hard link once", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/a/b`, { recursive: true });
    await writeFile(`${dir}/one`, 64 * KI);
    await writeFile(`${dir}/a/two`, 128 * KI);
    await writeFile(`${dir}/a/b/three`, 256 * KI);
    await Deno.link(`${dir}/a/two`, `${dir}/a/b/two-again`);
    await Deno.symlink("/etc/passwd", `${dir}/a/link`);
    const u = await diskUsage(dir);
    const link = ((await Deno.lstat(`${dir}/a/link`)).blocks ?? 0) * 512;
    assert.equal(
      u.bytes,
      (64 + 128 + 256) * KI + link + await dirBytes(dir, `${dir}/a`, `${dir}/a/b`),
    );
    // dir, a, a/b, one, two (its link not again), three, the symlink (not followed).
    assert.equal(u.inodes, 7);
    // One file alone.
    assert.deepEqual(await diskUsage(`${dir}/one`), { bytes: 64 * KI, inodes: 1 });
    await assert.rejects(diskUsage(`${dir}/missing`), Deno.errors.NotFound);
  });
});

Deno.test("filesUsage() sums the files right inside a directory, not its subdirectories", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/app`);
    await writeFile(`${dir}/app/0.log`, 8 * KI);
    await writeFile(`${dir}/app/0.log.20260101-000000.gz`, 4 * KI);
    await Deno.mkdir(`${dir}/app/sub`);
    await writeFile(`${dir}/app/sub/ignored`, 64 * KI);
    assert.deepEqual(filesUsage(`${dir}/app`), { bytes: 12 * KI, inodes: 2 });
    assert.deepEqual(filesUsage(dir), { bytes: 0, inodes: 0 });
    assert.equal(filesUsage(`${dir}/missing`), undefined);
  });
});

Deno.test("fileUsage() measures a file or a symbolic link as diskUsage() does", async () => {
  await withTempDir(async (dir) => {
    await writeFile(`${dir}/hosts`, 4 * KI);
    await Deno.symlink(`${dir}/hosts`, `${dir}/same-device`);
    await Deno.symlink("/dev/null", `${dir}/other-device`);
    for (const name of ["hosts", "same-device", "other-device"]) {
      assert.deepEqual(fileUsage(`${dir}/${name}`), await diskUsage(`${dir}/${name}`), name);
    }
    assert.deepEqual(fileUsage(`${dir}/hosts`), { bytes: 4 * KI, inodes: 1 });
    assert.deepEqual(fileUsage(`${dir}/other-device`), { bytes: 0, inodes: 0 });
    assert.throws(() => fileUsage(`${dir}/missing`), Deno.errors.NotFound);
  });
});
