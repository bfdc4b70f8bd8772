import assert from "node:assert/strict";
import { createPublicKey, createVerify, X509Certificate } from "node:crypto";
import {
  CertificateFileStore,
  certificateInfo,
  digestedCsrName,
  EXT_KEY_USAGE,
  generateEcKeyPem,
  generateRsaKeyPair,
  issueCertificate,
  KEY_USAGE,
  makeCsrPem,
  pemBlocks,
  publicKeyDer,
  toPem,
} from "../../lib/certs/mod.ts";
import { type Item, readItem } from "../../lib/certs/_der.ts";
import { withTempDir } from "../kit/mod.ts";

const SUBJECT = { commonName: "system:node:node-1", organizations: ["system:nodes"] };

/** The items inside `parent`, each with the offset of its tag (where its encoding begins). */
function items(der: Uint8Array, parent: Item): (Item & { begin: number })[] {
  const out: (Item & { begin: number })[] = [];
  for (let pos = parent.start; pos < parent.end;) {
    const item = readItem(der, pos);
    out.push({ ...item, begin: pos });
    pos = item.end;
  }
  return out;
}

/** The CertificationRequestInfo, SubjectPublicKeyInfo, attributes and signature of a PEM CSR. */
function csrParts(pem: string) {
  const der = pemBlocks(pem, "CERTIFICATE REQUEST")[0]!;
  const [info, , sig] = items(der, readItem(der, 0));
  const [, , spki, attributes] = items(der, info!);
  return {
    info: der.slice(info!.begin, info!.end),
    spki: der.slice(spki!.begin, spki!.end),
    attributes: attributes!,
    // The BIT STRING's first byte counts unused bits (0).
    signature: der.slice(sig!.start + 1, sig!.end),
    der,
  };
}

Deno.test("makeCsrPem() signs a PKCS#10 request with the ECDSA key: subject, SANs, signature", () => {
  const key = generateEcKeyPem();
  assert.match(key, /^-----BEGIN EC PRIVATE KEY-----/);
  const pem = makeCsrPem(key, {
    subject: SUBJECT,
    dnsNames: ["node-1"],
    ipAddresses: ["10.0.0.5", "fd00::5"],
  });
  assert.match(pem, /^-----BEGIN CERTIFICATE REQUEST-----/);
  const parts = csrParts(pem);
  // The signature verifies over the request info with the key's public half.
  const verify = createVerify("SHA256");
  verify.update(parts.info);
  assert.ok(verify.verify(createPublicKey(key), parts.signature));
  assert.deepEqual(parts.spki, publicKeyDer(key));
  // The SANs sit in an extensionRequest attribute, encoded as in a certificate.
  const text = new TextDecoder("latin1").decode(parts.der);
  assert.ok(text.includes("node-1"));
  assert.equal(parts.attributes.tag, 0xa0);
  assert.ok(parts.attributes.end > parts.attributes.start);

  // Without SANs the attributes are empty, as Go's CreateCertificateRequest writes them.
  const bare = csrParts(makeCsrPem(key, { subject: SUBJECT }));
  assert.equal(bare.attributes.end, bare.attributes.start);
  assert.throws(
    () => makeCsrPem(toPem("PRIVATE KEY", new Uint8Array([0x30, 0])), { subject: SUBJECT }),
  );
});

Deno.test("digestedCsrName() is node-csr- and a stable digest of key, subject and usages", () => {
  const key = generateEcKeyPem();
  const usages = ["digital signature", "client auth"];
  const name = digestedCsrName(publicKeyDer(key), SUBJECT, usages);
  assert.match(name, /^node-csr-[A-Za-z0-9_-]{43}$/);
  assert.equal(digestedCsrName(publicKeyDer(key), SUBJECT, usages), name);
  assert.notEqual(digestedCsrName(publicKeyDer(key), SUBJECT, ["client auth"]), name);
  assert.notEqual(digestedCsrName(publicKeyDer(generateEcKeyPem()), SUBJECT, usages), name);
  // The delimiter keeps "CN=foo,O=bar" apart from "CN=foob,O=ar".
  assert.notEqual(
    digestedCsrName(publicKeyDer(key), { commonName: "foo", organizations: ["bar"] }, usages),
    digestedCsrName(publicKeyDer(key), { commonName: "foob", organizations: ["ar"] }, usages),
  );
});

