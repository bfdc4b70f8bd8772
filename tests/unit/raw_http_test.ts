/**
 * lib/util/raw_http.ts: a raw response to a client that reads it, and to one that
 * went away mid-write (the socket's error is handled, `done` runs, nothing escapes).
 */

import assert from "node:assert/strict";
import net from "node:net";
import { writeRawResponse } from "../../lib/util/raw_http.ts";
import { deferred } from "../kit/wait.ts";

/** A connected pair: the server's socket (what the handler writes to) and the client's. */
async function pair(): Promise<{ server: net.Socket; client: net.Socket; close(): void }> {
  const accepted = deferred<net.Socket>();
  const listener = net.createServer((s) => accepted.resolve(s));
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  const { port } = listener.address() as net.AddressInfo;
  const client = net.connect({ port, host: "127.0.0.1" });
  const server = await accepted.promise;
  return {
    server,
    client,
    close: () => {
      client.destroy();
      server.destroy();
      listener.close();
    },
  };
}

Deno.test("writeRawResponse() writes a whole response with Connection: close, then closes", async () => {
  const p = await pair();
  try {
    const chunks: Uint8Array[] = [];
    p.client.on("data", (c: Uint8Array) => chunks.push(c));
    const ended = new Promise<void>((resolve) => p.client.on("end", resolve));
    const done = deferred<void>();
    writeRawResponse(p.server, 404, new TextEncoder().encode("no route\n"), {
      "Content-Type": "text/plain; charset=utf-8",
    }, done.resolve);
    await done.promise;
    await ended;
    assert.equal(
      Buffer.concat(chunks).toString(),
      "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\n" +
        "Content-Length: 9\r\nConnection: close\r\n\r\nno route\n",
    );
    assert.ok(p.server.destroyed);
  } finally {
    p.close();
  }
});

Deno.test("writeRawResponse() to a client that reset the connection ends quietly and calls done", async () => {
  const p = await pair();
  try {
    // The client resets as the response starts: the reset reaches the server's socket
    // while it writes (an error on it before then is the caller's to listen for).
    p.client.resetAndDestroy();
    const done = deferred<void>();
    // Big enough that the write cannot complete into the kernel's buffers at once.
    writeRawResponse(p.server, 500, new Uint8Array(8 * 1024 * 1024), {}, done.resolve);
    await done.promise;
    assert.ok(p.server.destroyed);
    assert.equal(p.server.listenerCount("error") >= 1, true, "the error was listened for");
  } finally {
    p.close();
  }
});
