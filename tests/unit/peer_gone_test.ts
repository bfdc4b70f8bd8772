/**
 * lib/util/peer_gone.ts: an uncaught socket error of a peer gone away is logged and the
 * process stays; any other uncaught error still ends it.
 */

import assert from "node:assert/strict";
import { createLogger } from "../../lib/util/log.ts";
import { isPeerGone, surviveLostPeers } from "../../lib/util/peer_gone.ts";

/** An error as node's errnoException makes it for a socket. */
function errno(code: string, syscall: string): Error {
  return Object.assign(new Error(`${syscall} ${code}`), { code, errno: -32, syscall });
}

Deno.test("isPeerGone() takes a socket's EPIPE and ECONNRESET on a read or write, nothing else", () => {
  assert.equal(isPeerGone(errno("EPIPE", "write")), true);
  assert.equal(isPeerGone(errno("ECONNRESET", "read")), true);
  assert.equal(isPeerGone(errno("EPIPE", "writev")), true);
  assert.equal(isPeerGone(errno("ECONNREFUSED", "connect")), false);
  assert.equal(isPeerGone(errno("ENOENT", "open")), false);
  assert.equal(isPeerGone(errno("EPIPE", "open")), false);
  assert.equal(isPeerGone(new TypeError("x is undefined")), false);
  assert.equal(isPeerGone({ code: "EPIPE", syscall: "write" }), false);
  assert.equal(isPeerGone(undefined), false);
});

Deno.test("surviveLostPeers() prevents the default of a lost peer's error event only, and logs it", () => {
  const lines: string[] = [];
  const logger = createLogger({ write: (line) => lines.push(line), caller: false });
  const target = new EventTarget();
  const remove = surviveLostPeers(logger, target);
  const lost = new ErrorEvent("error", { error: errno("EPIPE", "write"), cancelable: true });
  target.dispatchEvent(lost);
  assert.equal(lost.defaultPrevented, true);
  assert.equal(lines.length, 1);
  assert.match(
    lines[0]!,
    /^E.*"A connection's peer went away and no one was listening for it" err="write EPIPE"/,
  );
  const bug = new ErrorEvent("error", { error: new TypeError("boom"), cancelable: true });
  target.dispatchEvent(bug);
  assert.equal(bug.defaultPrevented, false);
  assert.equal(lines.length, 1);
  remove();
  const later = new ErrorEvent("error", { error: errno("EPIPE", "write"), cancelable: true });
  target.dispatchEvent(later);
  assert.equal(later.defaultPrevented, false);
});

/** Runs a script that installs the guard, then fails a stream's write with an EPIPE or a bug. */
async function runGuarded(throwWhat: "epipe" | "bug"): Promise<{ code: number; out: string }> {
  const dir = await Deno.makeTempDir({ prefix: "denolet-peer-gone-" });
  try {
    const script = `${dir}/main.ts`;
    const mod = new URL("../../lib/util/peer_gone.ts", import.meta.url).href;
    const log = new URL("../../lib/util/log.ts", import.meta.url).href;
    await Deno.writeTextFile(
      script,
      `import { Duplex } from "node:stream";
import { surviveLostPeers } from "${mod}";
import { createLogger } from "${log}";
surviveLostPeers(createLogger({ caller: false }));
const failure = ${
        throwWhat === "epipe"
          ? `Object.assign(new Error("write EPIPE"), { code: "EPIPE", syscall: "write" })`
          : `new TypeError("a real bug")`
      };
// A socket-like stream whose write fails after the call, with no 'error' listener.
const socket = new Duplex({ read() {}, write(_c, _e, cb) { setTimeout(() => cb(failure), 1); } });
socket.write("request");
// The failed write destroys the stream; its 'error' is emitted on the next tick.
while (!socket.destroyed) await new Promise((resolve) => setTimeout(resolve, 1));
await new Promise((resolve) => setTimeout(resolve, 0));
console.log("still running");
`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--quiet", "--no-lock", "-A", script],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    return { code: out.code, out: text };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a process with surviveLostPeers() outlives a socket's unlistened EPIPE, not a bug", async () => {
  const kept = await runGuarded("epipe");
  assert.equal(kept.code, 0, kept.out);
  assert.match(kept.out, /still running/);
  assert.match(kept.out, /peer went away and no one was listening for it" err="write EPIPE"/);
  const ended = await runGuarded("bug");
  assert.equal(ended.code, 1, ended.out);
  assert.doesNotMatch(ended.out, /still running/);
  assert.match(ended.out, /Uncaught TypeError: a real bug/);
});
