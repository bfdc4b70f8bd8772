import assert from "node:assert/strict";
import {
  isUpgradeRequest,
  isWebSocketRequest,
  parseCommand,
  parsePortForwardPorts,
  parseRunCommand,
  parseStreamOptions,
  parseStreamPath,
} from "../../lib/streaming/mod.ts";

Deno.test("parseStreamPath() resolves upstream's exec/attach/run routes with and without a UID", () => {
  assert.deepEqual(parseStreamPath("/exec/default/web/app"), {
    kind: "exec",
    namespace: "default",
    pod: "web",
    container: "app",
  });
  assert.deepEqual(parseStreamPath("/attach/kube-system/dns/1234-abcd/coredns"), {
    kind: "attach",
    namespace: "kube-system",
    pod: "dns",
    uid: "1234-abcd",
    container: "coredns",
  });
  assert.deepEqual(parseStreamPath("/run/ns/p/c"), {
    kind: "run",
    namespace: "ns",
    pod: "p",
    container: "c",
  });
});

Deno.test("parseStreamPath() resolves /portForward with and without a UID", () => {
  assert.deepEqual(parseStreamPath("/portForward/ns/p"), {
    kind: "portForward",
    namespace: "ns",
    pod: "p",
    container: "",
  });
  assert.deepEqual(parseStreamPath("/portForward/ns/p/u1"), {
    kind: "portForward",
    namespace: "ns",
    pod: "p",
    uid: "u1",
    container: "",
  });
});

Deno.test("parseStreamPath() decodes percent-encoded segments", () => {
  assert.equal(parseStreamPath("/exec/ns/p/my%2Dc")?.container, "my-c");
});

Deno.test("parseStreamPath() rejects other paths, wrong segment counts and empty segments", () => {
  for (
    const path of [
      "/exec/ns/p",
      "/exec/ns/p/u/c/extra",
      "/exec//p/c",
      "/exec/ns/p/c/",
      "/portForward/ns",
      "/portForward/ns/p/u/x",
      "/portforward/ns/p",
      "/containerLogs/ns/p/c",
      "/exec/ns/p/%E0%A4%A",
      "exec/ns/p/c",
    ]
  ) {
    assert.equal(parseStreamPath(path), undefined, path);
  }
});

Deno.test("parseStreamOptions() reads input/output/error/tty as upstream: on only when exactly 1", () => {
  const q = new URLSearchParams("input=1&output=1&error=1");
  assert.deepEqual(parseStreamOptions(q), { stdin: true, stdout: true, stderr: true, tty: false });
  assert.deepEqual(parseStreamOptions(new URLSearchParams("output=1&error=true")), {
    stdin: false,
    stdout: true,
    stderr: false,
    tty: false,
  });
});

Deno.test("parseStreamOptions() drops stderr under a tty", () => {
  assert.deepEqual(parseStreamOptions(new URLSearchParams("input=1&output=1&error=1&tty=1")), {
    stdin: true,
    stdout: true,
    stderr: false,
    tty: true,
  });
});

Deno.test("parseStreamOptions() refuses a request with no stream, with upstream's message", () => {
  for (const q of ["", "tty=1", "error=1&tty=1", "stdin=true&stdout=true", "input=0"]) {
    assert.throws(
      () => parseStreamOptions(new URLSearchParams(q)),
      { message: "you must specify at least 1 of stdin, stdout, stderr" },
      q,
    );
  }
});

Deno.test("parseCommand() keeps every command parameter in order; parseRunCommand() splits cmd on spaces", () => {
  assert.deepEqual(
    parseCommand(new URLSearchParams("command=sh&command=-c&command=echo+hi%3B+exit+3")),
    ["sh", "-c", "echo hi; exit 3"],
  );
  assert.deepEqual(parseCommand(new URLSearchParams("")), []);
  assert.deepEqual(parseRunCommand(new URLSearchParams("cmd=ls+-l+/tmp")), ["ls", "-l", "/tmp"]);
  assert.deepEqual(parseRunCommand(new URLSearchParams("")), [""]);
});

Deno.test("parsePortForwardPorts() reads repeated and comma-separated ports of a WebSocket request", () => {
  assert.deepEqual(
    parsePortForwardPorts(new URLSearchParams("port=80&port=443,8080"), true),
    [80, 443, 8080],
  );
});

Deno.test("parsePortForwardPorts() ignores the query of an SPDY request: ports come per stream", () => {
  assert.deepEqual(parsePortForwardPorts(new URLSearchParams("port=junk"), false), []);
});

Deno.test("parsePortForwardPorts() refuses missing, empty, bad and zero ports with upstream's messages", () => {
  const cases: [string, string][] = [
    ["", 'query parameter "port" is required'],
    ["port=", 'query parameter "port" cannot be empty'],
    ["port=http", 'unable to parse "http" as a port'],
    ["port=80,70000", 'unable to parse "80,70000" as a port'],
    ["port=-1", 'unable to parse "-1" as a port'],
    ["port=0", 'port "0" must be > 0'],
  ];
  for (const [q, message] of cases) {
    assert.throws(() => parsePortForwardPorts(new URLSearchParams(q), true), { message }, q);
  }
});

Deno.test("isUpgradeRequest() and isWebSocketRequest() read Connection and Upgrade as upstream", () => {
  const lookup = (h: Record<string, string>) => (name: string) => h[name];
  assert.equal(isUpgradeRequest(lookup({ connection: "keep-alive, Upgrade" })), true);
  assert.equal(isUpgradeRequest(lookup({ connection: "keep-alive" })), false);
  assert.equal(isUpgradeRequest(lookup({})), false);
  assert.equal(
    isWebSocketRequest(lookup({ connection: "Upgrade", upgrade: "WebSocket" })),
    true,
  );
  assert.equal(
    isWebSocketRequest(lookup({ connection: "keep-alive, upgrade", upgrade: "websocket" })),
    true,
  );
  assert.equal(isWebSocketRequest(lookup({ connection: "Upgrade", upgrade: "SPDY/3.1" })), false);
  assert.equal(isWebSocketRequest(lookup({ connection: "upgraded", upgrade: "websocket" })), false);
});
