/**
 * Byte writing and reading for the trace's encoded syncs (_codec.ts): a
 * growable buffer with varints, exact numbers and exact strings, and a reader
 * for what it wrote. In-memory only (native byte order for float64): the
 * bytes never leave the process.
 *
 * Numbers: an integer up to 2^50 in magnitude is a zigzag varint shifted left
 * by one (even), anything else (fractions, -0, NaN, larger) the varint 1 then
 * its float64, so every number reads back as itself. A time is written as its
 * difference from a base time the reader knows, a duration in tenths of a ms.
 * Strings: UTF-8 when well formed, else their UTF-16 code units (a lone
 * surrogate survives), length first with the kind in its two low bits; within
 * a scope ({@link ByteWriter.beginScope} to `endScope`) a string written before
 * is written again as its number (a sync's container name, its sandbox id in
 * each call). The writers share one table, held only while a scope is open:
 * a pod's ring keeps no strings between its syncs.
 *
 * @module
 */

const LIMIT = 2 ** 50;
const scratch = new Float64Array(1);
const scratchBytes = new Uint8Array(scratch.buffer);
const encoder = new TextEncoder();
// ignoreBOM: a string that starts with U+FEFF keeps it.
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });

function zigzag(n: number): number {
  return n >= 0 ? n * 2 : -n * 2 - 1;
}

function unzigzag(z: number): number {
  return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
}

/** Integers written as varints; the rest as float64. */
function small(n: number): boolean {
  return Number.isInteger(n) && Math.abs(n) <= LIMIT && !Object.is(n, -0);
}

/** The kind of a string, in the low two bits of its head. */
const UTF8 = 0, UTF16 = 1, SEEN = 2;
/** Strings shorter than this are not worth a back-reference. */
const MIN_SHARED = 2;
/** The open scope's strings, by number, and the writer that opened it. */
const seen = new Map<string, number>();
let scopeOwner: ByteWriter | undefined;

/** A growable byte buffer written front to back. */
export class ByteWriter {
  /** The bytes; valid up to {@link length}. */
  bytes: Uint8Array;
  /** How many bytes are written. */
  length = 0;

  /** @param capacity bytes to start with */
  constructor(capacity = 0) {
    this.bytes = new Uint8Array(capacity);
  }

  /**
   * Makes room for `n` more bytes, and an eighth more.
   * @param n bytes about to be written
   */
  reserve(n: number): void {
    const need = this.length + n;
    if (need <= this.bytes.length) return;
    this.resize(Math.max(need + Math.ceil(need / 8), 64));
  }

  /** Opens a scope of shared strings (closing any other writer's). */
  beginScope(): void {
    seen.clear();
    scopeOwner = this;
  }

  /** Closes this writer's scope, letting go of its strings. */
  endScope(): void {
    if (scopeOwner !== this) return;
    seen.clear();
    scopeOwner = undefined;
  }

  /**
   * Gives the buffer exactly `capacity` bytes (at least what is written).
   * @param capacity the new size
   */
  resize(capacity: number): void {
    const next = new Uint8Array(Math.max(capacity, this.length));
    next.set(this.bytes.subarray(0, this.length));
    this.bytes = next;
  }

  /** @param v 0..255 */
  u8(v: number): void {
    this.reserve(1);
    this.bytes[this.length++] = v;
  }

  /** @param v 0..2^32-1, as 4 bytes little-endian (a fixed-size frame length) */
  u32(v: number): void {
    this.reserve(4);
    for (let i = 0; i < 4; i++) this.bytes[this.length++] = (v >>> (8 * i)) & 0xff;
  }

  /** @param v a non-negative safe integer */
  uvarint(v: number): void {
    this.reserve(8);
    while (v >= 128) {
      this.bytes[this.length++] = (v % 128) + 128;
      v = Math.floor(v / 128);
    }
    this.bytes[this.length++] = v;
  }

