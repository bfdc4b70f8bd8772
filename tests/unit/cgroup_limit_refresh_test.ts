import assert from "node:assert/strict";
import { cgroupRefFromPath, detectCgroupLayout, readCgroupStats } from "../../lib/cgroup/mod.ts";
import {
  CgroupFileCache,
  readCgroupFile,
  readCgroupLimit,
  withCachedReads,
} from "../../lib/cgroup/read_file.ts";
import { parseSingleValue } from "../../lib/cgroup/parse.ts";
import {
  parsePressureBytes,
  parsePressureFast,
  pickFlatKeyed,
  pickFlatKeyedBytes,
  singleValueBytes,
} from "../../lib/cgroup/v2.ts";
import { Housekeeper, LIMIT_REFRESH_TICKS } from "../../lib/stats/housekeeping.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { tempCopySync } from "../kit/mod.ts";

const FIX = new URL("../fixtures/cgroup/v2", import.meta.url).pathname;
const CONTAINER = "/kubepods.slice/kubepods-burstable.slice/" +
  "kubepods-burstable-pod1234.slice/cri-containerd-abc.scope";

Deno.test("Housekeeper reads limits and OOM events on the first tick and every 6th, keeping them between", () => {
  const root = tempCopySync(FIX, "denolet-limits-test-");
  const dir = `${root}${CONTAINER}`;
  const cache = new CgroupFileCache();
  const clock = new FakeClock();
  const hk = new Housekeeper({ clock, random: () => 0, dynamic: false, fileCache: cache });
  try {
    const layout = detectCgroupLayout({ cgroupRoot: root });
    const ref = cgroupRefFromPath(CONTAINER);
    hk.track("c", () => readCgroupStats(layout, ref));
    clock.tick(0);
    assert.equal(hk.latest("c")?.memoryLimitBytes, Infinity);
    assert.equal(hk.latest("c")?.pidsMax, 1024);
    const events = Deno.readTextFileSync(`${dir}/memory.events`);
    const oomKills = hk.latest("c")?.memoryOomKills ?? NaN;
    assert.ok(Number.isFinite(oomKills));
    Deno.writeTextFileSync(
      `${dir}/memory.events`,
      events.replace(/^oom_kill \d+$/m, `oom_kill ${oomKills + 1}`),
    );
    Deno.writeTextFileSync(`${dir}/memory.max`, "268435456\n");
    Deno.writeTextFileSync(`${dir}/pids.max`, "max\n");
    Deno.writeTextFileSync(`${dir}/memory.current`, "2048\n");
    clock.tick(10_000);
    // Usage is read on every tick; limits keep the first tick's values.
    assert.equal(hk.latest("c")?.memoryUsageBytes, 2048);
    assert.equal(hk.latest("c")?.memoryLimitBytes, Infinity);
    assert.equal(hk.latest("c")?.memoryOomKills, oomKills);
    assert.equal(hk.latestStats("c")?.pids?.max, 1024);
    for (let i = 2; i < LIMIT_REFRESH_TICKS; i++) clock.tick(10_000);
    assert.equal(hk.latest("c")?.memoryLimitBytes, Infinity);
    clock.tick(10_000);
    assert.equal(hk.samples("c").length, LIMIT_REFRESH_TICKS + 1);
    assert.equal(hk.latest("c")?.memoryLimitBytes, 268435456);
    assert.equal(hk.latest("c")?.pidsMax, Infinity);
    assert.equal(hk.latest("c")?.memoryOomKills, oomKills + 1);
  } finally {
    hk.stop();
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("Housekeeper with limitRefreshTicks 1 reads limits on every tick", () => {
  const root = tempCopySync(FIX, "denolet-limits-test-");
  const cache = new CgroupFileCache();
  const clock = new FakeClock();
  const hk = new Housekeeper({
    clock,
    random: () => 0,
    dynamic: false,
    fileCache: cache,
    limitRefreshTicks: 1,
  });
  try {
    const layout = detectCgroupLayout({ cgroupRoot: root });
    const ref = cgroupRefFromPath(CONTAINER);
    hk.track("c", () => readCgroupStats(layout, ref));
    clock.tick(0);
    Deno.writeTextFileSync(`${root}${CONTAINER}/memory.max`, "4096\n");
    clock.tick(10_000);
    assert.equal(hk.latest("c")?.memoryLimitBytes, 4096);
  } finally {
    hk.stop();
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("readCgroupLimit() reads afresh outside a scope and unless reuse is asked", () => {
  const dir = Deno.makeTempDirSync();
  const cache = new CgroupFileCache();
  const owner = {};
  try {
    Deno.writeTextFileSync(`${dir}/memory.max`, "max\n");
    assert.equal(readCgroupLimit(dir, "memory.max"), "max\n");
    const read = (reuseLimits: boolean) =>
      withCachedReads(cache, owner, () => readCgroupLimit(dir, "memory.max"), { reuseLimits });
    assert.equal(read(true), "max\n"); // nothing kept yet: read
    Deno.writeTextFileSync(`${dir}/memory.max`, "100\n");
    assert.equal(read(true), "max\n");
    assert.equal(readCgroupLimit(dir, "memory.max"), "100\n");
    assert.equal(read(false), "100\n");
    Deno.writeTextFileSync(`${dir}/memory.max`, "200\n");
    assert.equal(read(true), "100\n");
    assert.equal(cache.size, 1);
  } finally {
    cache.closeAll();
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("CgroupFileCache.readAt() follows a changed read order and a reopened file", () => {
  const dir = Deno.makeTempDirSync();
  const cache = new CgroupFileCache();
  const owner = {};
  try {
    Deno.writeTextFileSync(`${dir}/a`, "1\n");
    Deno.writeTextFileSync(`${dir}/b`, "2\n");
    const pass = (names: string[]) =>
      withCachedReads(cache, owner, () => names.map((n) => readCgroupFile(dir, n)));
    assert.deepEqual(pass(["a", "b"]), ["1\n", "2\n"]);
    Deno.writeTextFileSync(`${dir}/a`, "10\n");
    assert.deepEqual(pass(["a", "b"]), ["10\n", "2\n"]);
    assert.deepEqual(pass(["b", "a"]), ["2\n", "10\n"]);
    assert.equal(cache.size, 2);
    cache.closeUnder(dir);
    assert.equal(cache.size, 0);
    Deno.writeTextFileSync(`${dir}/b`, "20\n");
    assert.deepEqual(pass(["b", "a", "missing"]), ["20\n", "10\n", undefined]);
    assert.equal(cache.size, 2);
    cache.release(owner);
    assert.equal(cache.size, 0);
  } finally {
    cache.closeAll();
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("pickFlatKeyedBytes(), parsePressureBytes() and singleValueBytes() agree with the text parsers or decline", () => {
  const enc = new TextEncoder();
  // Stale bytes past the length must not be read.
  const bytes = (text: string) => {
    const b = new Uint8Array(text.length + 8).fill(57);
    b.set(enc.encode(text));
    return b;
  };
  const keys = ["a", "bb", "c"];
  const flat = [
    "a 1\nbb 22\nc -3\n",
    "x 5\n  a\t7  \n\nbb 0012",
    "a 12345678901234567\n",
    "a 1\nbb\n",
    "a 1 2\n",
    "",
    "\n\n",
    "é 1\n",
  ];
  for (const text of flat) {
    const got = pickFlatKeyedBytes(bytes(text), enc.encode(text).length, keys);
    let want: unknown;
    try {
      want = pickFlatKeyed(text, "f", keys);
    } catch (err) {
      want = err;
    }
    if (got !== undefined) assert.deepEqual(got, want, JSON.stringify(text));
    else assert.ok(want instanceof Error || text.includes("12345678901234567") || text === "é 1\n");
  }
  const psi = [
    "some avg10=0.12 avg60=0.05 avg300=1.00 total=81234\n",
    "some avg10=0.12 avg60=0.05 avg300=0.01 total=81234\nfull avg10=9.99 avg60=0.00 avg300=100.00 total=0\n",
    "some avg10=0.12 avg60=0.05 avg300=0.01 total=81234\nfull avg10=1 avg60=0.00 avg300=0.00 total=0\n",
    "some avg10=0.12 avg60=0.05 avg300=0.01 total=81234",
    "full avg10=0.12 avg60=0.05 avg300=0.01 total=81234\n",
  ];
  for (const text of psi) {
    const got = parsePressureBytes(bytes(text), text.length);
    if (got === undefined) continue;
    assert.deepEqual(got, parsePressureFast(text, "f"), text);
  }
  assert.ok(parsePressureBytes(bytes(psi[0]!), psi[0]!.length) !== undefined);
  assert.ok(parsePressureBytes(bytes(psi[1]!), psi[1]!.length) !== undefined);
  for (
    const text of ["max\n", "123\n", "-4\n", "0", "  5\n", "7\t\n", "", "\n", "1e3\n", "max 1\n"]
  ) {
    const got = singleValueBytes(bytes(text), text.length);
    if (got === undefined) continue;
    assert.equal(got, parseSingleValue(text, "f"), JSON.stringify(text));
  }
  assert.equal(singleValueBytes(bytes("max\n"), 4), null);
  assert.equal(singleValueBytes(bytes("123\n"), 4), 123);
  assert.equal(singleValueBytes(bytes(""), 0), undefined);
});

Deno.test("readCgroupStats() gives the same figures through the byte parsers as read fresh", () => {
  const root = tempCopySync(FIX, "denolet-limits-test-");
  const cache = new CgroupFileCache();
  const owner = {};
  try {
    const layout = detectCgroupLayout({ cgroupRoot: root });
    const ref = cgroupRefFromPath(CONTAINER);
    const fresh = readCgroupStats(layout, ref);
    const first = withCachedReads(cache, owner, () => readCgroupStats(layout, ref));
    const held = withCachedReads(cache, owner, () => readCgroupStats(layout, ref));
    assert.deepEqual(first, fresh);
    assert.deepEqual(held, fresh);
    assert.ok(fresh.pressure?.memory?.full !== undefined && fresh.memory?.rssBytes !== undefined);
  } finally {
    cache.closeAll();
    Deno.removeSync(root, { recursive: true });
  }
});
