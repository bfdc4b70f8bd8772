/**
 * Joining like `kubeadm join`: denolet starts with a bootstrap kubeconfig (a
 * bootstrap token) and no kubeconfig, requests its client certificate through a
 * CertificateSigningRequest that kube-controller-manager auto-approves and signs
 * with the cluster CA, writes it under --cert-dir and the kubeconfig pointing at
 * it, registers and runs pods; with rotateCertificates it renews the certificate
 * before it expires, without a restart.
 */

import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { connect as tlsConnect } from "node:tls";
import { requireRoot } from "../harness/mod.ts";
import type { Lease, Node } from "../../lib/api/cluster_types.ts";
import type { Pod } from "../../lib/api/types.ts";
import { waitFor } from "../kit/mod.ts";
import { startAgent } from "../integration/_agent.ts";
import { bootstrapKubeconfig } from "./_bootstrap.ts";
import { busyboxPod, NODE, startNode } from "./_node.ts";

interface Csr {
  metadata: { name: string };
  spec: { signerName: string; usages: string[]; username: string };
  status?: { conditions?: { type: string }[] };
}

Deno.test({
  name: "TLS bootstrap: a node joins from a bootstrap kubeconfig alone and runs a pod",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    requireRoot();
    const node = await startNode({ name: "bootstrap", bootstrap: true });
    try {
      const { cluster: c, runtime: rt, scratch, agent } = node;
      // The client CSR: upstream's name, signer, usages, requested by the token's user, approved.
      const csrs = await c.kubectlJson<{ items: Csr[] }>(["get", "csr"]);
      const client = csrs.items.find((x) =>
        x.spec.signerName === "kubernetes.io/kube-apiserver-client-kubelet"
      );
      assert.ok(client, JSON.stringify(csrs.items));
      assert.match(client.metadata.name, /^node-csr-[A-Za-z0-9_-]{43}$/);
      assert.deepEqual(client.spec.usages, ["digital signature", "client auth"]);
      assert.match(client.spec.username, /^system:bootstrap:[a-z0-9]{6}$/);
      assert.ok(client.status?.conditions?.some((x) => x.type === "Approved"));

      // The file store: a dated pair and the current symlink; the kubeconfig names it.
      const pki = `${agent.rootDir}/pki`;
      const current = `${pki}/kubelet-client-current.pem`;
      assert.ok(Deno.lstatSync(current).isSymlink);
      assert.match(Deno.readLinkSync(current), /kubelet-client-\d{4}(-\d\d){5}\.pem$/);
      assert.equal(Deno.statSync(current).mode! & 0o777, 0o600);
      const pem = Deno.readTextFileSync(current);
      const leaf = new X509Certificate(pem);
      assert.match(leaf.subject, /O=system:nodes/);
      assert.match(leaf.subject, new RegExp(`CN=system:node:${NODE}`));
      assert.ok(leaf.verify(new X509Certificate(Deno.readTextFileSync(c.caFile)).publicKey));
      assert.match(pem, /-----BEGIN EC PRIVATE KEY-----/);
      const kubeconfig = Deno.readTextFileSync(`${scratch}/kubelet.kubeconfig`);
      assert.match(kubeconfig, new RegExp(`client-certificate: ${current}`));
      assert.match(kubeconfig, new RegExp(`client-key: ${current}`));
      assert.ok(!kubeconfig.includes("token"), kubeconfig);

      // The Node is Ready (startNode waited); it runs a pod.
      const ns = await node.namespace();
      await node.runPod(busyboxPod(rt, "joined", ns));

      // A restart finds the kubeconfig valid and requests nothing new.
      await node.restartAgent();
      await waitFor("node Ready after the restart", async () => {
        const n = await c.kubectlJson<Node>(["get", "node", NODE]).catch(() => undefined);
        return n?.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True");
      }, { timeoutMs: 60_000, log: node.log });
      const after = await c.kubectlJson<{ items: Csr[] }>(["get", "csr"]);
      assert.equal(after.items.length, csrs.items.length, node.log());
    } finally {
      await node.stop();
    }
  },
});

