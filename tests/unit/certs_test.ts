import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import {
  ensureSelfSignedCert,
  generateSelfSignedCertKey,
  ipBytes,
  pemBlocks,
  resolveServingCertFiles,
  SELF_SIGNED_VALIDITY_MS,
  ServingCertificate,
} from "../../lib/certs/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";

const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);

async function openssl(args: string[], stdin?: string): Promise<{ code: number; out: string }> {
  const cmd = new Deno.Command("openssl", {
    args,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  });
  const child = cmd.spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const { code, stdout, stderr } = await child.output();
  const dec = new TextDecoder();
  return { code, out: dec.decode(stdout) + dec.decode(stderr) };
}

const haveOpenssl = await openssl(["version"]).then((r) => r.code === 0, () => false);

Deno.test("ipBytes() encodes IPv4, IPv6 (with ::, v4 tails) and refuses names", () => {
  assert.deepEqual([...ipBytes("10.0.0.7")], [10, 0, 0, 7]);
  assert.deepEqual([...ipBytes("::1")], [...Array(15).fill(0), 1]);
  assert.deepEqual(
    [...ipBytes("fd00:1::2")],
    [0xfd, 0, 0, 1, ...Array(10).fill(0), 0, 2],
  );
  assert.deepEqual([...ipBytes("::ffff:1.2.3.4")], [...Array(10).fill(0), 255, 255, 1, 2, 3, 4]);
  assert.throws(() => ipBytes("node-1"), /not an IP address/);
  assert.throws(() => ipBytes("300.1.1.1"), /not an IP address/);
  assert.throws(() => ipBytes("1::2::3"), /not an IP address/);
});

Deno.test("the self-signed serving pair has upstream's shape: leaf then CA, signed, SANs, a year", async () => {
  const pem = await generateSelfSignedCertKey({
    host: "node-1",
    ips: ["10.0.0.7", "fd00::7"],
    now: NOW,
  });
  const [leafDer, caDer, extra] = pemBlocks(pem.cert);
  assert.ok(leafDer && caDer && !extra);
  const leaf = new X509Certificate(leafDer);
  const ca = new X509Certificate(caDer);
  const unix = Math.floor(NOW / 1000);
  assert.equal(leaf.subject, `CN=node-1@${unix}`);
  assert.equal(leaf.issuer, `CN=node-1-ca@${unix}`);
  assert.equal(ca.subject, `CN=node-1-ca@${unix}`);
  assert.equal(ca.ca, true);
  assert.equal(leaf.ca, false);
  assert.equal(parseInt(leaf.serialNumber, 16), 2);
  assert.equal(parseInt(ca.serialNumber, 16), 1);
  assert.equal(leaf.subjectAltName, "DNS:node-1, IP Address:10.0.0.7, IP Address:fd00::7");
  // Deno reports key usage names here (Node gives extended usages); serverAuth is checked with openssl below.
  assert.deepEqual(leaf.keyUsage, ["DigitalSignature", "KeyEncipherment"]);
  assert.equal(new Date(leaf.validFrom).getTime(), NOW - 3_600_000);
  assert.equal(new Date(leaf.validTo).getTime(), NOW - 3_600_000 + SELF_SIGNED_VALIDITY_MS);
  assert.ok(leaf.checkIssued(ca));
  assert.ok(leaf.verify(ca.publicKey));
  assert.ok(ca.verify(ca.publicKey));
  assert.equal(ca.publicKey.asymmetricKeyDetails?.modulusLength, 2048);
  assert.match(pem.key, /^-----BEGIN RSA PRIVATE KEY-----\n/);
  assert.ok(leaf.checkPrivateKey((await import("node:crypto")).createPrivateKey(pem.key)));
});

Deno.test("an IP host becomes an IP SAN, not a DNS one", async () => {
  const pem = await generateSelfSignedCertKey({ host: "192.168.1.5", now: NOW });
  const leaf = new X509Certificate(pemBlocks(pem.cert)[0]!);
  assert.equal(leaf.subjectAltName, "IP Address:192.168.1.5");
});

