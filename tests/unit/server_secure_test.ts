/**
 * lib/server's secure server (startSecureServer / startAgentServers with a
 * secure port) over loopback TLS: the self-signed certificate under
 * --cert-dir, the shared routes, the prefix and upgrade mount points, and the
 * start-up errors upstream has.
 */

import assert from "node:assert/strict";
import tls from "node:tls";
import type { Pod } from "../../lib/api/types.ts";
import {
  defaultKubeletConfiguration,
  type KubeletAuthentication,
  type KubeletAuthorization,
} from "../../lib/options/mod.ts";
import {
  type AgentProvider,
  type RouteMounts,
  type RunningServer,
  secureRoutes,
  startAgentServers,
  startSecureServer,
  type StatsSource,
} from "../../lib/server/mod.ts";
import { generateSelfSignedCertKey } from "../../lib/certs/mod.ts";
import { silentLogger } from "../../lib/util/log.ts";
import { freePort } from "../kit/mod.ts";

const dec = new TextDecoder();

function fakeAgent(): AgentProvider {
  const pod: Pod = {
    metadata: { name: "web", namespace: "default", uid: "u1" },
    spec: { containers: [{ name: "c", image: "busybox" }] },
  };
  return {
    podsWithStatus: () => [pod],
    runningPods: () => [],
    healthChecks: [],
    kubeletConfig: defaultKubeletConfiguration(),
    stats: {} as StatsSource,
    renderMetrics: () => "agent_metric 1\n",
    renderProbeMetrics: () => "prober_probe_total 2\n",
  };
}

interface Auth {
  authentication: KubeletAuthentication;
  authorization: KubeletAuthorization;
}

/** The flag-only defaults: anonymous allowed, AlwaysAllow. */
const OPEN: Auth = {
  authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
  authorization: { mode: "AlwaysAllow" },
};

function settings(certDir: string, mounts: RouteMounts = {}, auth: Auth = OPEN) {
  return {
    address: "127.0.0.1",
    port: freePort(),
    tlsCertFile: "",
    tlsPrivateKeyFile: "",
    certDir,
    hostname: "node-1",
    nodeIPs: ["127.0.0.1"],
    nodeName: "node-1",
    ...auth,
    mounts,
  };
}

