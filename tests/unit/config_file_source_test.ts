import assert from "node:assert/strict";
import { join } from "node:path";
import type { Pod } from "../../lib/api/types.ts";
import { FileSource } from "../../lib/config/file_source.ts";
import { PodConfig } from "../../lib/config/mux.ts";
import type { PodUpdate, SourceError } from "../../lib/config/types.ts";
import { FakeClock, realClock } from "../../lib/util/clock.ts";
import { createLogger } from "../../lib/util/log.ts";

function podYaml(name: string, image = "busybox:1.36"): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  containers:
  - name: main
    image: ${image}
`;
}

/** A file source over a temp dir, with its sets, errors and a mux fed from it. */
async function harness(opts: { watch?: boolean; path?: (dir: string) => string } = {}) {
  const dir = await Deno.makeTempDir({ prefix: "denolet-file-source-" });
  const clock = new FakeClock();
  const sets: Pod[][] = [];
  const errors: SourceError[] = [];
  const updates: PodUpdate[] = [];
  const mux = new PodConfig({ clock, onUpdate: (u) => updates.push(u) });
  const sink = mux.channel("file");
  const source = new FileSource({
    path: opts.path ? opts.path(dir) : dir,
    nodeName: "node1",
    clock,
    watch: opts.watch ?? false,
    onPods: (pods) => {
      sets.push(pods);
      sink(pods);
    },
    onError: (e) => errors.push(e),
  });
  const names = () => (sets.at(-1) ?? []).map((p) => p.metadata.name).sort();
  /** Fires the periodic re-read through the fake clock and waits for it. */
  const tick = async () => {
    const before = sets.length;
    clock.tick(20_000);
    await source.refresh();
    assert.equal(sets.length, before + 1, "the periodic re-read should hand over one set");
  };
  const cleanup = async () => {
    source.stop();
    await Deno.remove(dir, { recursive: true });
  };
  return { dir, clock, sets, errors, updates, source, names, tick, cleanup };
}

function ops(updates: PodUpdate[]): string[] {
  return updates.map((u) => `${u.op} ${u.pods.map((p) => p.metadata.name).join(",")}`);
}

Deno.test("FileSource reads every pod of a multi-document file", async () => {
  const h = await harness();
  try {
    await Deno.writeTextFile(join(h.dir, "pair.yaml"), `${podYaml("a")}---\n---\n${podYaml("b")}`);
    await h.source.start();
    assert.deepEqual(h.names(), ["a-node1", "b-node1"]);
    assert.equal(h.errors.length, 0);
    assert.deepEqual(ops(h.updates), ["ADD a-node1,b-node1"]);
  } finally {
    await h.cleanup();
  }
});

Deno.test("FileSource reports a bad file by name and still delivers the good ones", async () => {
  const h = await harness();
  try {
    await Deno.writeTextFile(join(h.dir, "good.yaml"), podYaml("good"));
    await Deno.writeTextFile(
      join(h.dir, "bad.yaml"),
      podYaml("bad").replace("kind: Pod", "kind: Service"),
    );
    await Deno.writeTextFile(
      join(h.dir, "invalid.json"),
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "inv" },
        spec: { containers: [{ name: "x" }] },
      }),
    );
    await h.source.start();
    assert.deepEqual(h.names(), ["good-node1"]);
    const byFile = Object.fromEntries(h.errors.map((e) => [e.file, e]));
    assert.equal(h.errors.length, 2);
    assert.equal(byFile[join(h.dir, "bad.yaml")]?.source, "file");
    assert.match(
      byFile[join(h.dir, "bad.yaml")]!.reason,
      /bad\.yaml" document 1: kind is "Service"/,
    );
    assert.match(
      byFile[join(h.dir, "invalid.json")]!.reason,
      /invalid\.json" document 1: invalid pod "inv": spec\.containers\[0\]\.image: Required value/,
    );
  } finally {
    await h.cleanup();
  }
});

Deno.test("FileSource picks up a fixed file on the next periodic read", async () => {
  const h = await harness();
  try {
    const file = join(h.dir, "web.yaml");
    await Deno.writeTextFile(file, "apiVersion: v1\nkind: Pod\nmetadata: [oops\n");
    await h.source.start();
    assert.deepEqual(h.names(), []);
    assert.equal(h.errors.length, 1);
    await Deno.writeTextFile(file, podYaml("web"));
    await h.tick();
    assert.deepEqual(h.names(), ["web-node1"]);
    assert.deepEqual(ops(h.updates), ["ADD ", "ADD web-node1"]);
  } finally {
    await h.cleanup();
  }
});

Deno.test("FileSource gives an edited manifest a new UID: REMOVE old, ADD new", async () => {
  const h = await harness();
  try {
    const file = join(h.dir, "web.yaml");
    await Deno.writeTextFile(file, podYaml("web"));
    await h.source.start();
    const oldUID = h.sets.at(-1)![0]!.metadata.uid;
    await h.tick();
    assert.equal(h.sets.at(-1)![0]!.metadata.uid, oldUID, "an unchanged file keeps its UID");
    await Deno.writeTextFile(file, podYaml("web", "busybox:1.37"));
    await h.tick();
    const newUID = h.sets.at(-1)![0]!.metadata.uid;
    assert.notEqual(newUID, oldUID);
    assert.deepEqual(h.updates.map((u) => `${u.op} ${u.pods.map((p) => p.metadata.uid)}`), [
      `ADD ${oldUID}`,
      `REMOVE ${oldUID}`,
      `ADD ${newUID}`,
    ]);
  } finally {
    await h.cleanup();
  }
});

Deno.test("FileSource hands over an unchanged file's pods as first read, and reads a changed or re-created one afresh", async () => {
  const h = await harness();
  try {
    const file = join(h.dir, "web.yaml");
    const seen = () => h.sets.at(-1)?.[0]?.metadata.annotations?.["kubernetes.io/config.seen"];
    await Deno.writeTextFile(file, podYaml("web"));
    await h.source.start();
    const first = h.sets.at(-1)![0]!;
    await h.tick();
    // The same pods, not parsed again: the seen time is the first read's.
    assert.deepEqual(h.sets.at(-1)![0], first);
    await Deno.writeTextFile(file, podYaml("web", "busybox:1.37"));
    await h.tick();
    assert.notEqual(seen(), first.metadata.annotations?.["kubernetes.io/config.seen"]);
    assert.equal(h.sets.at(-1)![0]!.spec.containers[0]!.image, "busybox:1.37");
    // Gone, then back with its first text: read afresh (a new seen time).
    await Deno.remove(file);
    await h.tick();
    assert.deepEqual(h.names(), []);
    await Deno.writeTextFile(file, podYaml("web"));
    await h.tick();
    assert.equal(h.sets.at(-1)![0]!.metadata.uid, first.metadata.uid);
    assert.notEqual(seen(), first.metadata.annotations?.["kubernetes.io/config.seen"]);
  } finally {
    await h.cleanup();
  }
});

Deno.test("FileSource sends REMOVE through the mux when a file is deleted", async () => {
  const h = await harness();
  try {
    await Deno.writeTextFile(join(h.dir, "a.yaml"), podYaml("a"));
    await Deno.writeTextFile(join(h.dir, "b.yaml"), podYaml("b"));
    await h.source.start();
    await Deno.remove(join(h.dir, "a.yaml"));
    await h.tick();
    assert.deepEqual(h.names(), ["b-node1"]);
    assert.deepEqual(ops(h.updates), ["ADD a-node1,b-node1", "REMOVE a-node1"]);
  } finally {
    await h.cleanup();
  }
});

Deno.test("FileSource skips hidden files and subdirectories but reads any regular file", async () => {
  const h = await harness();
  try {
    await Deno.writeTextFile(join(h.dir, ".web.yaml.swp"), "not yaml at all: [");
    await Deno.mkdir(join(h.dir, "nested"));
    await Deno.writeTextFile(join(h.dir, "nested", "x.yaml"), podYaml("nested"));
    await Deno.writeTextFile(join(h.dir, "manifest"), podYaml("noext"));
    await h.source.start();
    assert.deepEqual(h.names(), ["noext-node1"]);
    assert.equal(h.errors.length, 0);
  } finally {
    await h.cleanup();
  }
});

Deno.test("FileSource sends an empty set for a missing path and retries it", async () => {
  const h = await harness({ path: (dir) => join(dir, "manifests") });
  try {
    await h.source.start();
    assert.deepEqual(h.sets, [[]]);
    await Deno.mkdir(join(h.dir, "manifests"));
    await Deno.writeTextFile(join(h.dir, "manifests", "a.yaml"), podYaml("a"));
    await h.tick();
    assert.deepEqual(h.names(), ["a-node1"]);
  } finally {
    await h.cleanup();
  }
});

Deno.test("FileSource reads a single manifest file path", async () => {
  const h = await harness({ path: (dir) => join(dir, "only.yaml") });
  try {
    await Deno.writeTextFile(join(h.dir, "only.yaml"), podYaml("only"));
    await h.source.start();
    assert.deepEqual(h.names(), ["only-node1"]);
    assert.equal(h.sets.at(-1)![0]!.metadata.annotations!["kubernetes.io/config.source"], "file");
  } finally {
    await h.cleanup();
  }
});

Deno.test("FileSource.stop() cancels the periodic re-read", async () => {
  const h = await harness();
  try {
    await h.source.start();
    assert.equal(h.clock.pendingTimers, 1);
    h.source.stop();
    assert.equal(h.clock.pendingTimers, 0);
    h.clock.tick(60_000);
    await h.source.refresh();
    assert.equal(h.sets.length, 1);
  } finally {
    await h.cleanup();
  }
});

Deno.test("FileSource re-reads on a filesystem event", async () => {
  const dir = await Deno.makeTempDir({ prefix: "denolet-file-watch-" });
  let resolveNext: ((pods: Pod[]) => void) | undefined;
  const source = new FileSource({
    path: dir,
    nodeName: "node1",
    clock: realClock, // The debounce timer must fire on its own here.
    debounceMs: 20,
    checkFrequencyMs: 3_600_000,
    onPods: (pods) => resolveNext?.(pods),
  });
  try {
    await source.start();
    const next = new Promise<Pod[]>((resolve) => (resolveNext = resolve));
    await Deno.writeTextFile(join(dir, "w.yaml"), podYaml("watched"));
    const timeout = AbortSignal.timeout(5_000);
    const pods = await Promise.race([
      next,
      new Promise<never>((_, reject) =>
        timeout.addEventListener("abort", () => reject(new Error("no re-read within 5s")))
      ),
    ]);
    assert.deepEqual(pods.map((p) => p.metadata.name), ["watched-node1"]);
  } finally {
    source.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("FileSource warns once for a pod whose UID cannot be the upstream kubelet's", async () => {
  const dir = await Deno.makeTempDir({ prefix: "denolet-file-source-" });
  const lines: string[] = [];
  const clock = new FakeClock();
  const source = new FileSource({
    path: dir,
    nodeName: "node1",
    clock,
    watch: false,
    log: createLogger({ format: "json", write: (l) => lines.push(l), caller: false }),
    onPods: () => {},
    onError: () => {},
  });
  try {
    // A creationTimestamp's time.Location in upstream's dump is not reproduced; 1.5Gi is.
    await Deno.writeTextFile(
      join(dir, "ts.yaml"),
      podYaml("ts").replace(
        "  name: ts\n",
        "  name: ts\n  creationTimestamp: '2024-01-02T03:04:05Z'\n",
      ),
    );
    await Deno.writeTextFile(
      join(dir, "dec.yaml"),
      podYaml("dec") + `    resources:
      limits: {memory: 1.5Gi}
`,
    );
    await Deno.writeTextFile(
      join(dir, "int.yaml"),
      podYaml("int") + `    resources:
      limits: {memory: 64Mi}
`,
    );
    await source.start();
    clock.tick(20_000);
    await source.refresh();
    const warned = lines.map((l) => JSON.parse(l)).filter((r) =>
      String(r.msg).startsWith("Static pod UID is not the one the upstream kubelet derives")
    );
    assert.deepEqual(warned.map((r) => r.pod), ["ts"]);
  } finally {
    source.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