/** The credential id the apiserver gives an x509 user (its audit shows it): X509SHA256=<hex>. */
function credentialId(pem: string): string {
  return "X509SHA256=" + new X509Certificate(pem).fingerprint256.replaceAll(":", "").toLowerCase();
}

/** The audit log's Lease updates, each with the credential id it came with. */
function leaseUpdates(path: string): string[] {
  return Deno.readTextFileSync(path).split("\n").filter((l) => l.includes('"verb":"update"'));
}

Deno.test({
  name:
    "client certificate rotation: renewed twice and used, Node Ready, Lease renewed, no pod restarts",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    requireRoot();
    // The apiserver audits the node's Lease writes with the client certificate's id.
    const audit = await Deno.makeTempDir({ prefix: "denolet-e2e-audit-" });
    Deno.writeTextFileSync(
      `${audit}/policy.yaml`,
      JSON.stringify({
        apiVersion: "audit.k8s.io/v1",
        kind: "Policy",
        omitStages: ["RequestReceived"],
        rules: [
          {
            level: "Metadata",
            users: [`system:node:${NODE}`],
            resources: [{ group: "coordination.k8s.io", resources: ["leases"] }],
          },
          { level: "None" },
        ],
      }),
    );
    // The signer backdates by 5 min: a 2 min certificate lives 7 min and is renewed
    // 0–80 s after it was issued (70–90% of its life).
    const node = await startNode({
      name: "rotation",
      bootstrap: true,
      cluster: {
        tlsBootstrap: { signingDuration: "2m" },
        apiserverArgs: [
          `--audit-policy-file=${audit}/policy.yaml`,
          `--audit-log-path=${audit}/audit.log`,
        ],
      },
      config: { rotateCertificates: true },
    });
    try {
      const { cluster: c, runtime: rt, agent, log } = node;
      const ns = await node.namespace();
      await node.runPod(busyboxPod(rt, "steady", ns));
      const current = `${agent.rootDir}/pki/kubelet-client-current.pem`;
      const firstPem = Deno.readTextFileSync(current);
      const first = new X509Certificate(firstPem);
      const seen = new Set([first.serialNumber]);
      await waitFor("two renewals of the client certificate", () => {
        seen.add(new X509Certificate(Deno.readTextFileSync(current)).serialNumber);
        return seen.size >= 3 ? true : undefined;
      }, { timeoutMs: 240_000, intervalMs: 1000, log });
      assert.match(log(), /Certificate rotation: new certificate in use/);
      // The renewals were the node's own CSRs, approved by csrapproving (selfnodeclient).
      const csrs = await c.kubectlJson<{ items: Csr[] }>(["get", "csr"]);
      const renewals = csrs.items.filter((x) => x.spec.username === `system:node:${NODE}`);
      assert.ok(renewals.length >= 2, JSON.stringify(csrs.items.map((x) => x.spec)));
      assert.ok(renewals.every((x) => x.status?.conditions?.some((y) => y.type === "Approved")));

      // Past the first certificate's end the node keeps renewing its Lease, with the
      // current certificate, as the apiserver's audit shows.
      const firstEnd = Date.parse(first.validTo);
      await waitFor(
        "the first certificate's end",
        () => Date.now() > firstEnd + 1000 || undefined,
        {
          timeoutMs: 200_000,
          intervalMs: 1000,
        },
      );
      const lease = await c.kubectlJson<Lease>(["get", "lease", "-n", "kube-node-lease", NODE]);
      await waitFor("a Lease renewal after the first certificate expired", async () => {
        const now = await c.kubectlJson<Lease>(["get", "lease", "-n", "kube-node-lease", NODE]);
        return now.spec?.renewTime !== lease.spec?.renewTime ? true : undefined;
      }, { timeoutMs: 30_000, log });
      const inUse = credentialId(Deno.readTextFileSync(current));
      await waitFor("a Lease update with the current certificate in the apiserver's audit", () => {
        return leaseUpdates(`${audit}/audit.log`).some((l) => l.includes(inUse)) || undefined;
      }, { timeoutMs: 30_000, log });
      assert.ok(leaseUpdates(`${audit}/audit.log`).some((l) => l.includes(credentialId(firstPem))));

      const n = await c.kubectlJson<Node>(["get", "node", NODE]);
      assert.ok(
        n.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True"),
        log(),
      );
      const pod = await c.kubectlJson<Pod>(["get", "pod", "-n", ns, "steady"]);
      assert.equal(pod.status?.phase, "Running");
      assert.equal(pod.status?.containerStatuses?.[0]?.restartCount, 0);
    } finally {
      await node.stop();
      await Deno.remove(audit, { recursive: true }).catch(() => {});
    }
  },
});

