/**
 * A finished sync as bytes (issue #20): the records of a pod's last syncs are
 * kept in one byte buffer per pod ({@link SyncRing}), outside the V8 heap and
 * without the JSON text's repeated keys, and turned back into
 * {@link SyncRecord}s only when served.
 *
 * ```
 * ring:   [u32 length][sync] [u32 length][sync] …        oldest first
 * sync:   seq kind startedAt flags [endedAt]
 *         triggers  [plan]  calls  steps  [status]  [error]  [truncated]
 * ```
 *
 * Times are written against `startedAt`, optional fields behind the flags,
 * the closed sets (kind, trigger source, container state) as their index, a
 * string the sync already holds as its number; every string and number reads
 * back as written (_bytes.ts). Read back, a
 * sync's fields come in the order of {@link SyncRecord} in types.ts.
 *
 * @module
 */

import { ByteReader, ByteWriter } from "./_bytes.ts";
import type {
  ContainerStatusRecord,
  PlanRecord,
  StatusRecord,
  SyncKind,
  SyncRecord,
  TriggerSource,
} from "./types.ts";

const KINDS: readonly SyncKind[] = ["sync", "terminating", "terminated", "runtime-kill"];
const SOURCES: readonly TriggerSource[] = [
  "config",
  "pleg",
  "probe",
  "resync",
  "backoff-expired",
  "deadline",
  "kill",
  "other",
];
const STATES: readonly ContainerStatusRecord["state"][] = [
  "waiting",
  "running",
  "terminated",
  "unknown",
];

/** Presence bits of a sync's optional fields. */
const ENDED = 1, PLAN = 2, STATUS = 4, ERROR = 8, TRUNCATED = 16;
/** The index byte of a value not in its list, which follows as a string. */
const OTHER = 255;

/** A value of a closed set as its index; one types.ts does not list (yet) as itself. */
function writeEnum<T extends string>(w: ByteWriter, list: readonly T[], value: T): void {
  const i = list.indexOf(value);
  if (i >= 0) w.u8(i);
  else {
    w.u8(OTHER);
    w.str(value);
  }
}

function readEnum<T extends string>(r: ByteReader, list: readonly T[]): T {
  const i = r.u8();
  if (i === OTHER) return r.str() as T;
  const v = list[i];
  if (v === undefined) throw new RangeError(`trace record: no value at index ${i}`);
  return v;
}

function writeList<T>(w: ByteWriter, list: readonly T[], item: (x: T) => void): void {
  w.uvarint(list.length);
  for (const x of list) item(x);
}

function readList<T>(r: ByteReader, item: () => T): T[] {
  const n = r.uvarint();
  const out: T[] = [];
  for (let i = 0; i < n; i++) out.push(item());
  return out;
}

function writePlan(w: ByteWriter, p: PlanRecord, base: number): void {
  w.u8((p.killPod ? 1 : 0) | (p.createSandbox ? 2 : 0));
  writeList(w, p.start, (s) => w.str(s));
  writeList(w, p.kill, (k) => {
    w.str(k.name);
    w.str(k.reason);
    w.str(k.message);
  });
  writeList(w, p.backoff, (b) => {
    w.str(b.name);
    w.str(b.reason);
    w.str(b.message);
    w.number(b.until, base);
  });
  writeList(w, p.update, (s) => w.str(s));
  writeList(w, p.reasons, (s) => w.str(s));
}

function readPlan(r: ByteReader, base: number): PlanRecord {
  const flags = r.u8();
  return {
    killPod: (flags & 1) !== 0,
    createSandbox: (flags & 2) !== 0,
    start: readList(r, () => r.str()),
    kill: readList(r, () => ({ name: r.str(), reason: r.str(), message: r.str() })),
    backoff: readList(r, () => ({
      name: r.str(),
      reason: r.str(),
      message: r.str(),
      until: r.number(base),
    })),
    update: readList(r, () => r.str()),
    reasons: readList(r, () => r.str()),
  };
}

function writeStatus(w: ByteWriter, s: StatusRecord): void {
  w.str(s.phase);
  w.u8((s.reason !== undefined ? 1 : 0) | (s.message !== undefined ? 2 : 0));
  if (s.reason !== undefined) w.str(s.reason);
  if (s.message !== undefined) w.str(s.message);
  writeList(w, s.containers, (c) => {
    w.str(c.name);
    writeEnum(w, STATES, c.state);
    w.u8(
      (c.reason !== undefined ? 1 : 0) | (c.message !== undefined ? 2 : 0) |
        (c.exitCode !== undefined ? 4 : 0) | (c.lastExitCode !== undefined ? 8 : 0),
    );
    if (c.reason !== undefined) w.str(c.reason);
    if (c.message !== undefined) w.str(c.message);
    if (c.exitCode !== undefined) w.number(c.exitCode);
    w.number(c.restartCount);
    if (c.lastExitCode !== undefined) w.number(c.lastExitCode);
  });
}

function readStatus(r: ByteReader): StatusRecord {
  const status = { phase: r.str() } as StatusRecord;
  const flags = r.u8();
  if (flags & 1) status.reason = r.str();
  if (flags & 2) status.message = r.str();
  status.containers = readList(r, () => {
    const c = { name: r.str(), state: readEnum(r, STATES) } as ContainerStatusRecord;
    const f = r.u8();
    if (f & 1) c.reason = r.str();
    if (f & 2) c.message = r.str();
    if (f & 4) c.exitCode = r.number();
    c.restartCount = r.number();
    if (f & 8) c.lastExitCode = r.number();
    return c;
  });
  return status;
}

