// A minimal ASN.1 DER encoder (what an X.509 certificate needs) and a reader
// that walks tag-length-value items, so certificates are built without openssl.

import { concatBytes } from "../util/bytes.ts";

/** An encoded DER item. */
export type Der = Uint8Array<ArrayBuffer>;

const encoder = new TextEncoder();

function lengthBytes(n: number): number[] {
  if (n < 0x80) return [n];
  const out: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) out.unshift(v & 0xff);
  return [0x80 | out.length, ...out];
}

/** One tag-length-value item. */
export function tlv(tag: number, content: Uint8Array): Der {
  const len = lengthBytes(content.length);
  const out = new Uint8Array(1 + len.length + content.length);
  out[0] = tag;
  out.set(len, 1);
  out.set(content, 1 + len.length);
  return out;
}

/** Concatenates byte arrays. */
export function concat(...parts: Uint8Array[]): Der {
  return concatBytes(parts);
}

export const sequence = (...items: Der[]): Der => tlv(0x30, concat(...items));
export const set = (...items: Der[]): Der => tlv(0x31, concat(...items));
export const nullValue = (): Der => tlv(0x05, new Uint8Array());
export const boolean = (v: boolean): Der => tlv(0x01, Uint8Array.of(v ? 0xff : 0));
export const octetString = (b: Uint8Array): Der => tlv(0x04, b);
export const utf8String = (s: string): Der => tlv(0x0c, encoder.encode(s));
export const ia5String = (s: string): Der => tlv(0x16, encoder.encode(s));
/** A BIT STRING of whole bytes (no unused bits). */
export const bitString = (b: Uint8Array): Der => tlv(0x03, concat(Uint8Array.of(0), b));
/** `[n] EXPLICIT` around an encoded item. */
export const explicit = (n: number, item: Der): Der => tlv(0xa0 | n, item);
/** `[n] IMPLICIT` primitive content (e.g. GeneralName dNSName, iPAddress). */
export const implicitPrimitive = (n: number, content: Uint8Array): Der => tlv(0x80 | n, content);

/** A non-negative INTEGER. */
export function integer(v: bigint | number): Der {
  let n = BigInt(v);
  if (n < 0n) throw new RangeError(`DER integer ${n} is negative`);
  const bytes: number[] = [];
  do {
    bytes.unshift(Number(n & 0xffn));
    n >>= 8n;
  } while (n > 0n);
  // A set high bit would read as negative.
  if ((bytes[0] ?? 0) & 0x80) bytes.unshift(0);
  return tlv(0x02, Uint8Array.from(bytes));
}

/** An OBJECT IDENTIFIER from its dotted form. */
export function oid(dotted: string): Der {
  const arcs = dotted.split(".").map((a) => BigInt(a));
  const [a0 = 0n, a1 = 0n, ...rest] = arcs;
  const out: number[] = [];
  for (const arc of [a0 * 40n + a1, ...rest]) {
    const chunk: number[] = [];
    let v = arc;
    do {
      chunk.unshift(Number(v & 0x7fn));
      v >>= 7n;
    } while (v > 0n);
    for (let i = 0; i < chunk.length - 1; i++) chunk[i] = (chunk[i] ?? 0) | 0x80;
    out.push(...chunk);
  }
  return tlv(0x06, Uint8Array.from(out));
}

/**
 * A certificate validity time: UTCTime through 2049, GeneralizedTime after,
 * as RFC 5280 4.1.2.5 requires.
 */
export function time(ms: number): Der {
  const d = new Date(Math.floor(ms / 1000) * 1000);
  const iso = d.toISOString(); // YYYY-MM-DDTHH:MM:SS.000Z
  const digits = iso.slice(0, 19).replace(/[-T:]/g, "");
  const year = d.getUTCFullYear();
  if (year >= 1950 && year < 2050) return tlv(0x17, encoder.encode(digits.slice(2) + "Z"));
  return tlv(0x18, encoder.encode(digits + "Z"));
}

/** One decoded item: its tag and where its content lies in the input. */
export interface Item {
  tag: number;
  /** Offset of the content's first byte. */
  start: number;
  /** Offset just past the content. */
  end: number;
}

/**
 * Reads the item at `offset`.
 * @throws RangeError on a truncated or indefinite-length item
 */
export function readItem(der: Uint8Array, offset: number): Item {
  const tag = der[offset];
  let lenByte = der[offset + 1];
  if (tag === undefined || lenByte === undefined) throw new RangeError("DER item truncated");
  let pos = offset + 2;
  let len = lenByte;
  if (lenByte & 0x80) {
    const n = lenByte & 0x7f;
    if (n === 0 || n > 4) throw new RangeError("DER length form unsupported");
    len = 0;
    for (let i = 0; i < n; i++) {
      lenByte = der[pos++];
      if (lenByte === undefined) throw new RangeError("DER length truncated");
      len = len * 256 + lenByte;
    }
  }
  if (pos + len > der.length) throw new RangeError("DER content truncated");
  return { tag, start: pos, end: pos + len };
}

/** The items directly inside a constructed item. */
export function children(der: Uint8Array, parent: Item): Item[] {
  const out: Item[] = [];
  for (let pos = parent.start; pos < parent.end;) {
    const item = readItem(der, pos);
    out.push(item);
    pos = item.end;
  }
  return out;
}