async function curl(port: number, path: string, extra: string[] = []) {
  const out = await new Deno.Command("curl", {
    args: ["-sSk", "-w", "\n%{http_code}", ...extra, `https://127.0.0.1:${port}${path}`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = dec.decode(out.stdout);
  const nl = text.lastIndexOf("\n");
  return { status: Number(text.slice(nl + 1)), body: text.slice(0, nl) };
}

/** Sends an upgrade request over TLS and returns all the server wrote until it closed. */
function upgrade(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: "127.0.0.1", port, rejectUnauthorized: false }, () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: node-1\r\nConnection: Upgrade\r\n` +
          "Upgrade: SPDY/3.1\r\nContent-Length: 0\r\n\r\n",
      );
    });
    let text = "";
    socket.on("data", (d: Uint8Array) => (text += dec.decode(d)));
    socket.on("close", () => resolve(text));
    socket.on("error", reject);
  });
}

Deno.test("secure server: self-signed kubelet.crt/kubelet.key under --cert-dir, reused on restart; the shared routes", async () => {
  const certDir = `${await Deno.makeTempDir()}/pki`;
  let servers: RunningServer[] = [];
  try {
    servers = await startAgentServers({
      healthz: { hostname: "127.0.0.1", port: 0 },
      readOnly: { hostname: "127.0.0.1", port: 0 },
      secure: settings(certDir),
      provider: fakeAgent(),
      logger: silentLogger,
    });
    assert.equal(servers.length, 1);
    const port = servers[0]!.port;
    const cert = await Deno.readTextFile(`${certDir}/kubelet.crt`);
    const key = await Deno.readTextFile(`${certDir}/kubelet.key`);
    assert.match(cert, /BEGIN CERTIFICATE/);
    assert.equal((await Deno.stat(`${certDir}/kubelet.key`)).mode! & 0o777, 0o600);

    const pods = await curl(port, "/pods");
    assert.equal(pods.status, 200);
    assert.equal(JSON.parse(pods.body).items[0].metadata.uid, "u1");
    assert.deepEqual(await curl(port, "/healthz"), { status: 200, body: "ok" });
    const configz = await curl(port, "/configz");
    assert.equal(JSON.parse(configz.body).kubeletconfig.port, 10250);
    assert.equal((await curl(port, "/metrics/probes")).body, "prober_probe_total 2\n");
    assert.equal((await curl(port, "/nope")).status, 404);

    await Promise.all(servers.map((s) => s.shutdown()));
    servers = await startAgentServers({
      healthz: { hostname: "127.0.0.1", port: 0 },
      readOnly: { hostname: "127.0.0.1", port: 0 },
      secure: settings(certDir),
      provider: fakeAgent(),
      logger: silentLogger,
    });
    assert.equal(await Deno.readTextFile(`${certDir}/kubelet.crt`), cert);
    assert.equal(await Deno.readTextFile(`${certDir}/kubelet.key`), key);
    assert.equal((await curl(servers[0]!.port, "/healthz")).status, 200);
  } finally {
    await Promise.all(servers.map((s) => s.shutdown()));
    await Deno.remove(certDir, { recursive: true }).catch(() => {});
  }
});

Deno.test("secure server: prefix and upgrade mount points; unmounted ones are 404, a plain request to an upgrade route goes to its plain handler", async () => {
  const certDir = await Deno.makeTempDir();
  const mounts: RouteMounts = {
    prefixes: {
      "/containerLogs/": (req, url) =>
        new Response(`logs of ${url.pathname} follow=${url.searchParams.get("follow")}`, {
          headers: { "x-method": req.method },
        }),
      "/exec/": (_req, url) => new Response(`plain ${url.pathname}`, { status: 500 }),
    },
    upgrades: {
      "/exec/": (req, socket) => {
        socket.end(
          "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n" +
            `exec ${req.url}`,
        );
      },
    },
  };
  const server = await startSecureServer({
    ...settings(certDir),
    routes: secureRoutes(fakeAgent(), mounts),
    logger: silentLogger,
  });
  try {
    const logs = await curl(server.port, "/containerLogs/ns/pod/c?follow=true");
    assert.deepEqual(logs, { status: 200, body: "logs of /containerLogs/ns/pod/c follow=true" });
    assert.equal((await curl(server.port, "/logs/syslog")).status, 404);
    assert.equal((await curl(server.port, "/run/ns/pod/c", ["-X", "POST"])).status, 404);
    const plainExec = await curl(server.port, "/exec/ns/pod/c?command=ls");
    assert.deepEqual(plainExec, { status: 500, body: "plain /exec/ns/pod/c" });
    // An upgrade route with no plain handler: nothing serves a plain request there.
    assert.equal((await curl(server.port, "/portForward/ns/pod")).status, 404);

    const exec = await upgrade(server.port, "/exec/ns/pod/c?command=ls");
    assert.match(exec, /^HTTP\/1\.1 101 /);
    assert.match(exec, /exec \/exec\/ns\/pod\/c\?command=ls$/);
    const attach = await upgrade(server.port, "/attach/ns/pod/c");
    assert.match(attach, /^HTTP\/1\.1 404 Not Found\r\n/);
    assert.match(attach, /\r\n\r\n404 page not found\n$/);
  } finally {
    await server.shutdown();
    await Deno.remove(certDir, { recursive: true });
  }
});

Deno.test("secure server: anonymous off and no credentials is 401 on every route, upgrades too", async () => {
  const certDir = await Deno.makeTempDir();
  const ca = await generateSelfSignedCertKey({ host: "some-ca" });
  await Deno.writeTextFile(`${certDir}/ca.crt`, ca.cert);
  const server = await startSecureServer({
    ...settings(certDir, {}, {
      authentication: {
        x509: { clientCAFile: `${certDir}/ca.crt` },
        anonymous: { enabled: false },
        webhook: { enabled: false },
      },
      authorization: { mode: "AlwaysAllow" },
    }),
    routes: secureRoutes(fakeAgent(), {}),
    logger: silentLogger,
  });
  try {
    for (const path of ["/pods", "/healthz", "/stats/summary", "/containerLogs/a/b/c"]) {
      assert.deepEqual(await curl(server.port, path), { status: 401, body: "Unauthorized" }, path);
    }
    assert.match(await upgrade(server.port, "/exec/a/b/c"), /^HTTP\/1\.1 401 /);
  } finally {
    await server.shutdown();
    await Deno.remove(certDir, { recursive: true });
  }
});

Deno.test("secure server: webhook modes without an apiserver fail start-up as upstream (the sanitizers see no leaked listener or watcher)", async () => {
  const certDir = await Deno.makeTempDir();
  try {
    await assert.rejects(
      startAgentServers({
        healthz: { hostname: "127.0.0.1", port: 0 },
        readOnly: { hostname: "127.0.0.1", port: 0 },
        secure: settings(certDir, {}, {
          authentication: { anonymous: { enabled: false }, webhook: { enabled: true } },
          authorization: { mode: "Webhook" },
        }),
        provider: fakeAgent(),
        logger: silentLogger,
      }),
      /no client provided, cannot use webhook authentication/,
    );
    await assert.rejects(
      startSecureServer({
        ...settings(certDir, {}, {
          authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
          authorization: { mode: "Webhook" },
        }),
        routes: secureRoutes(fakeAgent()),
        logger: silentLogger,
      }),
      /no client provided, cannot use webhook authorization/,
    );
    await assert.rejects(
      startSecureServer({
        ...settings(certDir),
        tlsCipherSuites: ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"],
        routes: secureRoutes(fakeAgent()),
        logger: silentLogger,
      }),
      /tlsCipherSuites: cannot be honoured/,
    );
  } finally {
    await Deno.remove(certDir, { recursive: true });
  }
});
