import assert from "node:assert/strict";
import {
  CgroupNotFoundError,
  cgroupRefFromPath,
  detectCgroupLayout,
  parseFlatKeyed,
  parseIoStat,
  parsePressure,
  readCgroupStats,
  StatsParseError,
} from "../../lib/cgroup/mod.ts";
import { CgroupFileCache, withCachedReads } from "../../lib/cgroup/read_file.ts";
import { parseIoStatFast, parsePressureFast, pickFlatKeyed } from "../../lib/cgroup/v2.ts";
import { Housekeeper } from "../../lib/stats/housekeeping.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { tempCopySync } from "../kit/mod.ts";

const FIX = new URL("../fixtures/cgroup/", import.meta.url).pathname.replace(/\/$/, "");
const CFS = "/kubepods/burstable/pod1234/abc";
const SYSTEMD_PATH = "/kubepods.slice/kubepods-burstable.slice/" +
  "kubepods-burstable-pod1234.slice/cri-containerd-abc.scope";

/** A temporary copy of the v2 fixture tree, removed by the caller. */
function copyV2Fixture(): { root: string; container: string } {
  return { root: tempCopySync(`${FIX}/v2`, "denolet-cache-test-"), container: SYSTEMD_PATH };
}

/**
 * What kernfs does to a removed cgroup's open files, on a plain filesystem:
 * reads through held handles come back empty, and the paths are gone.
 */
function removeLikeKernfs(dir: string): void {
  for (const e of Deno.readDirSync(dir)) {
    if (e.isFile) Deno.truncateSync(`${dir}/${e.name}`, 0);
  }
  Deno.removeSync(dir, { recursive: true });
}

function removeQuietly(dir: string): void {
  try {
    Deno.removeSync(dir, { recursive: true });
  } catch {
    // already removed by the test
  }
}

Deno.test("CgroupFileCache.read() keeps one handle per file and re-reads it from the start", () => {
  const dir = Deno.makeTempDirSync();
  const cache = new CgroupFileCache();
  const owner = {};
  try {
    const file = `${dir}/cpu.stat`;
    Deno.writeTextFileSync(file, "usage_usec 1\n");
    assert.equal(cache.read(file, owner), "usage_usec 1\n");
    Deno.writeTextFileSync(file, "usage_usec 22\n"); // same inode, as kernfs keeps it
    assert.equal(cache.read(file, owner), "usage_usec 22\n");
    assert.equal(cache.size, 1);
    assert.ok(cache.has(file) && cache.holdsDir(dir));
    const big = "x".repeat(40_000); // larger than the shared read buffer
    Deno.writeTextFileSync(file, big);
    assert.equal(cache.read(file, owner), big);
  } finally {
    cache.closeAll();
    Deno.removeSync(dir, { recursive: true });
  }
  assert.equal(cache.size, 0);
});

