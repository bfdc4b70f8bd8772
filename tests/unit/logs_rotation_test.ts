/**
 * ContainerLogManager on a temp dir with a fake runtime whose
 * ReopenContainerLog creates the new log (as containerd does), and a fake
 * clock that drives the 10 s rounds.
 */

import assert from "node:assert/strict";
import {
  ContainerLogManager,
  type ContainerLogManagerOptions,
  listRunningContainerLogs,
  rotatedLogTimestamp,
  rotationPolicy,
} from "../../lib/logs/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";

const START = Date.UTC(2026, 0, 1, 12, 0, 0);

interface Rig {
  dir: string;
  log: string;
  clock: FakeClock;
  reopened: string[];
  failReopen: { value: boolean };
  manager(extra?: Partial<ContainerLogManagerOptions>): ContainerLogManager;
}

async function rig(): Promise<Rig> {
  const dir = await Deno.makeTempDir();
  const log = `${dir}/0.log`;
  const clock = new FakeClock(START);
  const reopened: string[] = [];
  const failReopen = { value: false };
  return {
    dir,
    log,
    clock,
    reopened,
    failReopen,
    manager: (extra = {}) =>
      new ContainerLogManager({
        runtime: {
          reopenContainerLog: async (id) => {
            if (failReopen.value) throw new Error("reopen refused");
            reopened.push(id);
            await Deno.writeFile(log, new Uint8Array(), { append: true, create: true });
          },
        },
        listRunningContainers: () => Promise.resolve([{ id: "c1", logPath: log }]),
        clock,
        maxSize: 100,
        maxFiles: 3,
        ...extra,
      }),
  };
}

async function names(dir: string): Promise<string[]> {
  return (await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name).sort();
}

async function gunzip(path: string): Promise<string> {
  const f = await Deno.open(path);
  return await new Response(f.readable.pipeThrough(new DecompressionStream("gzip"))).text();
}

/** Moves the fake clock one round on and waits for that round to finish. */
async function round(r: Rig, m: ContainerLogManager): Promise<void> {
  r.clock.tick(10_000);
  await m.stop();
  m.start();
}

Deno.test("ContainerLogManager rejects fewer than 2 files, as upstream", async () => {
  const r = await rig();
  try {
    assert.throws(() => r.manager({ maxFiles: 1 }), /invalid MaxFiles 1, must be > 1/);
  } finally {
    await Deno.remove(r.dir, { recursive: true });
  }
});

Deno.test("ContainerLogManager leaves a log under the size alone", async () => {
  const r = await rig();
  try {
    await Deno.writeTextFile(r.log, "x".repeat(99));
    await r.manager().rotateLogs();
    assert.deepEqual(await names(r.dir), ["0.log"]);
    assert.deepEqual(r.reopened, []);
  } finally {
    await Deno.remove(r.dir, { recursive: true });
  }
});

Deno.test("ContainerLogManager rotates every 10 s: renames with upstream's timestamp, compresses older files, keeps maxFiles", async () => {
  const r = await rig();
  const m = r.manager();
  m.start();
  try {
    const stamps: string[] = [];
    for (let i = 0; i < 4; i++) {
      await Deno.writeTextFile(r.log, `round ${i} `.padEnd(120, "x"));
      await round(r, m);
      stamps.push(rotatedLogTimestamp(r.clock.now()));
    }
    assert.equal(stamps[0], rotatedLogTimestamp(START + 10_000));
    assert.match(stamps[0]!, /^\d{8}-\d{6}$/);
    // maxFiles 3: the live log, the file rotated last (plain), one older (gzipped).
    assert.deepEqual(await names(r.dir), ["0.log", `0.log.${stamps[2]}.gz`, `0.log.${stamps[3]}`]);
    assert.deepEqual(r.reopened, ["c1", "c1", "c1", "c1"]);
    assert.match(await gunzip(`${r.dir}/0.log.${stamps[2]}.gz`), /^round 2 x+$/);
    assert.match(await Deno.readTextFile(`${r.dir}/0.log.${stamps[3]}`), /^round 3 x+$/);
    assert.equal((await Deno.stat(r.log)).size, 0);
  } finally {
    await m.stop();
    await Deno.remove(r.dir, { recursive: true });
  }
});

Deno.test("ContainerLogManager puts the log back when ReopenContainerLog fails, and rotates next round", async () => {
  const r = await rig();
  try {
    await Deno.writeTextFile(r.log, "y".repeat(150));
    r.failReopen.value = true;
    const m = r.manager();
    await m.rotateLogs();
    assert.deepEqual(await names(r.dir), ["0.log"]);
    assert.equal(await Deno.readTextFile(r.log), "y".repeat(150));
    r.failReopen.value = false;
    r.clock.tick(1000);
    await m.rotateLogs();
    assert.deepEqual(await names(r.dir), ["0.log", `0.log.${rotatedLogTimestamp(r.clock.now())}`]);
  } finally {
    await Deno.remove(r.dir, { recursive: true });
  }
});

