/**
 * lib/cri/_grpc.ts against a plain node:http2 server on a unix socket that answers as
 * each case needs: the framing, statuses, resets, deadlines, size limit and redials
 * that the CRI client (cri_client_test.ts, against grpc-js's server) and the real
 * containerd (tests/integration/cri_test.ts) do not make happen on demand.
 */

import assert from "node:assert/strict";
import http2 from "node:http2";
import net from "node:net";
import { GrpcCode } from "../../lib/cri/errors.ts";
import { encodeGrpcTimeout, GrpcChannel, GrpcStatusError } from "../../lib/cri/_grpc.ts";
import { deferred, waitFor } from "../kit/wait.ts";

type Handler = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void;

interface Server {
  path: string;
  /** Sessions accepted so far. */
  sessions: http2.ServerHttp2Session[];
  close(): Promise<void>;
}

async function startServer(handler: Handler, path?: string): Promise<Server> {
  const dir = path === undefined ? await Deno.makeTempDir({ prefix: "denolet-grpc-" }) : undefined;
  const socket = path ?? `${dir}/s.sock`;
  const server = http2.createServer();
  const sessions: http2.ServerHttp2Session[] = [];
  server.on("session", (s) => sessions.push(s));
  server.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    stream.on("error", () => {});
    handler(stream, headers);
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  return {
    path: socket,
    sessions,
    async close() {
      for (const s of sessions) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (dir !== undefined) await Deno.remove(dir, { recursive: true });
    },
  };
}

function channel(path: string, over: { maxMessageBytes?: number; dials?: number[] } = {}) {
  return new GrpcChannel({
    dial: () => {
      over.dials?.push(performance.now());
      return net.connect({ path });
    },
    address: path,
    authority: "localhost",
    userAgent: "test",
    maxMessageBytes: over.maxMessageBytes ?? 1024,
    backoff: { initialMs: 200, maxMs: 1000 },
  });
}

/** A gRPC message frame around `body`. */
function frame(body: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + body.byteLength);
  new DataView(out.buffer).setUint32(1, body.byteLength);
  out.set(body, 5);
  return out;
}

/** Answers OK with `body` (echoing the request when undefined), status in the trailers. */
function answer(stream: http2.ServerHttp2Stream, body?: Uint8Array): void {
  const chunks: Uint8Array[] = [];
  stream.on("data", (c: Uint8Array) => chunks.push(c));
  stream.on("end", () => {
    const request = Buffer.concat(chunks).subarray(5);
    stream.respond({ ":status": 200, "content-type": "application/grpc" }, {
      waitForTrailers: true,
    });
    stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
    stream.end(frame(body ?? request));
  });
}

const noDeadline = { deadline: undefined, signal: undefined };
const text = (message: Uint8Array) => new TextDecoder().decode(message);
const bytes = (s: string) => new TextEncoder().encode(s);

async function failure(p: Promise<unknown>): Promise<GrpcStatusError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof GrpcStatusError, `expected a GrpcStatusError, got ${err}`);
  return err;
}

Deno.test("GrpcChannel sends one framed message and returns the answer's, over one connection", async () => {
  const seen: http2.IncomingHttpHeaders[] = [];
  const server = await startServer((stream, headers) => {
    seen.push(headers);
    answer(stream);
  });
  const ch = channel(server.path);
  try {
    for (const word of ["one", "two", "three"]) {
      const got = await ch.unary("/pkg.Svc/Echo", bytes(word), noDeadline, text);
      assert.equal(got, word);
    }
    assert.equal(server.sessions.length, 1);
    assert.equal(seen[0]![":path"], "/pkg.Svc/Echo");
    assert.equal(seen[0]!["content-type"], "application/grpc");
    assert.equal(seen[0]!["te"], "trailers");
    assert.equal(seen[0]!["user-agent"], "test");
    assert.equal(seen[0]!["grpc-timeout"], undefined);
  } finally {
    ch.close();
    await server.close();
  }
});

