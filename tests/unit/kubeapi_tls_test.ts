// Deno.serve cannot ask for client certificates, so the TLS server here is
// node:https with requestCert, which Deno implements; fixtures come from
// tests/unit/fixtures/kubeapi/gen.sh.
import assert from "node:assert/strict";
import https from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { createKubeClient, loadKubeconfig } from "../../lib/kubeapi/mod.ts";

const FIXTURES = new URL("./fixtures/kubeapi/", import.meta.url).pathname;
const pem = (name: string) => Deno.readTextFileSync(FIXTURES + name);

/** An HTTPS server that requires a client certificate signed by the test CA. */
async function mtlsServer() {
  const server = https.createServer({
    key: pem("server.key"),
    cert: pem("server.crt"),
    ca: pem("ca.crt"),
    requestCert: true,
    rejectUnauthorized: true,
  }, (req, res) => {
    const peer = (req.socket as TLSSocket).getPeerCertificate();
    res.setHeader("Content-Type", "application/json");
    res.end(JSON.stringify({ path: req.url, user: peer.subject?.CN, group: peer.subject?.O }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

async function writeKubeconfig(dir: string, server: string, cluster: string, user: string) {
  const path = `${dir}/kubelet.conf`;
  await Deno.writeTextFile(
    path,
    `apiVersion: v1
kind: Config
current-context: node
clusters:
- name: c
  cluster:
    server: ${server}
${cluster}
contexts:
- name: node
  context: {cluster: c, user: node}
users:
- name: node
  user:
${user}
`,
  );
  return path;
}

Deno.test("createKubeClient() authenticates with the kubeconfig's client certificate over TLS", async () => {
  const srv = await mtlsServer();
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/pki`);
    for (const f of ["ca.crt", "client.crt", "client.key"]) {
      await Deno.copyFile(FIXTURES + f, `${dir}/pki/${f}`);
    }
    const path = await writeKubeconfig(
      dir,
      srv.url,
      "    certificate-authority: pki/ca.crt",
      "    client-certificate: pki/client.crt\n    client-key: pki/client.key",
    );
    const kubeconfig = await loadKubeconfig(path);
    const c = createKubeClient({ kubeconfig });
    try {
      const who = await c.get<Record<string, string>>("/api/v1/nodes/test-node");
      assert.deepEqual(who, {
        path: "/api/v1/nodes/test-node",
        user: "system:node:test-node",
        group: "system:nodes",
      });
    } finally {
      c.close();
    }
  } finally {
    await srv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("createKubeClient() fails naming method and path when the server rejects the TLS client", async () => {
  const srv = await mtlsServer();
  const dir = await Deno.makeTempDir();
  try {
    // The CA is trusted, but no client certificate is offered.
    const path = await writeKubeconfig(
      dir,
      srv.url,
      `    certificate-authority-data: ${btoa(pem("ca.crt"))}`,
      "    token: abc",
    );
    const c = createKubeClient({ kubeconfig: await loadKubeconfig(path) });
    try {
      const err = await c.get("/api/v1/nodes/test-node").catch((e: Error) => e) as Error;
      assert.match(err.message, /^GET \/api\/v1\/nodes\/test-node: /);
      assert.ok(err.cause !== undefined);
    } finally {
      c.close();
    }
  } finally {
    await srv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("createKubeClient() verifies the server certificate against the kubeconfig CA", async () => {
  const srv = await mtlsServer();
  const dir = await Deno.makeTempDir();
  try {
    const data = (f: string) => btoa(pem(f));
    // A valid client identity, but no CA: the test CA is not a system root.
    const path = await writeKubeconfig(
      dir,
      srv.url,
      "    insecure-skip-tls-verify: false",
      `    client-certificate-data: ${data("client.crt")}\n    client-key-data: ${
        data("client.key")
      }`,
    );
    const c = createKubeClient({ kubeconfig: await loadKubeconfig(path) });
    try {
      const err = await c.get("/api/v1/nodes/x").catch((e: Error) => e) as Error;
      assert.match(err.message, /^GET \/api\/v1\/nodes\/x: /);
    } finally {
      c.close();
    }
  } finally {
    await srv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("createKubeClient() skips server verification with insecure-skip-tls-verify", async () => {
  const srv = await mtlsServer();
  const dir = await Deno.makeTempDir();
  try {
    const data = (f: string) => btoa(pem(f));
    const path = await writeKubeconfig(
      dir,
      srv.url,
      "    insecure-skip-tls-verify: true",
      `    client-certificate-data: ${data("client.crt")}\n    client-key-data: ${
        data("client.key")
      }`,
    );
    const kubeconfig = await loadKubeconfig(path);
    assert.equal(kubeconfig.caCert, undefined);
    const c = createKubeClient({ kubeconfig });
    try {
      const who = await c.get<Record<string, string>>("/api/v1/nodes/x");
      assert.equal(who.user, "system:node:test-node");
    } finally {
      c.close();
    }
  } finally {
    await srv.close();
    await Deno.remove(dir, { recursive: true });
  }
});