/** The certificate the secure port presents, checked against `ca`; undefined when none is served. */
function servedCertificate(port: number, ca: string): Promise<X509Certificate | undefined> {
  return new Promise((resolve) => {
    const socket = tlsConnect({
      host: "127.0.0.1",
      port,
      ca,
      // The name is checked below against the node's IP; 127.0.0.1 is only how we reach it.
      checkServerIdentity: () => undefined,
    }, () => {
      const der = socket.getPeerCertificate().raw;
      socket.destroy();
      resolve(der ? new X509Certificate(der) : undefined);
    });
    socket.on("error", () => resolve(undefined));
  });
}

Deno.test({
  name:
    "serverTLSBootstrap: nothing on the secure port until the kubelet-serving CSR is approved; renewed",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    requireRoot();
    const node = await startNode({
      name: "serving",
      bootstrap: true,
      // Short-lived certificates, so the serving one is renewed during the test (the
      // client one too, with rotateCertificates, or the node would lose the apiserver).
      cluster: { tlsBootstrap: { signingDuration: "2m" } },
      config: { serverTLSBootstrap: true, rotateCertificates: true },
    });
    try {
      const { cluster: c, port, nodeIP, log } = node;
      const ca = Deno.readTextFileSync(c.caFile);
      // The node asks for a serving certificate naming its addresses.
      const csr = await waitFor("the kubelet-serving CSR", async () => {
        const list = await c.kubectlJson<{ items: Csr[] }>(["get", "csr"]);
        return list.items.find((x) => x.spec.signerName === "kubernetes.io/kubelet-serving");
      }, { timeoutMs: 60_000, log });
      assert.equal(csr.spec.username, `system:node:${NODE}`);
      assert.deepEqual(csr.spec.usages, ["digital signature", "server auth"]);
      // Until it is approved the secure port serves nothing (no self-signed certificate).
      assert.equal(await servedCertificate(port, ca), undefined);
      assert.ok(
        !Deno.readDirSync(`${node.agent.rootDir}/pki`).some((e) => e.name === "kubelet.crt"),
      );

      const approved = await c.kubectl(["certificate", "approve", csr.metadata.name]);
      assert.equal(approved.code, 0, approved.stderr);
      const served = await waitFor(
        "the issued serving certificate",
        () => servedCertificate(port, ca),
        {
          timeoutMs: 60_000,
          log,
        },
      );
      // Verified against the cluster CA by the handshake; names the node and its IP.
      assert.match(served.subject, new RegExp(`CN=system:node:${NODE}`));
      assert.match(
        served.subjectAltName ?? "",
        new RegExp(`IP Address:${nodeIP.replaceAll(".", "\\.")}`),
      );
      assert.match(served.subjectAltName ?? "", new RegExp(`DNS:${NODE}`));
      assert.ok(served.checkIssued(new X509Certificate(ca)));
      const current = `${node.agent.rootDir}/pki/kubelet-server-current.pem`;
      assert.equal(
        new X509Certificate(Deno.readTextFileSync(current)).fingerprint256,
        served.fingerprint256,
      );
      // The apiserver reaches the secure port (kubectl logs, exec go through it).
      const raw = await c.kubectl(["get", "--raw", `/api/v1/nodes/${NODE}/proxy/healthz`]);
      assert.equal(raw.stdout.trim(), "ok", raw.stderr);

      // Renewal: a new kubelet-serving CSR before the certificate's end; once approved, the
      // port presents the new certificate (new connections), without a restart.
      const renewal = await waitFor("the serving certificate's renewal CSR", async () => {
        const list = await c.kubectlJson<{ items: Csr[] }>(["get", "csr"]);
        return list.items.find((x) =>
          x.spec.signerName === "kubernetes.io/kubelet-serving" &&
          x.metadata.name !== csr.metadata.name
        );
      }, { timeoutMs: 150_000, intervalMs: 1000, log });
      const approvedAgain = await c.kubectl(["certificate", "approve", renewal.metadata.name]);
      assert.equal(approvedAgain.code, 0, approvedAgain.stderr);
      const renewed = await waitFor("the renewed serving certificate", async () => {
        const now = await servedCertificate(port, ca);
        return now && now.fingerprint256 !== served.fingerprint256 ? now : undefined;
      }, { timeoutMs: 60_000, log });
      assert.ok(Date.parse(renewed.validTo) > Date.parse(served.validTo));
      assert.match(renewed.subjectAltName ?? "", new RegExp(`DNS:${NODE}`));
    } finally {
      await node.stop();
    }
  },
});

