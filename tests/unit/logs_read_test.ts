/**
 * The /containerLogs handler over CRI log files in a temp dir, with a fake
 * runtime that knows where each container's log is and whether it runs.
 * Deno's test sanitizers check that no file, watcher or timer outlives a test.
 */

import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import type { RuntimeService } from "../../lib/cri/mod.ts";
import { containerIdForLogs, containerLogsHandler, openContainerLog } from "../../lib/logs/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";

const NOW = Date.UTC(2026, 0, 1, 0, 1, 0);
const ID = "a".repeat(64);
const PREV = "b".repeat(64);

const LINES = [
  "2026-01-01T00:00:00.100000000Z stdout F one\n",
  "2026-01-01T00:00:10.000000000Z stderr F two\n",
  "2026-01-01T00:00:20.000000000Z stdout P thr\n",
  "2026-01-01T00:00:20.500000000Z stdout F ee\n",
  "2026-01-01T00:00:30.000000000Z stdout F four\n",
];

function pod(status: Pod["status"]): Pod {
  return {
    metadata: { name: "web", namespace: "prod", uid: "u1" },
    spec: { containers: [{ name: "app", image: "busybox" }] },
    ...(status ? { status } : {}),
  };
}

const runningStatus: Pod["status"] = {
  containerStatuses: [{
    name: "app",
    state: { running: { startedAt: "2026-01-01T00:00:00Z" } },
    lastState: { terminated: { exitCode: 1, containerID: `containerd://${PREV}` } },
    ready: true,
    restartCount: 1,
    image: "busybox",
    imageID: "",
    containerID: `containerd://${ID}`,
  }],
};

interface Setup {
  dir: string;
  log: string;
  running: { value: boolean };
  get(path: string, signal?: AbortSignal): Promise<Response>;
}

async function setup(status: Pod["status"] = runningStatus): Promise<Setup> {
  const dir = await Deno.makeTempDir();
  const log = `${dir}/1.log`;
  await Deno.writeTextFile(log, LINES.join(""));
  await Deno.writeTextFile(`${dir}/0.log`, "2026-01-01T00:00:00Z stdout F previous\n");
  const running = { value: true };
  const runtime = {
    containerStatus: (id: string) => {
      if (id !== ID && id !== PREV) return Promise.reject(new Error(`no container ${id}`));
      return Promise.resolve({
        status: { logPath: id === ID ? log : `${dir}/0.log`, state: running.value ? 1 : 2 },
        info: {},
      });
    },
  } as unknown as RuntimeService;
  const handler = containerLogsHandler({
    getPodByName: (ns, name) => (ns === "prod" && name === "web" ? pod(status) : undefined),
    runtime,
    clock: new FakeClock(NOW),
  });
  return {
    dir,
    log,
    running,
    get: async (path, signal) => {
      const url = new URL(`https://node:10250${path}`);
      return await handler(new Request(url, signal ? { signal } : {}), url);
    },
  };
}

async function text(res: Response): Promise<string> {
  return await res.text();
}

Deno.test("containerLogs: the whole log, partial lines joined, both streams", async () => {
  const s = await setup();
  try {
    const res = await s.get("/containerLogs/prod/web/app");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/plain/);
    assert.equal(await text(res), "one\ntwo\nthree\nfour\n");
  } finally {
    await Deno.remove(s.dir, { recursive: true });
  }
});

Deno.test("containerLogs: tailLines, limitBytes, sinceTime, sinceSeconds and timestamps select as upstream", async () => {
  const s = await setup();
  try {
    assert.equal(await text(await s.get("/containerLogs/prod/web/app?tailLines=1")), "four\n");
    // Tail counts lines of the file: a partial record is a line of its own.
    assert.equal(await text(await s.get("/containerLogs/prod/web/app?tailLines=2")), "ee\nfour\n");
    assert.equal(await text(await s.get("/containerLogs/prod/web/app?tailLines=0")), "");
    assert.equal(await text(await s.get("/containerLogs/prod/web/app?limitBytes=6")), "one\ntw");
    assert.equal(
      await text(await s.get("/containerLogs/prod/web/app?sinceTime=2026-01-01T00:00:10Z")),
      "two\nthree\nfour\n",
    );
    // The fake clock says 00:01:00; 45 s back is 00:00:15.
    assert.equal(
      await text(await s.get("/containerLogs/prod/web/app?sinceSeconds=45")),
      "three\nfour\n",
    );
    assert.equal(
      await text(await s.get("/containerLogs/prod/web/app?timestamps=true&tailLines=3")),
      "2026-01-01T00:00:20Z thr" + "ee\n2026-01-01T00:00:30Z four\n",
    );
    assert.equal(
      await text(await s.get("/containerLogs/prod/web/app?timestamps=1&limitBytes=20")),
      "2026-01-01T00:00:00.",
    );
  } finally {
    await Deno.remove(s.dir, { recursive: true });
  }
});