Deno.test("GrpcChannel maps trailers-only statuses, HTTP statuses and resets to gRPC codes", async () => {
  const server = await startServer((stream, headers) => {
    stream.on("data", () => {});
    switch (headers[":path"]) {
      case "/s/NotFound":
        return stream.respond({
          ":status": 200,
          "content-type": "application/grpc",
          "grpc-status": "5",
          "grpc-message": "no%20such%20container%3A%20%22abc%22",
        }, { endStream: true });
      case "/s/Http404":
        return stream.respond({ ":status": 404 }, { endStream: true });
      case "/s/Http503":
        return stream.respond({ ":status": 503 }, { endStream: true });
      case "/s/Refused":
        return stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      case "/s/Calm":
        return stream.close(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
      case "/s/Empty":
        stream.respond({ ":status": 200, "content-type": "application/grpc" }, {
          waitForTrailers: true,
        });
        stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
        return void stream.end();
      case "/s/NoTrailers":
        stream.respond({ ":status": 200, "content-type": "application/grpc" });
        return void stream.end(frame(bytes("x")));
    }
  });
  const ch = channel(server.path);
  try {
    const cases: [string, number, RegExp][] = [
      ["NotFound", GrpcCode.NOT_FOUND, /^no such container: "abc"$/],
      ["Http404", GrpcCode.UNIMPLEMENTED, /HTTP status code received from server: 404/],
      ["Http503", GrpcCode.UNAVAILABLE, /: 503/],
      ["Refused", GrpcCode.UNAVAILABLE, /error code 7/],
      ["Calm", GrpcCode.RESOURCE_EXHAUSTED, /error code 11/],
      ["Empty", GrpcCode.INTERNAL, /no response message/],
      ["NoTrailers", GrpcCode.INTERNAL, /without sending trailers/],
    ];
    for (const [path, code, details] of cases) {
      const err = await failure(ch.unary(`/s/${path}`, bytes(""), noDeadline, text));
      assert.equal(err.code, code, `${path}: ${err.code} ${err.details}`);
      assert.match(err.details, details, path);
    }
    // A reset stream does not end the connection: every case went over the first one.
    assert.equal(server.sessions.length, 1);
  } finally {
    ch.close();
    await server.close();
  }
});

Deno.test("GrpcChannel decodes responses of many chunks, several at once, each from its own bytes", async () => {
  // 200 KiB answers come in 16 KiB frames and are put together in the channel's receive
  // buffer; eight at once, each filled with its own byte, must each decode as itself.
  const server = await startServer((stream, headers) => {
    const fill = Number(String(headers[":path"]).slice("/s/Fill".length));
    answer(stream, new Uint8Array(200 * 1024).fill(fill));
  });
  const ch = channel(server.path, { maxMessageBytes: 1024 * 1024 });
  try {
    const summary = (m: Uint8Array) => ({ length: m.length, bytes: new Set(m) });
    for (let round = 0; round < 3; round++) {
      const got = await Promise.all(
        Array.from(
          { length: 8 },
          (_, i) => ch.unary(`/s/Fill${i}`, bytes(""), noDeadline, summary),
        ),
      );
      for (const [i, g] of got.entries()) {
        assert.deepEqual(
          g,
          { length: 200 * 1024, bytes: new Set([i]) },
          `round ${round}, call ${i}`,
        );
      }
    }
    const err = await failure(
      ch.unary("/s/Fill1", bytes(""), noDeadline, () => {
        throw new RangeError("invalid protobuf");
      }),
    );
    assert.equal(err.code, GrpcCode.INTERNAL);
    assert.match(err.details, /^cannot decode the response: invalid protobuf$/);
  } finally {
    ch.close();
    await server.close();
  }
});

Deno.test("GrpcChannel refuses messages over its size limit, both ways", async () => {
  const server = await startServer((stream) => answer(stream, new Uint8Array(2000)));
  const ch = channel(server.path, { maxMessageBytes: 1024 });
  try {
    const sent = await failure(ch.unary("/s/Big", new Uint8Array(1025), noDeadline, text));
    assert.equal(sent.code, GrpcCode.RESOURCE_EXHAUSTED);
    assert.match(sent.details, /larger than max \(1025 vs\. 1024\)/);
    assert.equal(server.sessions.length, 0, "nothing was sent");
    const received = await failure(ch.unary("/s/Big", new Uint8Array(10), noDeadline, text));
    assert.equal(received.code, GrpcCode.RESOURCE_EXHAUSTED);
    assert.match(received.details, /received message larger than max/);
  } finally {
    ch.close();
    await server.close();
  }
});

Deno.test("GrpcChannel sends the deadline as grpc-timeout and cancels the stream when it passes", async () => {
  const reset = deferred<number>();
  let timeout: unknown;
  const server = await startServer((stream, headers) => {
    timeout = headers["grpc-timeout"];
    stream.on("data", () => {});
    stream.on("close", () => reset.resolve(stream.rstCode));
  });
  const ch = channel(server.path);
  try {
    const err = await failure(
      ch.unary(
        "/s/Hang",
        bytes("x"),
        { deadline: performance.now() + 300, signal: undefined },
        text,
      ),
    );
    assert.equal(err.code, GrpcCode.DEADLINE_EXCEEDED);
    assert.match(String(timeout), /^(29\d|300)m$/);
    assert.equal(await reset.promise, http2.constants.NGHTTP2_CANCEL);
  } finally {
    ch.close();
    await server.close();
  }
});

Deno.test("GrpcChannel cancels a call on abort, with the signal's reason as the cause", async () => {
  const reset = deferred<number>();
  const abort = new AbortController();
  const server = await startServer((stream) => {
    stream.on("data", () => {});
    stream.on("close", () => reset.resolve(stream.rstCode));
    abort.abort(new Error("pod deleted"));
  });
  const ch = channel(server.path);
  try {
    const err = await failure(
      ch.unary("/s/Hang", bytes("x"), { deadline: undefined, signal: abort.signal }, text),
    );
    assert.equal(err.code, GrpcCode.CANCELLED);
    assert.equal((err.cause as Error).message, "pod deleted");
    assert.equal(await reset.promise, http2.constants.NGHTTP2_CANCEL);
  } finally {
    ch.close();
    await server.close();
  }
});

Deno.test("GrpcChannel fails calls in flight Unavailable when the connection drops, and dials again", async () => {
  const held = deferred<void>();
  const server = await startServer((stream, headers) => {
    if (headers[":path"] === "/s/Hang") {
      stream.on("data", () => {});
      held.resolve();
      return;
    }
    answer(stream);
  });
  const ch = channel(server.path);
  try {
    // No deadline: only the connection's end can end this call.
    const hanging = failure(ch.unary("/s/Hang", bytes("x"), noDeadline, text));
    await held.promise;
    server.sessions[0]!.destroy();
    const err = await hanging;
    assert.equal(err.code, GrpcCode.UNAVAILABLE);
    const got = await ch.unary("/s/Echo", bytes("again"), noDeadline, text);
    assert.equal(got, "again");
    assert.equal(server.sessions.length, 2);
  } finally {
    ch.close();
    await server.close();
  }
});

Deno.test("GrpcChannel fails fast Unavailable during its dial backoff, then dials again", async () => {
  const dir = await Deno.makeTempDir({ prefix: "denolet-grpc-" });
  const path = `${dir}/late.sock`;
  const dials: number[] = [];
  const ch = channel(path, { dials });
  let server: Server | undefined;
  try {
    const first = await failure(ch.unary("/s/Echo", bytes("x"), noDeadline, text));
    assert.equal(first.code, GrpcCode.UNAVAILABLE);
    assert.match(first.details, new RegExp(`^connection error: dial ${path}: `));
    // Within the backoff (200 ms ± 20%) the call fails without a dial.
    const second = await failure(ch.unary("/s/Echo", bytes("x"), noDeadline, text));
    assert.equal(second.code, GrpcCode.UNAVAILABLE);
    assert.equal(dials.length, 1);
    assert.ok(ch.retryAt - dials[0]! >= 160 && ch.retryAt - dials[0]! <= 240, String(ch.retryAt));

    server = await startServer((stream) => answer(stream), path);
    await waitFor("the backoff to pass", () => performance.now() >= ch.retryAt, {
      timeoutMs: 2000,
      intervalMs: 20,
    });
    const got = await ch.unary("/s/Echo", bytes("up"), noDeadline, text);
    assert.equal(got, "up");
    assert.equal(dials.length, 2);
  } finally {
    ch.close();
    await server?.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("GrpcChannel.close() fails calls in flight and later with Cancelled", async () => {
  const held = deferred<void>();
  const server = await startServer((stream) => {
    stream.on("data", () => {});
    held.resolve();
  });
  const ch = channel(server.path);
  try {
    const hanging = failure(ch.unary("/s/Hang", bytes("x"), noDeadline, text));
    await held.promise;
    ch.close();
    assert.equal((await hanging).code, GrpcCode.CANCELLED);
    assert.equal(
      (await failure(ch.unary("/s/Hang", bytes("x"), noDeadline, text))).code,
      GrpcCode.CANCELLED,
    );
  } finally {
    await server.close();
  }
});

Deno.test("encodeGrpcTimeout() rounds up to whole milliseconds within eight digits, then seconds", () => {
  assert.equal(encodeGrpcTimeout(0.2), "1m");
  assert.equal(encodeGrpcTimeout(2000.1), "2001m");
  assert.equal(encodeGrpcTimeout(99_999_999), "99999999m");
  assert.equal(encodeGrpcTimeout(100_000_000), "100000S");
  assert.equal(encodeGrpcTimeout(1e15), "99999999S");
});

Deno.test("GrpcChannel.serverStream() hands over each message as it is whole, across and within chunks", async () => {
  const more = deferred<void>();
  const server = await startServer((stream) => {
    stream.on("data", () => {});
    stream.respond({ ":status": 200, "content-type": "application/grpc" }, {
      waitForTrailers: true,
    });
    stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
    // Two messages in one chunk, then one split over two chunks, later.
    stream.write(Buffer.concat([frame(bytes("one")), frame(bytes("two"))]));
    const three = frame(bytes("three"));
    stream.write(three.subarray(0, 3));
    void more.promise.then(() => stream.end(three.subarray(3)));
  });
  const ch = channel(server.path);
  try {
    const got: string[] = [];
    const done = ch.serverStream("/pkg.Svc/Watch", bytes(""), noDeadline, (m) => {
      got.push(text(m));
    });
    await waitFor("the first two messages, before the stream ends", () => got.length === 2);
    more.resolve();
    await done;
    assert.deepEqual(got, ["one", "two", "three"]);
  } finally {
    ch.close();
    await server.close();
  }
});

Deno.test("GrpcChannel.serverStream() ends on the signal, on the server's status, on a throwing handler", async () => {
  const server = await startServer((stream, headers) => {
    stream.on("data", () => {});
    if (headers[":path"] === "/s/Unimplemented") {
      stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "12" }, {
        endStream: true,
      });
      return;
    }
    stream.respond({ ":status": 200, "content-type": "application/grpc" });
    stream.write(frame(bytes("event")));
    if (headers[":path"] === "/s/Cut") stream.end(frame(bytes("half")).subarray(0, 6));
  });
  const ch = channel(server.path);
  try {
    const abort = new AbortController();
    let seen = 0;
    const open = ch.serverStream("/s/Open", bytes(""), {
      deadline: undefined,
      signal: abort.signal,
    }, () => {
      seen++;
    });
    await waitFor("a message on the open stream", () => seen === 1);
    abort.abort(new Error("unsubscribed"));
    assert.equal((await failure(open)).code, GrpcCode.CANCELLED);

    const none = await failure(
      ch.serverStream("/s/Unimplemented", bytes(""), noDeadline, () => {}),
    );
    assert.equal(none.code, GrpcCode.UNIMPLEMENTED);

    const thrown = await failure(
      ch.serverStream("/s/Open", bytes(""), noDeadline, () => {
        throw new Error("bad event");
      }),
    );
    assert.equal(thrown.code, GrpcCode.INTERNAL);
    assert.match(thrown.details, /bad event/);

    // The stream ends half-way through a message, without trailers.
    const cut = await failure(ch.serverStream("/s/Cut", bytes(""), noDeadline, () => {}));
    assert.equal(cut.code, GrpcCode.INTERNAL);
  } finally {
    ch.close();
    await server.close();
  }
});