Deno.test("CgroupFileCache.read() gives undefined for a missing file and holds nothing for it", () => {
  const dir = Deno.makeTempDirSync();
  const cache = new CgroupFileCache();
  try {
    assert.equal(cache.read(`${dir}/memory.max`, {}), undefined);
    assert.equal(cache.read(`${dir}/no-such-dir/memory.max`, {}), undefined);
    assert.equal(cache.size, 0);
    assert.equal(cache.lost, 0);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("CgroupFileCache.read() remembers a missing file only while its directory is held", () => {
  const dir = Deno.makeTempDirSync();
  const cache = new CgroupFileCache();
  const owner = {};
  try {
    // No file of the directory is held: a file that appears is found next time.
    assert.equal(cache.read(`${dir}/pids.max`, owner), undefined);
    Deno.writeTextFileSync(`${dir}/pids.max`, "max\n");
    assert.equal(cache.read(`${dir}/pids.max`, owner), "max\n");
    // With a file of the directory held, a missing sibling is not looked up again
    // (a cgroup's controller files do not come and go) until its owner lets go.
    assert.equal(cache.read(`${dir}/memory.max`, owner), undefined);
    Deno.writeTextFileSync(`${dir}/memory.max`, "1024\n");
    assert.equal(cache.read(`${dir}/memory.max`, owner), undefined);
    cache.release(owner);
    assert.equal(cache.read(`${dir}/memory.max`, owner), "1024\n");
  } finally {
    cache.closeAll();
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("CgroupFileCache closes the least recently read handle past maxOpen", () => {
  const dir = Deno.makeTempDirSync();
  const cache = new CgroupFileCache({ maxOpen: 2 });
  const owner = {};
  try {
    for (const n of ["a", "b", "c"]) Deno.writeTextFileSync(`${dir}/${n}`, n);
    cache.read(`${dir}/a`, owner);
    cache.read(`${dir}/b`, owner);
    cache.read(`${dir}/a`, owner); // b is now the least recently read
    assert.equal(cache.read(`${dir}/c`, owner), "c");
    assert.equal(cache.size, 2);
    assert.ok(cache.has(`${dir}/a`) && cache.has(`${dir}/c`) && !cache.has(`${dir}/b`));
  } finally {
    cache.closeAll();
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("CgroupFileCache keeps a file open until the last of its readers is released, in any order", () => {
  const dir = Deno.makeTempDirSync();
  const cache = new CgroupFileCache();
  const [a, b, c] = [{}, {}, {}];
  try {
    Deno.writeTextFileSync(`${dir}/f`, "1");
    for (const owner of [a, b, c, b]) assert.equal(cache.read(`${dir}/f`, owner), "1");
    assert.equal(cache.release(b), 0);
    assert.equal(cache.release(a), 0);
    assert.ok(cache.has(`${dir}/f`));
    assert.equal(cache.release(c), 1);
    assert.equal(cache.size, 0);
  } finally {
    cache.closeAll();
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("CgroupFileCache.release() closes only the files no other owner reads", () => {
  const dir = Deno.makeTempDirSync();
  const cache = new CgroupFileCache();
  const a = {};
  const b = {};
  try {
    for (const n of ["shared", "mine"]) Deno.writeTextFileSync(`${dir}/${n}`, n);
    cache.read(`${dir}/shared`, a);
    cache.read(`${dir}/mine`, a);
    cache.read(`${dir}/shared`, b);
    assert.equal(cache.release(a), 1);
    assert.ok(cache.has(`${dir}/shared`) && !cache.has(`${dir}/mine`));
    assert.equal(cache.release(b), 1);
    assert.equal(cache.size, 0);
    assert.equal(cache.holdsDir(dir), false);
  } finally {
    cache.closeAll();
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("CgroupFileCache.closeUnder() closes every handle below a directory, not beside it", () => {
  const dir = Deno.makeTempDirSync();
  const cache = new CgroupFileCache();
  try {
    for (const d of ["c1", "c10"]) {
      Deno.mkdirSync(`${dir}/${d}`);
      Deno.writeTextFileSync(`${dir}/${d}/cpu.stat`, "usage_usec 1\n");
      cache.read(`${dir}/${d}/cpu.stat`, {});
    }
    assert.equal(cache.closeUnder(`${dir}/c1`), 1);
    assert.ok(cache.has(`${dir}/c10/cpu.stat`));
  } finally {
    cache.closeAll();
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("CgroupFileCache.read() drops a handle that turns empty and counts a vanished file as lost", () => {
  const dir = Deno.makeTempDirSync();
  const cache = new CgroupFileCache();
  const owner = {};
  try {
    const file = `${dir}/io.stat`;
    Deno.writeTextFileSync(file, "");
    assert.equal(cache.read(file, owner), "");
    assert.equal(cache.read(file, owner), "", "an empty file that was empty stays cached");
    assert.equal(cache.size, 1);
    Deno.writeTextFileSync(file, "8:0 rbytes=1 wbytes=2 rios=3 wios=4\n");
    assert.match(cache.read(file, owner)!, /rbytes=1/);
    Deno.truncateSync(file, 0);
    assert.equal(cache.read(file, owner), "", "re-read fresh: truly empty now");
    assert.equal(cache.lost, 0);
    Deno.writeTextFileSync(file, "8:0 rbytes=1 wbytes=2 rios=3 wios=4\n");
    cache.read(file, owner);
    removeLikeKernfs(dir);
    assert.equal(cache.read(file, owner), undefined);
    assert.equal(cache.lost, 1);
    assert.equal(cache.size, 0);
  } finally {
    cache.closeAll();
    removeQuietly(dir);
  }
});

Deno.test("readCgroupStats() reads the same figures through held-open files as fresh", () => {
  const cache = new CgroupFileCache();
  const owner = {};
  try {
    for (const [mode, path] of [["v2", SYSTEMD_PATH], ["v1", CFS], ["hybrid", CFS]] as const) {
      const layout = detectCgroupLayout({ cgroupRoot: `${FIX}/${mode}` });
      const ref = cgroupRefFromPath(path);
      const fresh = readCgroupStats(layout, ref);
      const first = withCachedReads(cache, owner, () => readCgroupStats(layout, ref));
      const again = withCachedReads(cache, owner, () => readCgroupStats(layout, ref));
      assert.deepEqual(first, fresh, mode);
      assert.deepEqual(again, fresh, mode);
    }
    assert.ok(cache.size > 0);
    // The malformed fixture fails the same way, naming the same file.
    const layout = detectCgroupLayout({ cgroupRoot: `${FIX}/v2` });
    const broken = cgroupRefFromPath("/broken");
    const fileOf = (fn: () => unknown) => {
      try {
        fn();
      } catch (err) {
        assert.ok(err instanceof StatsParseError);
        return err.message;
      }
      assert.fail("expected a StatsParseError");
    };
    assert.equal(
      fileOf(() => withCachedReads(cache, owner, () => readCgroupStats(layout, broken))),
      fileOf(() => readCgroupStats(layout, broken)),
    );
  } finally {
    cache.closeAll();
  }
});

Deno.test("readCgroupStats() throws CgroupNotFoundError once a held-open cgroup is removed", () => {
  const { root, container } = copyV2Fixture();
  const cache = new CgroupFileCache();
  const owner = {};
  try {
    const layout = detectCgroupLayout({ cgroupRoot: root });
    const ref = cgroupRefFromPath(container);
    const read = () => withCachedReads(cache, owner, () => readCgroupStats(layout, ref));
    assert.equal(read().cpu?.usageNs, 5_000_000_000);
    assert.ok(cache.holdsDir(`${root}${container}`));
    removeLikeKernfs(`${root}${container}`);
    assert.throws(read, (e: unknown) => e instanceof CgroupNotFoundError);
    assert.equal(cache.size, 0, "nothing of the removed cgroup stays open");
  } finally {
    cache.closeAll();
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("Housekeeper.untrack() and stop() close the files its collectors held open", () => {
  const clock = new FakeClock();
  const cache = new CgroupFileCache();
  const hk = new Housekeeper({ clock, random: () => 0, fileCache: cache });
  const v2 = detectCgroupLayout({ cgroupRoot: `${FIX}/v2` });
  const v1 = detectCgroupLayout({ cgroupRoot: `${FIX}/v1` });
  hk.track("a", () => readCgroupStats(v2, cgroupRefFromPath(SYSTEMD_PATH)));
  hk.track("b", () => readCgroupStats(v1, cgroupRefFromPath(CFS)));
  clock.tick(0);
  clock.tick(10_000);
  assert.equal(hk.samples("a").length, 2);
  const both = cache.size;
  hk.untrack("a");
  assert.ok(cache.size > 0 && cache.size < both);
  hk.stop();
  assert.equal(cache.size, 0);
});

Deno.test("Housekeeper with fileCache null reads fresh and holds nothing", () => {
  const clock = new FakeClock();
  const hk = new Housekeeper({ clock, random: () => 0, fileCache: null });
  const v2 = detectCgroupLayout({ cgroupRoot: `${FIX}/v2` });
  hk.track("a", () => readCgroupStats(v2, cgroupRefFromPath(SYSTEMD_PATH)));
  clock.tick(0);
  assert.equal(hk.latest("a")?.cpuUsageNs, 5_000_000_000);
  hk.stop();
});

/** Runs `fn`, returning its value or the thrown error's class and message. */
function outcome<T>(fn: () => T): T | string {
  try {
    return fn();
  } catch (err) {
    return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  }
}

Deno.test("pickFlatKeyed() gives parseFlatKeyed's values and errors", () => {
  const keys = ["anon", "file", "pgfault", "absent"];
  const texts = [
    "anon 1\nfile 2\npgfault 3\n",
    "anon 1\nfile 2", // no final newline
    "  anon\t1  \n\nfile   2\n", // blanks the kernel never writes
    "anon -5\nanon 7\n", // negative, and a repeated key (the last wins)
    "anon 1\r\nfile 2\r\n", // CR: only the general parser decides
    "anon 1\nbogus\n",
    "anon 1 2\n",
    "anon x1\n",
    "anon -\n",
    "",
    "\n \n",
    "ключ 1\nanon 2\n",
  ];
  for (const text of texts) {
    const slow = outcome(() => {
      const m = parseFlatKeyed(text, "/f");
      return keys.map((k) => m.get(k));
    });
    assert.deepEqual(outcome(() => pickFlatKeyed(text, "/f", keys)), slow, JSON.stringify(text));
  }
});

Deno.test("parsePressureFast() and parseIoStatFast() match the general parsers", () => {
  const psi = [
    "some avg10=0.12 avg60=0.05 avg300=0.01 total=81234\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
    "some avg10=1.00 avg60=2.00 avg300=3.00 total=4\n",
    "some avg10=1 avg60=2 avg300=3 total=4\n",
    "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
    "some avg10=abc avg60=0 avg300=0 total=1\n",
    "",
  ];
  for (const text of psi) {
    assert.deepEqual(
      outcome(() => parsePressureFast(text, "/p")),
      outcome(() => parsePressure(text, "/p")),
      JSON.stringify(text),
    );
  }
  const io = [
    "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n259:0 rbytes=1 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n",
    "8:0 rbytes=1 wbytes=2 rios=3 wios=4\n",
    "8:0 rbytes=1 wbytes=2 rios=3 wios=4\n8:0 rbytes=9 wbytes=2 rios=3 wios=4\n",
    "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0 cost.usage=5\n",
    "8:0 rbytes\n",
    "",
  ];
  for (const text of io) {
    assert.deepEqual(
      outcome(() => parseIoStatFast(text, "/io")),
      outcome(() => parseIoStat(text, "/io")),
      JSON.stringify(text),
    );
  }
});

/** The descriptors this process has open. */
function openFdCount(): number {
  return [...Deno.readDirSync("/proc/self/fd")].length;
}

Deno.test("CgroupFileCache holds one descriptor a file and closes them all with closeAll()", () => {
  const dir = Deno.makeTempDirSync();
  const cache = new CgroupFileCache();
  const owner = {};
  try {
    for (let i = 0; i < 20; i++) Deno.writeTextFileSync(`${dir}/f${i}`, `${i}\n`);
    const before = openFdCount();
    for (let i = 0; i < 20; i++) assert.equal(cache.read(`${dir}/f${i}`, owner), `${i}\n`);
    assert.equal(openFdCount() - before, 20);
    Deno.writeTextFileSync(`${dir}/f3`, "changed\n");
    assert.equal(cache.read(`${dir}/f3`, owner), "changed\n", "a re-read sees the new text");
    cache.closeAll();
    assert.equal(openFdCount(), before);
  } finally {
    cache.closeAll();
    Deno.removeSync(dir, { recursive: true });
  }
});
