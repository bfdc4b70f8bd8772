/**
 * X.509 v3 certificates built with the DER encoder and signed with WebCrypto
 * (RSASSA-PKCS1-v1_5 with SHA-256, as Go's x509.CreateCertificate signs with
 * an RSA key), and PEM encoding of certificates and RSA keys.
 *
 * @module
 */

import {
  bitString,
  boolean,
  children,
  type Der,
  explicit,
  ia5String,
  implicitPrimitive,
  integer,
  nullValue,
  octetString,
  oid,
  readItem,
  sequence,
  set,
  time,
  utf8String,
} from "./_der.ts";

const OID_SHA256_RSA = "1.2.840.113549.1.1.11";
const OID_CN = "2.5.4.3";
const OID_O = "2.5.4.10";
const OID_KEY_USAGE = "2.5.29.15";
const OID_EXT_KEY_USAGE = "2.5.29.37";
const OID_BASIC_CONSTRAINTS = "2.5.29.19";
const OID_SAN = "2.5.29.17";
const OID_SKI = "2.5.29.14";
const OID_AKI = "2.5.29.35";

/** Extended key usages by name. */
export const EXT_KEY_USAGE = {
  serverAuth: "1.3.6.1.5.5.7.3.1",
  clientAuth: "1.3.6.1.5.5.7.3.2",
} as const;

/** Key usage bits (RFC 5280 4.2.1.3), numbered from the most significant bit. */
export const KEY_USAGE = { digitalSignature: 0, keyEncipherment: 2, keyCertSign: 5 } as const;

/** A certificate subject or issuer: one CommonName, any Organizations. */
export interface DistinguishedName {
  commonName: string;
  organizations?: string[];
}

/** An RSA key pair usable for signing certificates. */
export interface RsaKeyPair {
  publicKey: CryptoKey;
  privateKey: CryptoKey;
}

/** What {@link issueCertificate} writes into a certificate. */
export interface CertificateTemplate {
  serial: bigint | number;
  subject: DistinguishedName;
  notBefore: number;
  notAfter: number;
  /** Bits from {@link KEY_USAGE}. */
  keyUsage: number[];
  /** OIDs, e.g. {@link EXT_KEY_USAGE}.serverAuth. */
  extKeyUsage?: string[];
  isCA: boolean;
  dnsNames?: string[];
  /** Textual IPv4/IPv6 addresses. */
  ipAddresses?: string[];
}

/** The signer of a certificate; omit for a self-signed one. */
export interface Issuer {
  name: DistinguishedName;
  keys: RsaKeyPair;
}

/** Generates an RSA 2048 key pair (upstream's self-signed certificate key size). */
export async function generateRsaKeyPair(): Promise<RsaKeyPair> {
  const pair = await crypto.subtle.generateKey(
    {
      name: "RSASSA-PKCS1-v1_5",
      modulusLength: 2048,
      publicExponent: Uint8Array.of(1, 0, 1),
      hash: "SHA-256",
    },
    true,
    ["sign", "verify"],
  );
  return { publicKey: pair.publicKey, privateKey: pair.privateKey };
}

/** A Name as Go's pkix.Name encodes it. */
export function encodeName(name: DistinguishedName): Der {
  // Go's pkix.Name order: O before CN, one RDN per value.
  const rdns = (name.organizations ?? []).map((o) => set(sequence(oid(OID_O), utf8String(o))));
  rdns.push(set(sequence(oid(OID_CN), utf8String(name.commonName))));
  return sequence(...rdns);
}

function keyUsageBits(bits: number[]): Der {
  const highest = Math.max(...bits);
  const bytes = new Uint8Array(Math.floor(highest / 8) + 1);
  for (const b of bits) bytes[b >> 3] = (bytes[b >> 3] ?? 0) | (0x80 >> (b & 7));
  const unused = 7 - (highest & 7);
  const content = new Uint8Array(bytes.length + 1);
  content[0] = unused;
  content.set(bytes, 1);
  return Uint8Array.from([0x03, content.length, ...content]);
}

/**
 * The bytes of a textual IPv4 or IPv6 address.
 * @throws Error naming the address when it is neither
 */
export function ipBytes(ip: string): Uint8Array {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(ip);
  if (v4) {
    const parts = v4.slice(1).map(Number);
    if (parts.every((p) => p <= 255)) return Uint8Array.from(parts);
  }
  if (ip.includes(":")) {
    const [head = "", tail, ...more] = ip.split("::");
    if (more.length === 0) {
      const parse = (s: string) => (s === "" ? [] : s.split(":"));
      let h = parse(head);
      let t = tail === undefined ? [] : parse(tail);
      const last = (t.length ? t : h).at(-1) ?? "";
      let v4tail: number[] = [];
      if (last.includes(".")) {
        v4tail = [...ipBytes(last)];
        if (t.length) t = t.slice(0, -1);
        else h = h.slice(0, -1);
      }
      const groups = h.length + t.length + v4tail.length / 2;
      const fill = tail === undefined ? 0 : 8 - groups;
      if (
        (tail === undefined ? groups === 8 : fill >= 1) &&
        [...h, ...t].every((g) => /^[0-9a-f]{1,4}$/i.test(g))
      ) {
        const words = [...h, ...Array(fill).fill("0"), ...t].map((g) => parseInt(g, 16));
        const out = new Uint8Array(16);
        words.forEach((w, i) => {
          out[2 * i] = w >> 8;
          out[2 * i + 1] = w & 0xff;
        });
        out.set(v4tail, 12);
        return out;
      }
    }
  }
  throw new Error(`${JSON.stringify(ip)} is not an IP address`);
}