Deno.test("containerLogs: previous reads the last terminated instance's log", async () => {
  const s = await setup();
  try {
    assert.equal(
      await text(await s.get("/containerLogs/prod/web/app?previous=true")),
      "previous\n",
    );
  } finally {
    await Deno.remove(s.dir, { recursive: true });
  }
});

Deno.test("containerLogs: unknown pod or container is 404, bad query 400/422, with upstream's text", async () => {
  const s = await setup();
  try {
    let res = await s.get("/containerLogs/prod/nope/app");
    assert.deepEqual([res.status, await res.text()], [404, 'pod "nope" does not exist']);
    res = await s.get("/containerLogs/prod/web/nope");
    assert.deepEqual([res.status, await res.text()], [
      404,
      'container "nope" not found in pod "web"',
    ]);
    res = await s.get("/containerLogs/prod/web/app?tailLines=x");
    assert.deepEqual([res.status, await res.text()], [
      400,
      `{"message": "Unable to decode query."}`,
    ]);
    res = await s.get("/containerLogs/prod/web/app?limitBytes=0");
    assert.deepEqual([res.status, await res.text()], [422, `{"message": "Invalid request."}`]);
    res = await s.get("/containerLogs/prod/web");
    assert.equal(res.status, 404);
    await res.body?.cancel();
  } finally {
    await Deno.remove(s.dir, { recursive: true });
  }
});

Deno.test("containerIdForLogs() explains containers that have not started as upstream", () => {
  const status = (state: object, last: object = {}) => ({
    containerStatuses: [{
      name: "app",
      state,
      lastState: last,
      ready: false,
      restartCount: 0,
      image: "",
      imageID: "",
    }],
  });
  const msg = (f: () => unknown) => {
    try {
      f();
    } catch (err) {
      return (err as Error).message;
    }
    return "no error";
  };
  assert.equal(
    msg(() =>
      containerIdForLogs("web", status({ waiting: { reason: "ContainerCreating" } }), "app", false)
    ),
    'container "app" in pod "web" is waiting to start: ContainerCreating',
  );
  assert.equal(
    msg(() =>
      containerIdForLogs("web", status({ waiting: { reason: "ErrImagePull" } }), "app", false)
    ),
    `container "app" in pod "web" is waiting to start: image can't be pulled`,
  );
  assert.equal(
    msg(() =>
      containerIdForLogs("web", status({ waiting: { reason: "ImagePullBackOff" } }), "app", false)
    ),
    'container "app" in pod "web" is waiting to start: trying and failing to pull image',
  );
  assert.equal(
    msg(() => containerIdForLogs("web", status({}), "app", false)),
    'container "app" in pod "web" is waiting to start - no logs yet',
  );
  assert.equal(
    msg(() => containerIdForLogs("web", status({ running: {} }), "app", true)),
    'previous terminated container "app" in pod "web" not found',
  );
  assert.equal(
    msg(() => containerIdForLogs("web", {}, "app", false)),
    'container "app" in pod "web" is not available',
  );
  assert.equal(
    containerIdForLogs(
      "web",
      status({ terminated: { exitCode: 0 } }, {
        terminated: { exitCode: 1, containerID: "containerd://x" },
      }),
      "app",
      false,
    ),
    "x",
  );
});

Deno.test("containerLogs: a waiting container is 400 with upstream's message", async () => {
  const s = await setup({
    containerStatuses: [{
      name: "app",
      state: { waiting: { reason: "ContainerCreating" } },
      lastState: {},
      ready: false,
      restartCount: 0,
      image: "",
      imageID: "",
    }],
  });
  try {
    const res = await s.get("/containerLogs/prod/web/app");
    assert.deepEqual([res.status, await res.text()], [
      400,
      'container "app" in pod "web" is waiting to start: ContainerCreating',
    ]);
  } finally {
    await Deno.remove(s.dir, { recursive: true });
  }
});

/** Reads from a stream until `want` has arrived (or the stream ends). */
async function readUntil(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  seen: { text: string },
  want: string,
): Promise<void> {
  const dec = new TextDecoder();
  while (!seen.text.includes(want)) {
    const r = await reader.read();
    if (r.done) break;
    seen.text += dec.decode(r.value);
  }
}

Deno.test("containerLogs follow: streams lines written later, follows a rotation, ends when the container exits and the file is drained", async () => {
  const s = await setup();
  try {
    const res = await s.get("/containerLogs/prod/web/app?follow=true&tailLines=1");
    const reader = res.body!.getReader();
    const seen = { text: "" };
    await readUntil(reader, seen, "four\n");
    assert.equal(seen.text, "four\n");
    await Deno.writeTextFile(s.log, "2026-01-01T00:00:40Z stdout F five\n", { append: true });
    await readUntil(reader, seen, "five\n");
    // Rotation: the log is renamed away and the runtime opens a new one.
    await Deno.rename(s.log, `${s.log}.20260101-000050`);
    await Deno.writeTextFile(s.log, "2026-01-01T00:00:50Z stdout F six\n");
    await readUntil(reader, seen, "six\n");
    await Deno.writeTextFile(s.log, "2026-01-01T00:00:55Z stdout F seven\n", { append: true });
    s.running.value = false;
    let rest = "";
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      rest += new TextDecoder().decode(r.value);
    }
    assert.equal(seen.text + rest, "four\nfive\nsix\nseven\n");
  } finally {
    await Deno.remove(s.dir, { recursive: true });
  }
});