/** A certificate for `keyPem`'s public key, signed by a throw-away RSA CA. */
async function issueFor(keyPem: string, notBefore: number, notAfter: number): Promise<string> {
  const ca = await generateRsaKeyPair();
  const publicKey = await crypto.subtle.importKey(
    "spki",
    publicKeyDer(keyPem) as Uint8Array<ArrayBuffer>,
    { name: "ECDSA", namedCurve: "P-256" },
    true,
    ["verify"],
  );
  const der = await issueCertificate(
    {
      serial: BigInt(Math.floor(notBefore / 1000)),
      subject: SUBJECT,
      notBefore,
      notAfter,
      keyUsage: [KEY_USAGE.digitalSignature],
      extKeyUsage: [EXT_KEY_USAGE.clientAuth],
      isCA: false,
    },
    { publicKey, privateKey: ca.privateKey },
    { name: { commonName: "ca" }, keys: ca },
  );
  return toPem("CERTIFICATE", der);
}

Deno.test("CertificateFileStore: dated 0600 files, the current symlink switched by rename", async () => {
  await withTempDir(async (dir) => {
    const store = new CertificateFileStore("kubelet-client", `${dir}/pki`);
    assert.equal(await store.current(), undefined);
    const key = generateEcKeyPem();
    const t0 = Date.UTC(2026, 11, 2, 4, 0, 0);
    const cert = await issueFor(key, t0, t0 + 3_600_000);
    const first = await store.update(cert, key, t0);
    const current = `${dir}/pki/kubelet-client-current.pem`;
    assert.equal(first.path, current);
    assert.ok(Deno.lstatSync(current).isSymlink);
    const target = Deno.readLinkSync(current);
    assert.match(target, /\/kubelet-client-\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\.pem$/);
    assert.equal(Deno.statSync(target).mode! & 0o777, 0o600);
    const text = Deno.readTextFileSync(current);
    assert.match(text, /^-----BEGIN CERTIFICATE-----[\s\S]*-----BEGIN EC PRIVATE KEY-----/);
    assert.equal(first.notAfter, t0 + 3_600_000);
    assert.equal(certificateInfo(pemBlocks(first.cert)[0]!).commonName, SUBJECT.commonName);

    const key2 = generateEcKeyPem();
    const cert2 = await issueFor(key2, t0 + 1000, t0 + 7_200_000);
    await store.update(cert2, key2, t0 + 1000);
    const again = await store.current();
    assert.equal(again?.key.trim(), key2.trim());
    assert.equal(
      again?.serial,
      new X509Certificate(cert2).serialNumber.toUpperCase(),
    );
    assert.notEqual(Deno.readLinkSync(current), target);

    // A crash between the two steps leaves only -updated.pem: current() completes the switch.
    Deno.renameSync(current, `${dir}/pki/kubelet-client-updated.pem`);
    assert.equal((await store.current())?.key.trim(), key2.trim());
    assert.ok(Deno.lstatSync(current).isSymlink);

    // A key that is not the certificate's is refused, naming the file.
    await assert.rejects(store.update(cert, key2, t0 + 2000), /does not match/);
    await assert.rejects(store.update("junk", key2), /no PEM certificate/);
  });
});

Deno.test("CertificateFileStore: a directory it cannot create is named in the error", async () => {
  await withTempDir(async (dir) => {
    Deno.writeTextFileSync(`${dir}/file`, "");
    const store = new CertificateFileStore("kubelet-client", `${dir}/file/pki`);
    const key = generateEcKeyPem();
    const cert = await issueFor(key, Date.now(), Date.now() + 60_000);
    await assert.rejects(
      store.update(cert, key),
      new RegExp(`could not create directory ${dir}/file/pki`),
    );
  });
});