/**
 * Appends one sync's bytes.
 * @param w where to
 * @param s the sync (finished or not)
 */
export function writeSync(w: ByteWriter, s: SyncRecord): void {
  w.beginScope();
  try {
    writeFields(w, s);
  } finally {
    w.endScope();
  }
}

function writeFields(w: ByteWriter, s: SyncRecord): void {
  const base = s.startedAt;
  w.uvarint(s.seq);
  writeEnum(w, KINDS, s.kind);
  w.number(base);
  w.u8(
    (s.endedAt !== undefined ? ENDED : 0) | (s.plan ? PLAN : 0) | (s.status ? STATUS : 0) |
      (s.error !== undefined ? ERROR : 0) | (s.truncated !== undefined ? TRUNCATED : 0),
  );
  if (s.endedAt !== undefined) w.number(s.endedAt, base);
  writeList(w, s.triggers, (t) => {
    w.number(t.at, base);
    writeEnum(w, SOURCES, t.source);
    w.str(t.detail);
  });
  if (s.plan) writePlan(w, s.plan, base);
  writeList(w, s.calls, (c) => {
    w.number(c.at, base);
    w.str(c.rpc);
    w.str(c.args);
    w.tenths(c.ms);
    w.u8(c.error !== undefined ? 1 : 0);
    if (c.error !== undefined) w.str(c.error);
  });
  writeList(w, s.steps, (step) => {
    w.str(step.action);
    w.str(step.target);
    w.u8(step.error ? 1 : 0);
    if (step.error) {
      w.str(step.error.reason);
      w.str(step.error.message);
    }
  });
  if (s.status) writeStatus(w, s.status);
  if (s.error !== undefined) w.str(s.error);
  if (s.truncated !== undefined) w.number(s.truncated);
}

/**
 * Reads one sync written by {@link writeSync}.
 * @param r positioned at the sync
 * @returns the sync, its fields in types.ts order
 * @throws RangeError when the bytes end early or hold a bad index (not written by writeSync)
 */
export function readSync(r: ByteReader): SyncRecord {
  r.beginScope();
  try {
    return readFields(r);
  } finally {
    r.endScope();
  }
}

function readFields(r: ByteReader): SyncRecord {
  const seq = r.uvarint();
  const kind = readEnum(r, KINDS);
  const startedAt = r.number();
  const flags = r.u8();
  const s = { seq, kind, startedAt } as SyncRecord;
  if (flags & ENDED) s.endedAt = r.number(startedAt);
  s.triggers = readList(r, () => ({
    at: r.number(startedAt),
    source: readEnum(r, SOURCES),
    detail: r.str(),
  }));
  if (flags & PLAN) s.plan = readPlan(r, startedAt);
  s.calls = readList(r, () => {
    const at = r.number(startedAt);
    const rpc = r.str();
    const args = r.str();
    const ms = r.tenths();
    return r.u8() & 1 ? { at, rpc, args, ms, error: r.str() } : { at, rpc, args, ms };
  });
  s.steps = readList(r, () => {
    const action = r.str();
    const target = r.str();
    return r.u8() & 1
      ? { action, target, error: { reason: r.str(), message: r.str() } }
      : { action, target };
  });
  if (flags & STATUS) s.status = readStatus(r);
  if (flags & ERROR) s.error = r.str();
  if (flags & TRUNCATED) s.truncated = r.number();
  return s;
}

/**
 * One pod's finished syncs as bytes, oldest first: a single buffer, framed by
 * each sync's length, that drops its oldest sync by moving the rest down.
 */
export class SyncRing {
  readonly #w = new ByteWriter();
  #count = 0;
  /** Where a sync is written before it is copied in: the ring then grows once, to fit. */
  static readonly #scratch = new ByteWriter(1024);

  /** How many syncs it holds. */
  get count(): number {
    return this.#count;
  }

  /** Bytes used (for tests and the benchmark). */
  get byteLength(): number {
    return this.#w.length;
  }

  /**
   * Appends a sync.
   * @param s the sync, copied as bytes
   */
  push(s: SyncRecord): void {
    const scratch = SyncRing.#scratch;
    scratch.length = 0;
    writeSync(scratch, s);
    this.#w.reserve(4 + scratch.length);
    this.#w.u32(scratch.length);
    this.#w.bytes.set(scratch.bytes.subarray(0, scratch.length), this.#w.length);
    this.#w.length += scratch.length;
    this.#count++;
  }

  /** Drops the oldest sync (none when empty). */
  dropOldest(): void {
    if (this.#count === 0) return;
    const cut = 4 + new ByteReader(this.#w.bytes).u32();
    this.#w.bytes.copyWithin(0, cut, this.#w.length);
    this.#w.length -= cut;
    this.#count--;
    // A pod whose syncs got smaller (its start is over) gives the room back;
    // between 1× and 1.5× nothing moves, so syncs of varying size do not
    // reallocate the buffer back and forth.
    if (this.#w.bytes.length > 256 && this.#w.length * 1.5 < this.#w.bytes.length) {
      this.#w.resize(this.#w.length + Math.ceil(this.#w.length / 8));
    }
  }

  /** @returns every sync held, oldest first, as new objects */
  records(): SyncRecord[] {
    const out: SyncRecord[] = [];
    const r = new ByteReader(this.#w.bytes.subarray(0, this.#w.length));
    for (let i = 0; i < this.#count; i++) {
      const end = r.u32() + r.pos;
      out.push(readSync(r));
      if (r.pos !== end) throw new RangeError("trace record: length does not match its bytes");
    }
    return out;
  }
}
