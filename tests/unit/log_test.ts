import assert from "node:assert/strict";
import { createLogger, type LoggerOptions, silentLogger } from "../../lib/util/log.ts";

// 2026-11-30 15:04:05.123456 local time, as klog prints local time.
const NOW = new Date(2026, 10, 30, 15, 4, 5, 123).getTime() + 0.456;

function capture(opts: LoggerOptions = {}) {
  const lines: string[] = [];
  const log = createLogger({ now: () => NOW, pid: 1234, write: (l) => lines.push(l), ...opts });
  return { log, lines };
}

Deno.test("createLogger() writes klog's text header with microseconds, PID and caller", () => {
  const { log, lines } = capture();
  log.info("Starting denolet", { version: "0.1.0" });
  assert.equal(lines.length, 1);
  assert.match(
    lines[0]!,
    /^I1130 15:04:05\.123456 {4}1234 log_test\.ts:\d+\] "Starting denolet" version="0\.1\.0"$/,
  );
});

Deno.test("createLogger() reports the line of the calling statement", () => {
  const { log, lines } = capture();
  const line = Number(new Error().stack!.split("\n")[1]!.match(/:(\d+):\d+\)?$/)![1]) + 1;
  log.info("here");
  assert.ok(lines[0]!.includes(` log_test.ts:${line}] `), lines[0]!);
});

Deno.test("createLogger() quotes strings and leaves numbers and booleans bare in text", () => {
  const { log, lines } = capture({ caller: false });
  log.info("Pod sync", {
    pod: "kube-system/etcd",
    podUID: "u-1",
    restarts: 3,
    ready: false,
    nothing: null,
    skipped: undefined,
    tags: ["a", "b"],
  });
  assert.ok(
    lines[0]!.endsWith(
      `] "Pod sync" pod="kube-system/etcd" podUID="u-1" restarts=3 ready=false nothing=<nil> ` +
        `tags=["a","b"]`,
    ),
    lines[0]!,
  );
});

Deno.test("createLogger() writes errors as E records with err right after the message", () => {
  const { log, lines } = capture({ caller: false });
  const err = new Error("dial unix /run/c.sock", { cause: new Error("ENOENT") });
  log.error("Failed to connect", err, { containerName: "app" });
  assert.match(lines[0]!, /^E1130 /);
  assert.ok(
    lines[0]!.endsWith(
      `] "Failed to connect" err="dial unix /run/c.sock: ENOENT" containerName="app"`,
    ),
    lines[0]!,
  );
});

Deno.test("createLogger() marks warnings with W", () => {
  const { log, lines } = capture({ caller: false });
  log.warn("Unknown field", { field: "foo" });
  assert.match(lines[0]!, /^W1130 15:04:05\.123456 {4}1234 denolet\] "Unknown field" field="foo"$/);
});

Deno.test("createLogger() prints multi-line strings as klog's indented block", () => {
  const { log, lines } = capture({ caller: false });
  log.info("Output", { stdout: "one\ntwo\n" });
  assert.ok(lines[0]!.endsWith(`"Output" stdout=<\n\tone\n\ttwo\n >`), lines[0]!);
});

Deno.test("v() gates records above the configured verbosity before formatting", () => {
  const { log, lines } = capture({ verbosity: 2 });
  log.v(2).info("shown");
  log.v(3).info("hidden");
  log.v(3).warn("hidden too");
  log.v(5).error("errors always print", new Error("boom"));
  assert.equal(lines.length, 2);
  assert.ok(lines[0]!.includes('"shown"'));
  assert.ok(lines[1]!.startsWith("E"));
});

Deno.test("with() adds its fields to every record and call fields override them", () => {
  const { log, lines } = capture({ caller: false });
  const podLog = log.with({ pod: "default/web", podUID: "u-1" });
  podLog.v(0).info("a", { podUID: "u-2" });
  assert.ok(lines[0]!.endsWith(`"a" pod="default/web" podUID="u-2"`), lines[0]!);
});

Deno.test("createLogger() writes upstream's JSON keys with --logging-format=json", () => {
  const { log, lines } = capture({ format: "json", verbosity: 4 });
  log.v(4).info("Pod status updated", { pod: "default/nginx", status: "ready", n: 2 });
  const rec = JSON.parse(lines[0]!);
  assert.deepEqual(Object.keys(rec), ["ts", "caller", "msg", "v", "pod", "status", "n"]);
  assert.equal(rec.ts, NOW); // zap's epochMillisTimeEncoder: float milliseconds
  assert.match(rec.caller, /^log_test\.ts:\d+$/);
  assert.equal(rec.msg, "Pod status updated");
  assert.equal(rec.v, 4);
  assert.equal(rec.n, 2);
});

Deno.test("createLogger() writes errors as err in JSON", () => {
  const { log, lines } = capture({ format: "json" });
  log.error("Sync failed", new Error("outer", { cause: new Error("inner") }), { pod: "a/b" });
  const rec = JSON.parse(lines[0]!);
  assert.deepEqual(Object.keys(rec), ["ts", "caller", "msg", "err", "pod"]);
  assert.equal(rec.err, "outer: inner");
  assert.equal(rec.v, undefined);
});

Deno.test("createLogger() writes Error field values as their message in JSON", () => {
  const { log, lines } = capture({ format: "json" });
  log.info("Probe failed", { reason: new Error("timeout") });
  assert.equal(JSON.parse(lines[0]!).reason, "timeout");
});

Deno.test("silentLogger drops everything", () => {
  // Nothing to capture: the assertion is that no call throws or writes to stderr.
  silentLogger.info("x");
  silentLogger.v(9).warn("y");
  silentLogger.error("z", new Error("e"));
  assert.equal(typeof silentLogger.with({ a: 1 }).info, "function");
});
