/**
 * The upgrade proxy between a node:http server and a fake runtime streaming
 * server, all on loopback: the re-sent request, bytes both ways, close
 * propagation, the idle timeout on a fake clock, and the open-stream count.
 */

import assert from "node:assert/strict";
import { proxyUpgrade, StreamTracker } from "../../lib/streaming/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import {
  type FakeBackend,
  RawClient,
  startFakeBackend,
  startUpgradeServer,
  until,
  upgradeRequest,
} from "./_streaming_kit.ts";

interface Setup {
  backend: FakeBackend;
  port: number;
  clock: FakeClock;
  tracker: StreamTracker;
  done: Promise<void>[];
}

async function withProxy(
  opts: { idleTimeoutMs?: number; echo?: boolean; location?: (b: FakeBackend) => URL },
  fn: (s: Setup) => Promise<void>,
): Promise<void> {
  const backend = startFakeBackend({ echo: opts.echo ?? true });
  const clock = new FakeClock();
  const tracker = new StreamTracker();
  const done: Promise<void>[] = [];
  const location = opts.location?.(backend) ?? backend.url("/exec/tok3n?x=1");
  const server = await startUpgradeServer((req, socket, head) => {
    done.push(proxyUpgrade(req, socket, head, location, {
      idleTimeoutMs: opts.idleTimeoutMs ?? 60_000,
      clock,
      logger: silentLogger,
      tracker,
      what: "exec test/pod/c",
    }));
  });
  try {
    await fn({ backend, port: server.port, clock, tracker, done });
  } finally {
    tracker.closeAll();
    await Promise.all(done);
    await server.close();
    await backend.close();
  }
}

Deno.test("proxyUpgrade() re-sends the request to the runtime URL with the client's headers and head", async () => {
  await withProxy({}, async ({ backend, port, tracker }) => {
    const client = await RawClient.connect(port);
    await client.send(upgradeRequest("/exec/ns/p/c?command=ls&output=1") + "early-bytes");
    const conn = await backend.next();
    const lines = conn.head.split("\r\n");
    assert.equal(lines[0], "POST /exec/tok3n?x=1 HTTP/1.1");
    assert.ok(lines.includes(`Host: ${backend.url("/").host}`), conn.head);
    assert.ok(lines.includes("Connection: Upgrade"), conn.head);
    assert.ok(lines.includes("Upgrade: SPDY/3.1"), conn.head);
    assert.ok(lines.includes("X-Stream-Protocol-Version: v4.channel.k8s.io"), conn.head);
    assert.ok(lines.includes("X-Forwarded-For: 127.0.0.1"), conn.head);
    assert.ok(!conn.head.includes("node.example"), "the client's Host is replaced");
    await client.readUntil((t) => t.includes("early-bytes"));
    assert.match(client.text, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
    assert.equal(tracker.open, 1);
    client.close();
  });
});

Deno.test("proxyUpgrade() carries bytes both ways", async () => {
  await withProxy({ echo: false }, async ({ backend, port }) => {
    const client = await RawClient.connect(port);
    await client.send(upgradeRequest("/exec/ns/p/c"));
    const conn = await backend.next();
    await client.readUntil((t) => t.includes("\r\n\r\n"));
    await client.send("from-client");
    await until(() => conn.received() === "from-client", "client bytes at the runtime");
    const big = "x".repeat(256 * 1024);
    await conn.write(big);
    await client.readUntil((t) => t.endsWith(big));
    client.close();
  });
});

Deno.test("proxyUpgrade() closes the runtime side when the client drops", async () => {
  await withProxy({}, async ({ backend, port, tracker, done }) => {
    const client = await RawClient.connect(port);
    await client.send(upgradeRequest("/attach/ns/p/c"));
    const conn = await backend.next();
    await client.readUntil((t) => t.includes("\r\n\r\n"));
    assert.equal(tracker.open, 1);
    client.close();
    await conn.closed;
    await done[0];
    assert.equal(tracker.open, 0);
  });
});

Deno.test("proxyUpgrade() delivers the runtime's last bytes, then closes the client", async () => {
  await withProxy({ echo: false }, async ({ backend, port, tracker, done }) => {
    const client = await RawClient.connect(port);
    await client.send(upgradeRequest("/exec/ns/p/c"));
    const conn = await backend.next();
    await conn.write("exit status 3");
    conn.close();
    const text = await client.readToEnd();
    assert.ok(text.endsWith("exit status 3"), text);
    await done[0];
    assert.equal(tracker.open, 0);
    client.close();
  });
});

Deno.test("proxyUpgrade() closes a connection idle for streamingConnectionIdleTimeout, not before", async () => {
  await withProxy({ idleTimeoutMs: 1_000 }, async ({ backend, port, clock, tracker, done }) => {
    const client = await RawClient.connect(port);
    await client.send(upgradeRequest("/exec/ns/p/c"));
    const conn = await backend.next();
    await client.readUntil((t) => t.includes("\r\n\r\n"));
    clock.tick(900);
    await client.send("ping");
    await client.readUntil((t) => t.endsWith("ping"));
    // 1000 ms after the start, but only 100 ms after the last byte.
    clock.tick(100);
    assert.equal(tracker.open, 1);
    clock.tick(899);
    assert.equal(tracker.open, 1);
    clock.tick(1);
    await conn.closed;
    await client.readToEnd();
    assert.equal(client.eof, true);
    await done[0];
    assert.equal(tracker.open, 0);
    assert.equal(clock.pendingTimers, 0);
    client.close();
  });
});

Deno.test("proxyUpgrade() answers 500 when the runtime's streaming server is unreachable", async () => {
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const deadPort = (closed.addr as Deno.NetAddr).port;
  closed.close();
  await withProxy(
    { location: () => new URL(`http://127.0.0.1:${deadPort}/exec/x`) },
    async ({ port, tracker, done }) => {
      const client = await RawClient.connect(port);
      await client.send(upgradeRequest("/exec/ns/p/c"));
      const text = await client.readToEnd();
      assert.match(text, /^HTTP\/1\.1 500 Internal Server Error\r\n/);
      assert.match(text, /error dialing backend: /);
      await done[0];
      assert.equal(tracker.open, 0);
      client.close();
    },
  );
});

Deno.test("proxyUpgrade() count returns to its baseline after 200 interrupted streams", async () => {
  await withProxy({}, async ({ port, tracker, clock, done }) => {
    const baseline = tracker.open;
    for (let i = 0; i < 200; i++) {
      const client = await RawClient.connect(port);
      await client.send(upgradeRequest(`/exec/ns/p/c?i=${i}`));
      if (i % 2 === 0) {
        // dropped mid-stream, after the runtime switched protocols
        await client.readUntil((t) => t.includes("\r\n\r\n"));
        assert.match(client.text, /^HTTP\/1\.1 101 /);
        client.close();
      } else {
        // dropped as soon as the request is out: the proxy may or may not
        // have dialed the runtime yet, and must clean up either way
        client.close();
        await until(() => done.length === i + 1, `stream ${i} to reach the proxy`);
      }
    }
    await Promise.all(done);
    assert.equal(done.length, 200);
    assert.equal(tracker.open, baseline);
    assert.equal(clock.pendingTimers, 0);
  });
});
