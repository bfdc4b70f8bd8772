/**
 * PKCS#10 certificate requests (RFC 2986) as client-go's `MakeCSR` builds
 * them, signed with an ECDSA P-256 key (the key client-go's certificate
 * manager and the kubelet's TLS bootstrap generate), and the CSR object name
 * the kubelet's bootstrap derives from the request (`node-csr-<digest>`).
 *
 * @module
 */

import { Buffer } from "node:buffer";
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  createSign,
  generateKeyPairSync,
} from "node:crypto";
import { bitString, concat, type Der, integer, oid, sequence, set, tlv } from "./_der.ts";
import { type DistinguishedName, encodeName, subjectAltNameExtension, toPem } from "./x509.ts";

const OID_ECDSA_SHA256 = "1.2.840.10045.4.3.2";
const OID_EXTENSION_REQUEST = "1.2.840.113549.1.9.14";

/**
 * A new ECDSA P-256 private key as `EC PRIVATE KEY` PEM (SEC 1), the form
 * client-go's keyutil writes.
 */
export function generateEcKeyPem(): string {
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  return privateKey.export({ type: "sec1", format: "pem" }) as string;
}

/** The DER SubjectPublicKeyInfo of a PEM private key. */
export function publicKeyDer(keyPem: string): Uint8Array {
  return new Uint8Array(
    createPublicKey(createPrivateKey(keyPem)).export({ type: "spki", format: "der" }),
  );
}

/** What a certificate request asks for. */
export interface CsrTemplate {
  subject: DistinguishedName;
  dnsNames?: string[];
  /** Textual IPv4/IPv6 addresses. */
  ipAddresses?: string[];
}

/**
 * Builds and signs a PKCS#10 request with an ECDSA key.
 * @param keyPem the requester's private key (PEM, EC)
 * @returns the request as `CERTIFICATE REQUEST` PEM
 * @throws Error when the key is not an EC key
 */
export function makeCsrPem(keyPem: string, template: CsrTemplate): string {
  const key = createPrivateKey(keyPem);
  if (key.asymmetricKeyType !== "ec") {
    throw new Error(`certificate request key is ${key.asymmetricKeyType}, not ec`);
  }
  const spki = new Uint8Array(createPublicKey(key).export({ type: "spki", format: "der" }));
  const san = subjectAltNameExtension(template.dnsNames ?? [], template.ipAddresses ?? []);
  // attributes [0] IMPLICIT SET OF Attribute: extensionRequest only when there are SANs.
  const attributes: Der[] = san ? [sequence(oid(OID_EXTENSION_REQUEST), set(sequence(san)))] : [];
  const info = sequence(
    integer(0),
    encodeName(template.subject),
    spki as Der,
    tlv(0xa0, concat(...attributes)),
  );
  const signer = createSign("SHA256");
  signer.update(info);
  // node:crypto's ECDSA signature is already the DER SEQUENCE { r, s } X.509 wants.
  const signature = new Uint8Array(signer.sign(key));
  const der = sequence(info, sequence(oid(OID_ECDSA_SHA256)), bitString(signature));
  return toPem("CERTIFICATE REQUEST", der);
}

const b64url = (b: Uint8Array | string) => Buffer.from(b).toString("base64url");

/**
 * The CSR object name the kubelet's TLS bootstrap uses: `node-csr-` and the
 * base64url SHA-512/256 of the public key, subject and usages, each base64url
 * and `|`-terminated, so the same request made twice reuses the object.
 */
export function digestedCsrName(
  publicKey: Uint8Array,
  subject: DistinguishedName,
  usages: string[],
): string {
  const hash = createHash("sha512-256");
  const write = (data: Uint8Array | string) => hash.update(b64url(data) + "|");
  write(publicKey);
  write(subject.commonName);
  for (const o of subject.organizations ?? []) write(o);
  for (const u of usages) write(u);
  return `node-csr-${hash.digest("base64url")}`;
}