Deno.test("containerLogs follow: 200 clients that go away release every file, watcher and timer", async () => {
  const s = await setup();
  try {
    const fds = () => [...Deno.readDirSync("/proc/self/fd")].length;
    const before = fds();
    for (let i = 0; i < 200; i++) {
      const res = await s.get("/containerLogs/prod/web/app?follow=true");
      const reader = res.body!.getReader();
      await readUntil(reader, { text: "" }, "four\n");
      await reader.cancel();
    }
    assert.equal(fds(), before);
  } finally {
    await Deno.remove(s.dir, { recursive: true });
  }
});

Deno.test("openContainerLog() reads lines longer than its read buffer, and a last line without newline", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const long = "y".repeat(700_000);
    await Deno.writeTextFile(
      `${dir}/0.log`,
      `2026-01-01T00:00:00Z stdout F ${long}\n2026-01-01T00:00:01Z stdout F tail`,
    );
    const stream = await openContainerLog({
      path: `${dir}/0.log`,
      options: { tail: -1, bytes: -1, sinceMs: 0, follow: false, timestamps: false },
      isRunning: () => Promise.resolve(false),
    });
    assert.equal(await new Response(stream).text(), `${long}\ntail`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("openContainerLog() carries short lines across its reads: every byte once, in order, each line stamped", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // ~1.2 MB of lines of varying length: several reads, lines split at each read's end.
    const lines = Array.from({ length: 20_000 }, (_, i) => `line ${i} ${"z".repeat(i % 97)}\n`);
    const stamp = (i: number) => `2026-01-01T00:00:${String(i % 60).padStart(2, "0")}.5Z`;
    await Deno.writeTextFile(
      `${dir}/0.log`,
      lines.map((l, i) => `${stamp(i)} ${i % 3 ? "stdout" : "stderr"} F ${l}`).join(""),
    );
    const read = async (timestamps: boolean) =>
      await new Response(
        await openContainerLog({
          path: `${dir}/0.log`,
          options: { tail: -1, bytes: -1, sinceMs: 0, follow: false, timestamps },
          isRunning: () => Promise.resolve(false),
        }),
      ).text();
    assert.equal(await read(false), lines.join(""));
    assert.equal(await read(true), lines.map((l, i) => `${stamp(i)} ${l}`).join(""));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("openContainerLog() names the file it cannot open", async () => {
  await assert.rejects(
    openContainerLog({
      path: "/nonexistent/0.log",
      options: { tail: -1, bytes: -1, sinceMs: 0, follow: false, timestamps: false },
      isRunning: () => Promise.resolve(false),
    }),
    /failed to open log file "\/nonexistent\/0.log"/,
  );
});

Deno.test("containerLogs follow: the request's signal ends the stream when the client goes away", async () => {
  const s = await setup();
  try {
    const client = new AbortController();
    const res = await s.get("/containerLogs/prod/web/app?follow=true", client.signal);
    const reader = res.body!.getReader();
    await readUntil(reader, { text: "" }, "four\n");
    const end = reader.read();
    client.abort();
    assert.equal((await end).done, true);
  } finally {
    await Deno.remove(s.dir, { recursive: true });
  }
});

Deno.test({
  name:
    "containerLogs follow over HTTP: clients that drop the connection leave no file or watcher open",
  async fn() {
    const s = await setup();
    const ac = new AbortController();
    const handler = containerLogsHandler({
      getPodByName: () => pod(runningStatus),
      runtime: {
        containerStatus: () => Promise.resolve({ status: { logPath: s.log, state: 1 }, info: {} }),
      } as unknown as RuntimeService,
    });
    const server = Deno.serve(
      { port: 0, hostname: "127.0.0.1", signal: ac.signal, onListen: () => {} },
      (req) => handler(req, new URL(req.url)),
    );
    const fds = () => [...Deno.readDirSync("/proc/self/fd")].length;
    try {
      const base = `http://127.0.0.1:${server.addr.port}/containerLogs/prod/web/app?follow=true`;
      // One round first, so the client's connection pool and the server's lazily made
      // resources are part of the baseline.
      const warm = await fetch(base);
      await warm.body?.cancel();
      const before = fds();
      for (let i = 0; i < 50; i++) {
        const client = new AbortController();
        const res = await fetch(base, { signal: client.signal });
        const reader = res.body!.getReader();
        await readUntil(reader, { text: "" }, "four\n");
        client.abort();
        await reader.closed.catch(() => {});
      }
      // The server notices each drop asynchronously: poll for the count to come back.
      const until = Date.now() + 10_000;
      while (fds() > before && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      assert.ok(fds() <= before, `${fds()} fds open, ${before} before`);
    } finally {
      ac.abort();
      await server.finished;
      await Deno.remove(s.dir, { recursive: true });
    }
  },
});
