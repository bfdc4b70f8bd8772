/**
 * The streaming endpoints against the real containerd (tests/harness), served
 * on a loopback node:http server and driven by real clients: Deno's WebSocket
 * with containerd 1.6's `v4.channel.k8s.io` subprotocol for exec, attach and
 * port-forward (containerd 1.6 has no v5), raw TCP for dropped streams, and
 * fetch for `/run`. One host-network busybox pod. Needs root.
 *
 * @module
 */

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Pod } from "../../lib/api/types.ts";
import { createRuntimeService, type RuntimeService } from "../../lib/cri/mod.ts";
import type { KubeRuntimeManager } from "../../lib/kuberuntime/mod.ts";
import { createStreamingHandlers, type StreamingHandlers } from "../../lib/streaming/mod.ts";
import { realClock } from "../../lib/util/clock.ts";
import { startTestRuntime, type TestRuntime } from "../harness/mod.ts";
import { RawClient, until } from "../unit/_streaming_kit.ts";
import { testRuntimeManager } from "./_manager.ts";
import { freePort } from "../kit/mod.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const PROTOCOL = "v4.channel.k8s.io";

/** Channels of the remotecommand WebSocket protocol. */
const STDIN = 0, STDOUT = 1, STDERR = 2, ERROR = 3, RESIZE = 4;

/** Serves `h` on 127.0.0.1: plain requests through `h.handle`, upgrades through `h.upgrade`. */
async function serve(h: StreamingHandlers) {
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (typeof v === "string") headers.set(k, v);
    }
    const response = await h.handle(new Request(url, { method: req.method!, headers }), url);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(new Uint8Array(await response.arrayBuffer()));
  });
  server.on("upgrade", (req, socket, head) => void h.upgrade(req, socket, head));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    close: () => {
      h.closeAll();
      const closed = new Promise<void>((r) => server.close(() => r()));
      server.closeAllConnections();
      return closed;
    },
  };
}

/** A remotecommand/portforward WebSocket session: frames per channel, the close. */
class Session {
  readonly channels = new Map<number, string>();
  readonly frames: Uint8Array[] = [];
  closed = false;
  readonly opened: Promise<void>;
  readonly ended: Promise<void>;
  private constructor(readonly ws: WebSocket) {
    ws.binaryType = "arraybuffer";
    this.opened = new Promise((resolve, reject) => {
      ws.onopen = () => resolve();
      ws.onerror = (e) => reject(new Error(`websocket error: ${(e as ErrorEvent).message}`));
    });
    this.ended = new Promise((resolve) => {
      ws.onclose = () => {
        this.closed = true;
        resolve();
      };
    });
    ws.onmessage = (e) => {
      const bytes = new Uint8Array(e.data as ArrayBuffer);
      this.frames.push(bytes);
      if (bytes.length === 0) return;
      const ch = bytes[0]!;
      this.channels.set(ch, (this.channels.get(ch) ?? "") + dec.decode(bytes.subarray(1)));
    };
  }

  static async open(port: number, path: string): Promise<Session> {
    const s = new Session(new WebSocket(`ws://127.0.0.1:${port}${path}`, [PROTOCOL]));
    await s.opened;
    assert.equal(s.ws.protocol, PROTOCOL);
    return s;
  }

  text(ch: number): string {
    return this.channels.get(ch) ?? "";
  }

  send(ch: number, data: string | Uint8Array): void {
    const bytes = typeof data === "string" ? enc.encode(data) : data;
    const frame = new Uint8Array(bytes.length + 1);
    frame[0] = ch;
    frame.set(bytes, 1);
    this.ws.send(frame);
  }

  waitFor(pred: () => boolean, what: string): Promise<void> {
    return until(() => pred() || this.closed, what, 20_000).then(() => {
      if (!pred()) {
        throw new Error(`stream closed before ${what}: ${JSON.stringify([...this.channels])}`);
      }
    });
  }

  close(): Promise<void> {
    if (!this.closed) this.ws.close();
    return this.ended;
  }
}

function execPath(container: string, cmd: string[], query: string): string {
  const command = cmd.map((c) => `command=${encodeURIComponent(c)}`).join("&");
  return `/exec/default/streamer/${container}?${command}&${query}`;
}

function openFds(): number {
  return [...Deno.readDirSync("/proc/self/fd")].length;
}