Deno.test("ContainerLogManager drops leftover .tmp files and uncompressed copies of compressed ones", async () => {
  const r = await rig();
  try {
    await Deno.writeTextFile(r.log, "z".repeat(150));
    await Deno.writeTextFile(`${r.log}.20250101-000000`, "old");
    await Deno.writeTextFile(`${r.log}.20250101-000000.gz`, "old-gz");
    await Deno.writeTextFile(`${r.log}.20250101-000001.tmp`, "half");
    const m = r.manager({ maxFiles: 4 });
    await m.rotateLogs();
    assert.deepEqual(await names(r.dir), [
      "0.log",
      "0.log.20250101-000000.gz",
      `0.log.${rotatedLogTimestamp(r.clock.now())}`,
    ]);
  } finally {
    await Deno.remove(r.dir, { recursive: true });
  }
});

Deno.test("ContainerLogManager asks for a fresh log when the live one is missing", async () => {
  const r = await rig();
  try {
    await r.manager().rotateLogs();
    assert.deepEqual(r.reopened, ["c1"]);
    assert.deepEqual(await names(r.dir), ["0.log"]);
  } finally {
    await Deno.remove(r.dir, { recursive: true });
  }
});

Deno.test("ContainerLogManager.clean() removes a container's live and rotated logs", async () => {
  const r = await rig();
  try {
    await Deno.writeTextFile(r.log, "");
    await Deno.writeTextFile(`${r.log}.20250101-000000.gz`, "");
    await Deno.writeTextFile(`${r.dir}/1.log`, "");
    await r.manager().clean(r.log);
    assert.deepEqual(await names(r.dir), ["1.log"]);
  } finally {
    await Deno.remove(r.dir, { recursive: true });
  }
});

Deno.test("rotationPolicy() reads the kubelet configuration's quantity and duration", () => {
  assert.deepEqual(
    rotationPolicy({
      containerLogMaxSize: "10Mi",
      containerLogMaxFiles: 5,
      containerLogMonitorInterval: "10s",
    }),
    { maxSize: 10 * 1024 * 1024, maxFiles: 5, periodMs: 10_000 },
  );
  assert.deepEqual(rotationPolicy({}), {});
});

Deno.test("listRunningContainerLogs() lists running containers and asks each one's log path", async () => {
  const filters: unknown[] = [];
  const list = listRunningContainerLogs({
    listContainers: (filter) => {
      filters.push(filter);
      return Promise.resolve([{ id: "a" }, { id: "gone" }] as never);
    },
    containerStatus: (id) =>
      id === "a"
        ? Promise.resolve({ status: { state: 1, logPath: "/pods/x/app/0.log" }, info: {} } as never)
        : Promise.reject(new Error("not found")),
  });
  assert.deepEqual(await list(), [{ id: "a", logPath: "/pods/x/app/0.log" }]);
  assert.deepEqual(filters, [{ state: { state: 1 } }]);
});

Deno.test("listRunningContainerLogs() asks a container's log path once while it stays listed", async () => {
  let listed = ["a", "b"];
  const asked: string[] = [];
  const state = new Map([["a", 1], ["b", 1], ["c", 2]]);
  const list = listRunningContainerLogs({
    listContainers: () => Promise.resolve(listed.map((id) => ({ id })) as never),
    containerStatus: (id) => {
      asked.push(id);
      const logPath = id === "b" ? "" : `/pods/${id}/0.log`;
      return Promise.resolve({ status: { state: state.get(id), logPath }, info: {} } as never);
    },
  });
  const a = { id: "a", logPath: "/pods/a/0.log" };
  assert.deepEqual(await list(), [a]);
  assert.deepEqual(await list(), [a]);
  assert.deepEqual(asked, ["a", "b"], "the second round asks nothing (b has no log path)");
  // c stopped between the list and its status: skipped and asked again next round.
  listed = ["a", "c"];
  assert.deepEqual(await list(), [a]);
  assert.deepEqual(await list(), [a]);
  assert.deepEqual(asked, ["a", "b", "c", "c"]);
  // a left the list: forgotten, so asked again if listed again.
  listed = [];
  assert.deepEqual(await list(), []);
  listed = ["a"];
  assert.deepEqual(await list(), [a]);
  assert.deepEqual(asked, ["a", "b", "c", "c", "a"]);
});
