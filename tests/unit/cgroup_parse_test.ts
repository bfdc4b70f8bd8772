import assert from "node:assert/strict";
import {
  cgroupPathFromRuntime,
  expandSlice,
  parseFlatKeyed,
  parseIoStat,
  parsePressure,
  parseProcCgroup,
  parseSingleValue,
  StatsParseError,
} from "../../lib/cgroup/mod.ts";

Deno.test("parseSingleValue() reads a number and maps max to null", () => {
  assert.equal(parseSingleValue("104857600\n", "memory.current"), 104857600);
  assert.equal(parseSingleValue("max\n", "memory.max"), null);
});

Deno.test("parseSingleValue() rejects empty and malformed values naming the file", () => {
  assert.throws(() => parseSingleValue("\n", "/x/memory.current"), (e: unknown) => {
    assert.ok(e instanceof StatsParseError);
    assert.equal(e.file, "/x/memory.current");
    assert.match(e.message, /\/x\/memory\.current: file is empty/);
    return true;
  });
  assert.throws(
    () => parseSingleValue("12abc", "/x/pids.max"),
    /\/x\/pids\.max: expected an integer/,
  );
});

Deno.test("parseFlatKeyed() reads key/value lines and rejects garbage", () => {
  const m = parseFlatKeyed("usage_usec 5\nuser_usec 3\n\n", "cpu.stat");
  assert.deepEqual([...m], [["usage_usec", 5], ["user_usec", 3]]);
  assert.throws(() => parseFlatKeyed("", "/c/cpu.stat"), /\/c\/cpu\.stat: file is empty/);
  assert.throws(() => parseFlatKeyed("usage_usec\n", "/c/cpu.stat"), /expected "key value"/);
  assert.throws(() => parseFlatKeyed("usage_usec x\n", "/c/cpu.stat"), /expected an integer/);
});

Deno.test("parsePressure() reads some and full lines", () => {
  const p = parsePressure(
    "some avg10=1.50 avg60=0.75 avg300=0.10 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
    "cpu.pressure",
  );
  assert.deepEqual(p.some, { avg10: 1.5, avg60: 0.75, avg300: 0.1, totalUs: 123456 });
  assert.deepEqual(p.full, { avg10: 0, avg60: 0, avg300: 0, totalUs: 0 });
  const someOnly = parsePressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=9", "cpu.pressure");
  assert.equal(someOnly.full, undefined);
});

Deno.test("parsePressure() rejects a missing some line and bad numbers", () => {
  assert.throws(() => parsePressure("", "/c/io.pressure"), /\/c\/io\.pressure: no "some" line/);
  assert.throws(
    () => parsePressure("some avg10=abc avg60=0 avg300=0 total=1", "/c/cpu.pressure"),
    /bad avg10="abc"/,
  );
  assert.throws(() => parsePressure("some avg10=0 avg60=0 avg300=0", "f"), /missing total=/);
});

Deno.test("parseIoStat() reads per-device counters and accepts an empty file", () => {
  const io = parseIoStat("8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n", "io.stat");
  assert.deepEqual(io, [
    { major: 8, minor: 0, readBytes: 4096, writeBytes: 8192, readOps: 1, writeOps: 2 },
  ]);
  assert.deepEqual(parseIoStat("", "io.stat"), []);
  assert.throws(
    () => parseIoStat("8:0 rbytes\n", "/c/io.stat"),
    /\/c\/io\.stat: expected key=value/,
  );
  assert.throws(() => parseIoStat("sda rbytes=1\n", "/c/io.stat"), /expected MAJOR:MINOR/);
});

Deno.test("parseProcCgroup() reads v1 and v2 lines", () => {
  const e = parseProcCgroup("4:cpu,cpuacct:/a\n0::/b\n", "/proc/1/cgroup");
  assert.deepEqual(e, [
    { hierarchyId: 4, controllers: ["cpu", "cpuacct"], path: "/a" },
    { hierarchyId: 0, controllers: [], path: "/b" },
  ]);
  assert.throws(
    () => parseProcCgroup("garbage\n", "/proc/1/cgroup"),
    /\/proc\/1\/cgroup: expected/,
  );
  assert.throws(() => parseProcCgroup("", "/proc/1/cgroup"), /file is empty/);
});

Deno.test("expandSlice() nests systemd slices and maps -.slice to the root", () => {
  assert.equal(
    expandSlice("kubepods-burstable-pod1234.slice"),
    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice",
  );
  assert.equal(expandSlice("-.slice"), "/");
  assert.throws(() => expandSlice("a--b.slice"), /not a valid systemd slice name/);
  assert.throws(() => expandSlice("kubepods"), /must end in ".slice"/);
});

Deno.test("cgroupPathFromRuntime() accepts cgroupfs paths, slices and systemd triples", () => {
  assert.equal(
    cgroupPathFromRuntime("/kubepods/burstable/pod1234/abc/"),
    "/kubepods/burstable/pod1234/abc",
  );
  assert.equal(
    cgroupPathFromRuntime("kubepods-burstable-pod1234.slice:cri-containerd:abc"),
    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice/cri-containerd-abc.scope",
  );
  assert.equal(
    cgroupPathFromRuntime("kubepods-besteffort-pod9.slice"),
    "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod9.slice",
  );
  assert.throws(() => cgroupPathFromRuntime("a:b"), /expected an absolute cgroupfs path/);
});