  #f64(v: number): void {
    this.reserve(8);
    scratch[0] = v;
    this.bytes.set(scratchBytes, this.length);
    this.length += 8;
  }

  /**
   * Any number, read back exactly.
   * @param n the number
   * @param base subtracted first (a time's base); 0 by default
   */
  number(n: number, base = 0): void {
    const d = n - base;
    if (small(n) && small(base) && small(d)) this.uvarint(zigzag(d) * 2);
    else {
      this.uvarint(1);
      this.#f64(n);
    }
  }

  /** @param ms a duration, cheapest when it is a whole number of tenths */
  tenths(ms: number): void {
    const k = Math.round(ms * 10);
    if (k / 10 === ms && small(k) && !Object.is(ms, -0)) this.uvarint(zigzag(k) * 2);
    else {
      this.uvarint(1);
      this.#f64(ms);
    }
  }

  /** @param s any string, read back exactly */
  str(s: string): void {
    if (scopeOwner === this && s.length >= MIN_SHARED) {
      const n = seen.get(s);
      if (n !== undefined) {
        this.uvarint(n * 4 + SEEN);
        return;
      }
      seen.set(s, seen.size);
    }
    // ASCII (nearly every string here) in one pass, undone at the first other character.
    const start = this.length;
    this.uvarint(s.length * 4 + UTF8);
    this.reserve(s.length);
    const bytes = this.bytes;
    let at = this.length;
    let ascii = true;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) {
        ascii = false;
        break;
      }
      bytes[at++] = c;
    }
    if (ascii) {
      this.length = at;
      return;
    }
    this.length = start;
    if (s.isWellFormed()) {
      const utf8 = encoder.encode(s);
      this.uvarint(utf8.length * 4 + UTF8);
      this.reserve(utf8.length);
      this.bytes.set(utf8, this.length);
      this.length += utf8.length;
    } else {
      this.uvarint(s.length * 4 + UTF16);
      this.reserve(s.length * 2);
      for (let i = 0; i < s.length; i++) {
        const c = s.charCodeAt(i);
        this.bytes[this.length++] = c & 0xff;
        this.bytes[this.length++] = c >>> 8;
      }
    }
  }
}

/** Reads what a {@link ByteWriter} wrote, in the same order. */
export class ByteReader {
  readonly #bytes: Uint8Array;
  /** The next byte to read. */
  pos: number;
  /** The strings read in the open scope, by number. */
  #seen: string[] | undefined;

  /**
   * @param bytes the written bytes
   * @param pos where to start
   */
  constructor(bytes: Uint8Array, pos = 0) {
    this.#bytes = bytes;
    this.pos = pos;
  }

  /** Opens a scope of shared strings, where the writer opened one. */
  beginScope(): void {
    this.#seen = [];
  }

  /** Closes it, where the writer closed it. */
  endScope(): void {
    this.#seen = undefined;
  }

  /** @returns the next byte */
  u8(): number {
    const v = this.#bytes[this.pos++];
    if (v === undefined) throw new RangeError("trace record: read past its end");
    return v;
  }

  /** @returns a {@link ByteWriter.u32} */
  u32(): number {
    let v = 0;
    for (let i = 0; i < 4; i++) v += this.u8() * 2 ** (8 * i);
    return v;
  }

  /** @returns a {@link ByteWriter.uvarint} */
  uvarint(): number {
    let v = 0;
    let scale = 1;
    for (;;) {
      const b = this.u8();
      v += (b % 128) * scale;
      if (b < 128) return v;
      scale *= 128;
    }
  }

  #f64(): number {
    if (this.pos + 8 > this.#bytes.length) throw new RangeError("trace record: read past its end");
    scratchBytes.set(this.#bytes.subarray(this.pos, this.pos + 8));
    this.pos += 8;
    return scratch[0]!;
  }

  /**
   * @param base what the writer subtracted
   * @returns a {@link ByteWriter.number}
   */
  number(base = 0): number {
    const v = this.uvarint();
    return v === 1 ? this.#f64() : base + unzigzag(v / 2);
  }

  /** @returns a {@link ByteWriter.tenths} */
  tenths(): number {
    const v = this.uvarint();
    return v === 1 ? this.#f64() : unzigzag(v / 2) / 10;
  }

  /** @returns a {@link ByteWriter.str} */
  str(): string {
    const head = this.uvarint();
    const kind = head % 4;
    const n = (head - kind) / 4;
    if (kind === SEEN) {
      const s = this.#seen?.[n];
      if (s === undefined) throw new RangeError(`trace record: no string ${n} in scope`);
      return s;
    }
    const end = this.pos + (kind === UTF8 ? n : 2 * n);
    if (kind > UTF16 || end > this.#bytes.length) {
      throw new RangeError("trace record: a string past its end");
    }
    let s = "";
    if (kind === UTF8) s = decoder.decode(this.#bytes.subarray(this.pos, end));
    else {
      for (let i = this.pos; i < end; i += 2) {
        s += String.fromCharCode(this.#bytes[i]! | (this.#bytes[i + 1]! << 8));
      }
    }
    this.pos = end;
    if (s.length >= MIN_SHARED) this.#seen?.push(s);
    return s;
  }
}