Deno.test({
  name:
    "TLS bootstrap bad input: a rejected token, a cert dir it cannot write, a denied CSR then retried",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    requireRoot();
    const node = await startNode({ name: "badboot", bootstrap: true });
    try {
      const { cluster: c, runtime: rt, scratch } = node;
      /** Starts another agent as node `name`; rejects (with its log) when it does not come up. */
      const agent = (name: string, bootstrap: string, extra: string[] = []) =>
        startAgent({
          runtime: rt,
          extraArgs: [
            `--hostname-override=${name}`,
            `--bootstrap-kubeconfig=${bootstrap}`,
            `--kubeconfig=${scratch}/${name}.kubeconfig`,
            "--v=2",
            ...extra,
          ],
        });

      await t.step(
        "a token the apiserver rejects: exits naming the 401 (no rotation)",
        async () => {
          const { path } = await bootstrapKubeconfig(c, { unknownToken: true });
          const err = await agent("badtoken", path).then(
            (a) => a.stop().then(() => assert.fail("the agent came up")),
            (e: Error) => e,
          );
          assert.match(err.message, /exited with code 1/);
          assert.match(err.message, /Failed to get the kubelet's client certificate/);
          assert.match(err.message, /cannot create certificate signing request: .*Unauthorized/);
          assert.match(err.message, /bootstrapKubeconfig=/);
        },
      );

      await t.step("a cert dir it cannot create: exits naming the directory", async () => {
        const { path } = await bootstrapKubeconfig(c);
        const blocker = `${scratch}/not-a-dir`;
        Deno.writeTextFileSync(blocker, "");
        const err = await agent("nocertdir", path, [`--cert-dir=${blocker}/pki`]).then(
          (a) => a.stop().then(() => assert.fail("the agent came up")),
          (e: Error) => e,
        );
        assert.match(err.message, /exited with code 1/);
        assert.match(err.message, new RegExp(`${blocker}/pki`));
      });

      await t.step(
        "a denied CSR with rotateCertificates: logged, requested again, joins once approved",
        async () => {
          const { path, id } = await bootstrapKubeconfig(c, { manualApproval: true });
          const starting = agent("manual", path, ["--rotate-certificates=true"]);
          const pending = async (skip: Set<string>) =>
            await waitFor("a pending CSR of the manual token", async () => {
              const list = await c.kubectlJson<{ items: Csr[] }>(["get", "csr"]);
              return list.items.find((x) =>
                x.spec.username === `system:bootstrap:${id}` && !skip.has(x.metadata.name)
              );
            }, { timeoutMs: 30_000 });
          const first = await pending(new Set());
          const denied = await c.kubectl(["certificate", "deny", first.metadata.name]);
          assert.equal(denied.code, 0, denied.stderr);
          const second = await pending(new Set([first.metadata.name]));
          const approved = await c.kubectl(["certificate", "approve", second.metadata.name]);
          assert.equal(approved.code, 0, approved.stderr);
          const a = await starting;
          try {
            assert.match(a.log(), /Certificate request was not signed.*is denied/);
            await waitFor("node manual Ready", async () => {
              const n = await c.kubectlJson<Node>(["get", "node", "manual"]).catch(() => undefined);
              return n?.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True");
            }, { timeoutMs: 60_000, log: () => a.log() });
          } finally {
            await a.stop();
            await a.removeDirs();
          }
        },
      );
    } finally {
      await node.stop();
    }
  },
});