Deno.test({
  name: "streaming endpoints exec, attach, port-forward and run against containerd",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const rt: TestRuntime = await startTestRuntime({ name: "streaming" });
    let runtime: RuntimeService | undefined;
    let manager: KubeRuntimeManager | undefined;
    let pod: Pod | undefined;
    const servers: { close(): Promise<void> }[] = [];
    try {
      runtime = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
      manager = testRuntimeManager(rt, runtime);
      const pfPort = freePort();
      pod = {
        metadata: { name: "streamer", namespace: "default", uid: crypto.randomUUID() },
        spec: {
          hostNetwork: true,
          terminationGracePeriodSeconds: 1,
          containers: [
            { name: "main", command: ["sleep", "3600"] },
            {
              name: "echoer",
              command: ["sh", "-c", 'while read l; do echo "got $l"; done'],
              stdin: true,
            },
            { name: "listener", command: ["nc", "-ll", "-p", String(pfPort), "-e", "cat"] },
          ].map((c) => ({ image: rt.images.busybox, imagePullPolicy: "Never" as const, ...c })),
        },
      };
      const uid = pod.metadata.uid!;
      const signal = new AbortController().signal;
      const sync = await manager.syncPod(pod, await manager.getPodStatus(uid), signal);
      assert.deepEqual(sync.steps.filter((s) => s.error), []);
      const m = manager;
      let running = 0;
      const deadline = Date.now() + 20_000;
      while (running < 3 && Date.now() < deadline) {
        running = (await m.getPodStatus(uid)).containers.filter((c) => c.state === "running")
          .length;
        if (running < 3) await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(running, 3, "all three containers run");

      const thePod = pod;
      const streaming = createStreamingHandlers({
        runtime,
        getPodByName: (ns, name) =>
          ns === thePod.metadata.namespace && name === thePod.metadata.name ? thePod : undefined,
        getPodStatus: (u) => m.getPodStatus(u),
        clock: realClock,
      });
      const server = await serve(streaming);
      servers.push(server);
      const port = server.port;

      await t.step("exec: stdout and the exit code in the error channel's status", async () => {
        const s = await Session.open(
          port,
          execPath("main", ["sh", "-c", "echo hi; echo oops >&2; exit 3"], "output=1&error=1"),
        );
        await s.ended;
        assert.equal(s.text(STDOUT), "hi\n");
        assert.equal(s.text(STDERR), "oops\n");
        const status = JSON.parse(s.text(ERROR));
        assert.equal(status.status, "Failure");
        assert.equal(status.reason, "NonZeroExitCode");
        assert.deepEqual(status.details.causes, [{ reason: "ExitCode", message: "3" }]);
      });

      await t.step("exec: a successful command reports Success", async () => {
        const s = await Session.open(port, execPath("main", ["true"], "output=1"));
        await s.ended;
        assert.equal(JSON.parse(s.text(ERROR)).status, "Success");
      });

      await t.step("exec: stdin reaches cat and comes back on stdout", async () => {
        const s = await Session.open(port, execPath("main", ["cat"], "input=1&output=1"));
        s.send(STDIN, "hello through cat\n");
        await s.waitFor(() => s.text(STDOUT) === "hello through cat\n", "cat's echo");
        await s.close();
      });

      await t.step("exec: a tty, resized through the resize channel", async () => {
        const s = await Session.open(
          port,
          execPath(
            "main",
            ["sh", "-c", "tty; while read x; do stty size; done"],
            "input=1&output=1&tty=1",
          ),
        );
        await s.waitFor(() => s.text(STDOUT).includes("/dev/pts/"), "tty's answer");
        s.send(RESIZE, JSON.stringify({ Width: 123, Height: 45 }));
        // Resize and stdin are separate streams in the runtime: ask again until
        // stty sees the new size rather than assume which one lands first.
        for (let i = 0; i < 50 && !s.text(STDOUT).includes("45 123"); i++) {
          s.send(STDIN, "\r");
          await until(() => s.text(STDOUT).includes("45 123"), "stty", 100).catch(() => {});
        }
        assert.match(s.text(STDOUT), /45 123/);
        assert.equal(s.text(STDERR), "", "a tty has no separate stderr");
        await s.close();
      });

      await t.step("attach: stdin to a running container and its output back", async () => {
        const s = await Session.open(port, "/attach/default/streamer/echoer?input=1&output=1");
        s.send(STDIN, "ping\n");
        await s.waitFor(() => s.text(STDOUT).includes("got ping"), "the attached output");
        await s.close();
      });

      await t.step("portForward: bytes to a listener in the pod and back", async () => {
        const s = await Session.open(port, `/portForward/default/streamer?port=${pfPort}`);
        // The first frame of each channel names the port, little-endian.
        await s.waitFor(() => s.frames.length >= 2, "the port frames");
        const portBytes = [pfPort & 0xff, pfPort >> 8];
        assert.deepEqual([...s.frames[0]!], [0, ...portBytes]);
        assert.deepEqual([...s.frames[1]!], [1, ...portBytes]);
        s.channels.clear();
        s.send(0, "forwarded bytes\n");
        await s.waitFor(() => s.text(0) === "forwarded bytes\n", "the echo through the pod");
        await s.close();
      });

      await t.step("run: ExecSync output in the body; a failing command is 500", async () => {
        const ok = await fetch(
          `http://127.0.0.1:${port}/run/default/streamer/main?cmd=echo+from+run`,
          { method: "POST" },
        );
        assert.deepEqual([ok.status, await ok.text()], [200, "from run\n"]);
        const bad = await fetch(
          `http://127.0.0.1:${port}/run/default/streamer/main?cmd=ls+/nonexistent`,
          { method: "POST" },
        );
        assert.equal(bad.status, 500);
        assert.match(await bad.text(), /^command 'ls \/nonexistent' exited with 1: /);
      });

      await t.step(
        "refusals: unknown container 500, other pod 404, non-upgrade 500",
        async () => {
          const unknown = await fetch(
            `http://127.0.0.1:${port}${execPath("nope", ["ls"], "output=1")}`,
          );
          assert.deepEqual([unknown.status, await unknown.text()], [
            500,
            'container not found ("nope")',
          ]);
          const other = await fetch(`http://127.0.0.1:${port}/exec/default/other/main?output=1`);
          assert.deepEqual([other.status, await other.text()], [404, "pod does not exist"]);
          const plain = await fetch(
            `http://127.0.0.1:${port}${execPath("main", ["ls"], "output=1")}`,
          );
          assert.deepEqual([plain.status, await plain.text()], [500, "Upgrade request required\n"]);
        },
      );

      await t.step(
        "20 interrupted exec streams: open streams and file descriptors back to baseline",
        async () => {
          const baselineStreams = streaming.openStreams();
          const baselineFds = openFds();
          const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
          // 20 here, 200 against a fake runtime (tests/unit/streaming_proxy_test.ts). The
          // limit is containerd 1.6's, not the agent's: 200 such drops made straight to its
          // streaming server (CRI Exec URL, no agent in the path), whether mid-handshake or just
          // after its 101, left its shim holding ~440 pipes and unable to stop the sandbox
          // within 30 s; 200 sessions read to their end did not. `sleep 1` rather than `cat`:
          // with stdin open the dropped sessions' processes never end by themselves.
          const path = execPath("main", ["sleep", "1"], "output=1");
          for (let i = 0; i < 20; i++) {
            const c = await RawClient.connect(port);
            await c.send(
              `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: Upgrade\r\n` +
                `Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${key}\r\n` +
                `Sec-WebSocket-Protocol: ${PROTOCOL}\r\n\r\n`,
            );
            // Half are dropped mid-handshake, half once the runtime switched protocols.
            if (i % 2 === 1) {
              await c.readUntil((t) => t.includes("\r\n\r\n"));
              assert.match(c.text, /^HTTP\/1\.1 101 /);
            }
            c.close();
          }
          await until(() => streaming.openStreams() === baselineStreams, "open streams", 20_000);
          await until(() => openFds() <= baselineFds, `fds back to ${baselineFds}`, 20_000);
        },
      );

      await t.step("streamingConnectionIdleTimeout closes an idle exec", async () => {
        const idle = createStreamingHandlers({
          runtime: runtime!,
          getPodByName: () => thePod,
          getPodStatus: (u) => m.getPodStatus(u),
          streamingConnectionIdleTimeoutMs: 500,
        });
        const idleServer = await serve(idle);
        servers.push(idleServer);
        const s = await Session.open(
          idleServer.port,
          execPath("main", ["sleep", "60"], "output=1"),
        );
        const started = Date.now();
        await s.ended;
        const took = Date.now() - started;
        assert.ok(took >= 400 && took < 10_000, `closed after ${took} ms`);
        await until(() => idle.openStreams() === 0, "idle stream closed");
      });
    } finally {
      for (const s of servers) await s.close();
      if (manager && pod) {
        const status = await manager.getPodStatus(pod.metadata.uid!).catch(() => undefined);
        if (status) await manager.killPod(pod, status, 0, new AbortController().signal);
      }
      runtime?.close();
      await rt.stop();
    }
  },
});