function extension(id: string, critical: boolean, value: Der): Der {
  return critical
    ? sequence(oid(id), boolean(true), octetString(value))
    : sequence(oid(id), octetString(value));
}

async function keyId(spki: Der): Promise<Uint8Array> {
  // RFC 5280 4.2.1.2 method 1: SHA-1 of the subjectPublicKey BIT STRING's bits, as Go does.
  const outer = readItem(spki, 0);
  const bits = children(spki, outer)[1];
  if (!bits) throw new Error("SubjectPublicKeyInfo without a key");
  return new Uint8Array(
    await crypto.subtle.digest("SHA-1", spki.subarray(bits.start + 1, bits.end)),
  );
}

/**
 * Builds and signs an X.509 v3 certificate.
 * @param template what the certificate says
 * @param keys the subject's key pair (its public key goes into the certificate)
 * @param issuer the signer; the subject's own `keys` sign when omitted (self-signed)
 * @returns the certificate's DER
 */
export async function issueCertificate(
  template: CertificateTemplate,
  keys: RsaKeyPair,
  issuer?: Issuer,
): Promise<Uint8Array> {
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", keys.publicKey));
  const signer = issuer ?? { name: template.subject, keys };
  const issuerSpki = new Uint8Array(await crypto.subtle.exportKey("spki", signer.keys.publicKey));
  const algorithm = sequence(oid(OID_SHA256_RSA), nullValue());

  const exts: Der[] = [
    extension(OID_KEY_USAGE, true, keyUsageBits(template.keyUsage)),
  ];
  if (template.extKeyUsage?.length) {
    exts.push(extension(OID_EXT_KEY_USAGE, false, sequence(...template.extKeyUsage.map(oid))));
  }
  exts.push(
    extension(OID_BASIC_CONSTRAINTS, true, template.isCA ? sequence(boolean(true)) : sequence()),
  );
  if (template.isCA) exts.push(extension(OID_SKI, false, octetString(await keyId(spki))));
  if (issuer) {
    exts.push(extension(OID_AKI, false, sequence(implicitPrimitive(0, await keyId(issuerSpki)))));
  }
  const san = subjectAltNameExtension(template.dnsNames ?? [], template.ipAddresses ?? []);
  if (san) exts.push(san);

  const tbs = sequence(
    explicit(0, integer(2)),
    integer(template.serial),
    algorithm,
    encodeName(signer.name),
    sequence(time(template.notBefore), time(template.notAfter)),
    encodeName(template.subject),
    spki,
    explicit(3, sequence(...exts)),
  );
  const signature = new Uint8Array(
    await crypto.subtle.sign("RSASSA-PKCS1-v1_5", signer.keys.privateKey, tbs),
  );
  return sequence(tbs, algorithm, bitString(signature));
}

/**
 * The subjectAltName extension naming `dnsNames` then `ipAddresses`, or
 * undefined when both are empty.
 */
export function subjectAltNameExtension(
  dnsNames: string[],
  ipAddresses: string[],
): Der | undefined {
  const names = [
    ...dnsNames.map((n) => tlv82(n)),
    ...ipAddresses.map((ip) => implicitPrimitive(7, ipBytes(ip))),
  ];
  return names.length ? extension(OID_SAN, false, sequence(...names)) : undefined;
}

// dNSName is `[2] IMPLICIT IA5String`: the IA5String's content under tag 0x82.
function tlv82(name: string): Der {
  const ia5 = ia5String(name);
  const item = readItem(ia5, 0);
  return implicitPrimitive(2, ia5.subarray(item.start, item.end));
}

/** PEM-encodes DER bytes under `label` ("CERTIFICATE", "RSA PRIVATE KEY"). */
export function toPem(label: string, der: Uint8Array): string {
  let b64 = "";
  for (let i = 0; i < der.length; i += 0x8000) {
    b64 += String.fromCharCode(...der.subarray(i, i + 0x8000));
  }
  const lines = btoa(b64).match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

/** The DER of every PEM block labelled `label` in `text`, in order. */
export function pemBlocks(text: string, label = "CERTIFICATE"): Uint8Array[] {
  const re = new RegExp(`-----BEGIN ${label}-----([\\s\\S]*?)-----END ${label}-----`, "g");
  return [...text.matchAll(re)].map((m) =>
    Uint8Array.from(atob((m[1] ?? "").replace(/\s+/g, "")), (c) => c.charCodeAt(0))
  );
}

/**
 * The PKCS#1 RSAPrivateKey inside a private key, the form upstream writes
 * (`RSA PRIVATE KEY`); WebCrypto only exports PKCS#8, which wraps it.
 */
export async function rsaPrivateKeyPkcs1(key: CryptoKey): Promise<Uint8Array> {
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", key));
  const outer = readItem(pkcs8, 0);
  const inner = children(pkcs8, outer)[2];
  if (!inner || inner.tag !== 0x04) {
    throw new Error("PKCS#8 key without a private key octet string");
  }
  return pkcs8.slice(inner.start, inner.end);
}