/** Runs a command; returns its stdout, throwing with its stderr when it fails. */
async function run(cmd: string, args: string[], stdin?: string): Promise<string> {
  const child = new Deno.Command(cmd, {
    args,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await child.output();
  const dec = new TextDecoder();
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")}: ${dec.decode(out.stderr)}`);
  return dec.decode(out.stdout);
}

Deno.test({
  name: "a kubeconfig's client certificate file rotated by another tool is picked up",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    requireRoot();
    // Without rotateCertificates the agent never renews its 2-minute certificate itself.
    const node = await startNode({
      name: "outside",
      bootstrap: true,
      cluster: { tlsBootstrap: { signingDuration: "2m" } },
    });
    try {
      const { cluster: c, agent, log, scratch } = node;
      const current = `${agent.rootDir}/pki/kubelet-client-current.pem`;
      const first = new X509Certificate(Deno.readTextFileSync(current));

      // The outside tool: a new key and CSR for the node, approved by the admin, and the
      // pair swapped in under the path the kubeconfig names. Every certificate lives 2 min
      // from its issue: the new one is made a minute after the first, so it outlives it.
      const firstIssued = Date.parse(first.validTo) - 2 * 60_000;
      await waitFor("a minute into the first certificate", () => {
        return Date.now() > firstIssued + 60_000 || undefined;
      }, { timeoutMs: 90_000, intervalMs: 1000 });
      const key = `${scratch}/outside.key`;
      await run("openssl", ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key]);
      const request = await run("openssl", [
        ...["req", "-new", "-key", key, "-subj", `/O=system:nodes/CN=system:node:${NODE}`],
      ]);
      const created = await c.kubectl(["apply", "-f", "-"], {
        stdin: JSON.stringify({
          apiVersion: "certificates.k8s.io/v1",
          kind: "CertificateSigningRequest",
          metadata: { name: "outside-tool" },
          spec: {
            request: btoa(request),
            signerName: "kubernetes.io/kube-apiserver-client-kubelet",
            usages: ["digital signature", "client auth"],
          },
        }),
      });
      assert.equal(created.code, 0, created.stderr);
      const approved = await c.kubectl(["certificate", "approve", "outside-tool"]);
      assert.equal(approved.code, 0, approved.stderr);
      const issued = await waitFor("the outside tool's certificate", async () => {
        const csr = await c.kubectlJson<{ status?: { certificate?: string } }>([
          ...["get", "csr", "outside-tool"],
        ]);
        return csr.status?.certificate ? atob(csr.status.certificate) : undefined;
      }, { timeoutMs: 30_000 });
      const pair = `${agent.rootDir}/pki/outside-tool.pem`;
      Deno.writeTextFileSync(pair, issued + Deno.readTextFileSync(key), { mode: 0o600 });
      Deno.symlinkSync(pair, `${current}.new`);
      Deno.renameSync(`${current}.new`, current);

      // Once the first certificate has expired, the apiserver refuses it (401): the agent
      // reads the files again and goes on with the new pair.
      await waitFor("the first certificate's end", () => {
        return Date.now() > Date.parse(first.validTo) + 1000 || undefined;
      }, { timeoutMs: 200_000, intervalMs: 1000 });
      const lease = await c.kubectlJson<Lease>(["get", "lease", "-n", "kube-node-lease", NODE]);
      await waitFor("a Lease renewal with the outside tool's certificate", async () => {
        const now = await c.kubectlJson<Lease>(["get", "lease", "-n", "kube-node-lease", NODE]);
        return now.spec?.renewTime !== lease.spec?.renewTime ? true : undefined;
      }, { timeoutMs: 30_000, log });
      const n = await c.kubectlJson<Node>(["get", "node", NODE]);
      assert.ok(
        n.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True"),
        log(),
      );
    } finally {
      await node.stop();
    }
  },
});
