import assert from "node:assert/strict";
import { StatsParseError, StatsPermissionError } from "../../lib/cgroup/mod.ts";
import {
  nodeMemory,
  parseLoadavg,
  parseMeminfo,
  parseNetDev,
  parseProcStat,
  readFsStats,
  readNetworkStats,
  readNodeStats,
  readNodeUsage,
} from "../../lib/stats/node.ts";

const PROC = new URL("../fixtures/proc", import.meta.url).pathname;
const KB = 1024;

Deno.test("readNodeStats() reads CPU, memory, network, load and processes from a procRoot", () => {
  const s = readNodeStats({ procRoot: PROC, rootDir: "/" });
  // busy = user+nice+system+irq+softirq+steal = 1000+50+300+10+20+5 ticks at 100 Hz
  assert.equal(s.cpu.usageNs, 1385 * 10_000_000);
  assert.equal(s.cpu.idleNs, 8100 * 10_000_000);
  assert.equal(s.memory.capacityBytes, 16384000 * KB);
  assert.equal(s.memory.availableBytes, 12288000 * KB);
  const usage = (2100000 + 100000 + 3000000) * KB;
  assert.equal(s.memory.usageBytes, usage);
  assert.equal(s.memory.workingSetBytes, usage - 1000000 * KB);
  assert.equal(s.memory.evictionAvailableBytes, 16384000 * KB - (usage - 1000000 * KB));
  assert.deepEqual(s.network.map((i) => i.name), ["lo", "eth0"]);
  assert.deepEqual(s.load, { load1: 0.5, load5: 0.25, load15: 0.1, runnable: 2, threads: 345 });
  assert.deepEqual(s.processes, {
    threads: 345,
    running: 3,
    blocked: 1,
    forks: 5678,
    maxPid: 126000,
  });
  assert.ok(s.fs.capacityBytes > 0 && s.fs.availableBytes <= s.fs.capacityBytes);
});

Deno.test("nodeMemory() takes usage and working set from the root cgroup when given", () => {
  const m = nodeMemory(parseMeminfo("MemTotal: 1000 kB\nMemFree: 10 kB\n", "meminfo"), {
    usageBytes: 600 * KB,
    workingSetBytes: 400 * KB,
  });
  assert.equal(m.workingSetBytes, 400 * KB);
  assert.equal(m.evictionAvailableBytes, 600 * KB);
  assert.equal(m.availableBytes, undefined);
});

Deno.test("readNetworkStats() reads a sandbox's namespace through /proc/PID/net/dev", () => {
  const ifaces = readNetworkStats({ procRoot: PROC, pid: 4242 });
  assert.deepEqual(ifaces.find((i) => i.name === "eth0"), {
    name: "eth0",
    rxBytes: 5000,
    rxPackets: 50,
    rxErrors: 0,
    rxDropped: 0,
    txBytes: 6000,
    txPackets: 60,
    txErrors: 0,
    txDropped: 0,
  });
  const host = readNetworkStats({ procRoot: PROC });
  assert.equal(host.find((i) => i.name === "eth0")?.rxErrors, 1);
  assert.equal(host.find((i) => i.name === "eth0")?.txDropped, 4);
});

Deno.test("readNodeUsage() shapes the node like a cgroup reading for housekeeping", () => {
  const u = readNodeUsage({ procRoot: PROC });
  assert.equal(u.cpu.usageNs, 1385 * 10_000_000);
  assert.equal(u.memory.limitBytes, 16384000 * KB);
});

Deno.test("node parsers reject malformed files naming them", () => {
  assert.throws(() => parseProcStat("intr 1\n", "/p/stat"), /\/p\/stat: no aggregate "cpu" line/);
  assert.throws(() => parseProcStat("cpu 1 x 3 4\n", "/p/stat"), StatsParseError);
  assert.throws(() => parseMeminfo("Foo 12\n", "/p/meminfo"), /\/p\/meminfo: bad line/);
  assert.throws(() => parseMeminfo("", "/p/meminfo"), /no MemTotal/);
  assert.throws(() => parseLoadavg("0.1 0.2\n", "/p/loadavg"), /\/p\/loadavg: expected/);
  assert.throws(() => parseNetDev("eth0: 1 2 3\n", "/p/net/dev"), /expected 16 counters/);
});

Deno.test("readFsStats() reports statfs figures, and a missing path by name", () => {
  const fs = readFsStats("/");
  assert.ok(fs.inodes >= fs.inodesFree);
  assert.equal(fs.inodesUsed, fs.inodes - fs.inodesFree);
  assert.throws(() => readFsStats("/no/such/dir"), /\/no\/such\/dir: statfs failed/);
});

Deno.test("readNodeStats() explains Deno's refusal of /proc under --allow-read alone", async () => {
  // A child Deno with only --allow-read, reading the real /proc (source on stdin).
  const mod = new URL("../../lib/stats/node.ts", import.meta.url).href;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-config", "--allow-read", "-"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(
    `import { readNodeStats } from ${JSON.stringify(mod)};
try { readNodeStats(); } catch (e) { console.log(e.name + "|" + e.file + "|" + e.message); }`,
  ));
  await writer.close();
  const out = await child.output();
  const [name, file, message] = new TextDecoder().decode(out.stdout).trim().split("|");
  assert.equal(name, "StatsPermissionError");
  assert.equal(file, "/proc/stat");
  assert.match(message ?? "", /--allow-all \(-A\)/);
  assert.ok(new StatsPermissionError("/x", new Error("no")) instanceof Error);
});
