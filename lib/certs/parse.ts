/**
 * Reads what node:crypto's X509Certificate does not give in Deno: the
 * subject's CommonName and Organizations as values (not escaped text), and
 * the extended key usages (Deno's `keyUsage` lists key usages instead).
 *
 * @module
 */

import { children, type Item, readItem } from "./_der.ts";

const OID_CN = "2.5.4.3";
const OID_O = "2.5.4.10";
const OID_EXT_KEY_USAGE = "2.5.29.37";

/** The subject and usages of a certificate. */
export interface CertificateInfo {
  commonName: string;
  organizations: string[];
  /** Extended key usage OIDs; undefined when the certificate has no such extension. */
  extKeyUsage?: string[];
}

function decodeOid(der: Uint8Array, item: Item): string {
  const arcs: bigint[] = [];
  let v = 0n;
  for (let i = item.start; i < item.end; i++) {
    const b = der[i] ?? 0;
    v = (v << 7n) | BigInt(b & 0x7f);
    if (!(b & 0x80)) {
      arcs.push(v);
      v = 0n;
    }
  }
  const [first = 0n, ...rest] = arcs;
  const a0 = first < 80n ? first / 40n : 2n;
  return [a0, first - a0 * 40n, ...rest].join(".");
}

const utf8 = new TextDecoder();

function expect(item: Item | undefined, what: string): Item {
  if (!item) throw new Error(`certificate without ${what}`);
  return item;
}

/**
 * Parses the parts of a DER certificate that authentication reads.
 * @throws Error on malformed DER
 */
export function certificateInfo(der: Uint8Array): CertificateInfo {
  const cert = readItem(der, 0);
  const tbs = expect(children(der, cert)[0], "TBSCertificate");
  const fields = children(der, tbs);
  // The version is an optional [0]; the subject follows serial, algorithm, issuer and validity.
  const skip = fields[0]?.tag === 0xa0 ? 1 : 0;
  const subject = expect(fields[skip + 4], "subject");
  const info: CertificateInfo = { commonName: "", organizations: [] };
  for (const rdn of children(der, subject)) {
    for (const atv of children(der, rdn)) {
      const [type, value] = children(der, atv);
      if (!type || !value) continue;
      const id = decodeOid(der, type);
      const text = utf8.decode(der.subarray(value.start, value.end));
      if (id === OID_CN) info.commonName = text;
      else if (id === OID_O) info.organizations.push(text);
    }
  }
  const exts = fields.find((f) => f.tag === 0xa3);
  if (exts) {
    const list = expect(children(der, exts)[0], "extension list");
    for (const ext of children(der, list)) {
      const parts = children(der, ext);
      const id = parts[0];
      const value = parts.at(-1);
      if (!id || !value || decodeOid(der, id) !== OID_EXT_KEY_USAGE) continue;
      const seq = readItem(der, value.start);
      info.extKeyUsage = children(der, seq).map((o) => decodeOid(der, o));
    }
  }
  return info;
}