Deno.test({
  name: "openssl reads and verifies the generated chain",
  ignore: !haveOpenssl,
  async fn() {
    const pem = await generateSelfSignedCertKey({ host: "node-1", ips: ["10.0.0.7"] });
    const dir = await Deno.makeTempDir();
    try {
      const [leafDer, caDer] = pemBlocks(pem.cert);
      const { toPem } = await import("../../lib/certs/mod.ts");
      await Deno.writeTextFile(`${dir}/ca.pem`, toPem("CERTIFICATE", caDer!));
      await Deno.writeTextFile(`${dir}/leaf.pem`, toPem("CERTIFICATE", leafDer!));
      const text = await openssl(["x509", "-noout", "-text", "-in", `${dir}/leaf.pem`]);
      assert.equal(text.code, 0, text.out);
      assert.match(text.out, /Signature Algorithm: sha256WithRSAEncryption/);
      assert.match(text.out, /Public-Key: \(2048 bit\)/);
      assert.match(text.out, /DNS:node-1, IP Address:10\.0\.0\.7/);
      assert.match(text.out, /TLS Web Server Authentication/);
      assert.match(text.out, /Digital Signature, Key Encipherment/);
      assert.match(text.out, /CA:FALSE/);
      const verify = await openssl([
        "verify",
        "-purpose",
        "sslserver",
        "-CAfile",
        `${dir}/ca.pem`,
        `${dir}/leaf.pem`,
      ]);
      assert.equal(verify.code, 0, verify.out);
      assert.match(verify.out, /leaf\.pem: OK/);
      const key = await openssl(["rsa", "-check", "-noout"], pem.key);
      assert.equal(key.code, 0, key.out);
      assert.match(key.out, /RSA key ok/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("ensureSelfSignedCert() writes kubelet.crt/kubelet.key once (key 0600) and reuses them", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const certDir = `${dir}/pki`;
    const first = await ensureSelfSignedCert({ certDir, host: "node-1" });
    assert.deepEqual(first, {
      certFile: `${certDir}/kubelet.crt`,
      keyFile: `${certDir}/kubelet.key`,
      generated: true,
    });
    assert.equal((await Deno.stat(first.keyFile)).mode! & 0o777, 0o600);
    const cert = await Deno.readTextFile(first.certFile);
    const second = await ensureSelfSignedCert({ certDir, host: "node-1" });
    assert.equal(second.generated, false);
    assert.equal(await Deno.readTextFile(second.certFile), cert);
    assert.deepEqual([...Deno.readDirSync(certDir)].map((e) => e.name).sort(), [
      "kubelet.crt",
      "kubelet.key",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ServingCertificate refuses a key of another certificate, naming the files", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const a = await generateSelfSignedCertKey({ host: "a" });
    const b = await generateSelfSignedCertKey({ host: "b" });
    await Deno.writeTextFile(`${dir}/c.crt`, a.cert);
    await Deno.writeTextFile(`${dir}/c.key`, b.key);
    await assert.rejects(
      ServingCertificate.load({ certFile: `${dir}/c.crt`, keyFile: `${dir}/c.key` }),
      new RegExp(`${dir}/c.key is not the key of the certificate in ${dir}/c.crt`),
    );
    await assert.rejects(
      ServingCertificate.load({ certFile: `${dir}/none.crt`, keyFile: `${dir}/c.key` }),
      new RegExp(`cannot read ${dir}/none.crt`),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ServingCertificate reloads on resync, skips a half-rotated pair, announces the new one", async () => {
  const dir = await Deno.makeTempDir();
  const clock = new FakeClock();
  const files = { certFile: `${dir}/s.crt`, keyFile: `${dir}/s.key` };
  try {
    const a = await generateSelfSignedCertKey({ host: "a" });
    const b = await generateSelfSignedCertKey({ host: "b" });
    await Deno.writeTextFile(files.certFile, a.cert);
    await Deno.writeTextFile(files.keyFile, a.key);
    const serving = await ServingCertificate.load({ ...files, clock, resyncMs: 60_000 });
    const seen: string[] = [];
    serving.onChange((p) => seen.push(p.cert));
    serving.start({ watch: false });
    assert.equal(serving.current().cert, a.cert);

    await Deno.writeTextFile(files.certFile, b.cert); // the key is still a's
    assert.equal(await serving.check(), false);
    assert.equal(serving.current().cert, a.cert);

    await Deno.writeTextFile(files.keyFile, b.key);
    clock.tick(60_000); // the resync starts a check
    // A second check joins the one the tick started.
    await serving.check();
    assert.equal(serving.current().cert, b.cert);
    assert.deepEqual(seen, [b.cert]);
    assert.equal(await serving.check(), false);
    serving.close();
    assert.equal(clock.pendingTimers, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ServingCertificate's file watch picks up a rotation written by rename", async () => {
  const dir = await Deno.makeTempDir();
  const files = { certFile: `${dir}/s.crt`, keyFile: `${dir}/s.key` };
  const a = await generateSelfSignedCertKey({ host: "a" });
  const b = await generateSelfSignedCertKey({ host: "b" });
  await Deno.writeTextFile(files.certFile, a.cert);
  await Deno.writeTextFile(files.keyFile, a.key);
  const serving = await ServingCertificate.load({ ...files, resyncMs: 3_600_000 });
  try {
    const changed = new Promise<string>((resolve) => serving.onChange((p) => resolve(p.cert)));
    serving.start();
    await Deno.writeTextFile(`${dir}/new.key`, b.key);
    await Deno.writeTextFile(`${dir}/new.crt`, b.cert);
    await Deno.rename(`${dir}/new.key`, files.keyFile);
    await Deno.rename(`${dir}/new.crt`, files.certFile);
    const timeout = new Promise<string>((_, reject) => {
      const id = setTimeout(() => reject(new Error("no reload within 10 s")), 10_000);
      changed.finally(() => clearTimeout(id));
    });
    assert.equal(await Promise.race([changed, timeout]), b.cert);
  } finally {
    serving.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("resolveServingCertFiles(): the configured pair, else the self-signed one; never half", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const base = { certDir: `${dir}/pki`, host: "node-1" };
    assert.deepEqual(
      await resolveServingCertFiles({
        ...base,
        tlsCertFile: "/etc/c.crt",
        tlsPrivateKeyFile: "/etc/c.key",
      }),
      { certFile: "/etc/c.crt", keyFile: "/etc/c.key", generated: false },
    );
    await assert.rejects(
      resolveServingCertFiles({ ...base, tlsCertFile: "/etc/c.crt", tlsPrivateKeyFile: "" }),
      /tlsCertFile \("\/etc\/c.crt"\) and tlsPrivateKeyFile \(""\) must be set together/,
    );
    const made = await resolveServingCertFiles({ ...base, tlsCertFile: "", tlsPrivateKeyFile: "" });
    assert.deepEqual(made, {
      certFile: `${dir}/pki/kubelet.crt`,
      keyFile: `${dir}/pki/kubelet.key`,
      generated: true,
    });
    const serving = await ServingCertificate.load(made);
    assert.equal(serving.keyType(), "rsa");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
