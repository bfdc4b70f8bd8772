import assert from "node:assert/strict";
import { join } from "node:path";
import { startPodSources } from "../../lib/config/sources.ts";
import type { PodUpdate } from "../../lib/config/types.ts";
import { FakeClock } from "../../lib/util/clock.ts";

const POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n" +
  "spec: {containers: [{name: c, image: busybox}]}\n";

Deno.test("startPodSources() feeds file and URL pods through one mux", async () => {
  const dir = await Deno.makeTempDir({ prefix: "denolet-sources-" });
  const seenHeaders: (string | null)[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    seenHeaders.push(req.headers.get("x-a"));
    return new Response(POD.replace("name: web", "name: remote"));
  });
  await Deno.writeTextFile(join(dir, "web.yaml"), POD);
  const updates: PodUpdate[] = [];
  const sources = startPodSources({
    nodeName: "node1",
    podManifestPath: dir,
    manifestUrl: `http://127.0.0.1:${server.addr.port}/`,
    manifestUrlHeader: { "X-A": ["1", "2"] },
    clock: new FakeClock(),
    watch: false,
    onUpdate: (u) => updates.push(u),
  });
  try {
    assert.equal(sources.seenAllSources(), false);
    await sources.ready;
    assert.equal(sources.seenAllSources(), true);
    const names = sources.config.mergedState().map((p) => p.metadata.name).sort();
    assert.deepEqual(names, ["remote-node1", "web-node1"]);
    assert.deepEqual(seenHeaders, ["1, 2"]);
    assert.deepEqual(updates.map((u) => `${u.source} ${u.op}`).sort(), ["file ADD", "http ADD"]);
  } finally {
    sources.stop();
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("startPodSources() with no sources configured has seen them all", async () => {
  const sources = startPodSources({
    nodeName: "n",
    podManifestPath: "",
    manifestUrl: "",
    onUpdate: () => assert.fail("no updates expected"),
  });
  await sources.ready;
  assert.equal(sources.seenAllSources(), true);
  assert.deepEqual(sources.config.sources(), []);
  sources.stop();
});
