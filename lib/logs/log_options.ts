/**
 * The query of `/containerLogs`: decoded and validated as upstream decodes a
 * v1.PodLogOptions from URL parameters (apimachinery's query conversions) and
 * validates it (ValidatePodLogOptions), then turned into the reader's options
 * as upstream's logs.NewLogOptions does.
 *
 * @module
 */

import { parseRfc3339 } from "./cri_format.ts";

/** The v1.PodLogOptions fields a kubelet reads. */
export interface PodLogOptions {
  follow: boolean;
  previous: boolean;
  timestamps: boolean;
  tailLines?: number;
  limitBytes?: number;
  sinceSeconds?: number;
  /** Epoch ms; 0 for the zero time (an empty `sinceTime=`). */
  sinceTime?: number;
}

/** What the CRI log reader needs, as upstream's LogOptions. */
export interface LogReadOptions {
  /** Lines from the end; -1 for all. */
  tail: number;
  /** Bytes at most; -1 for no limit. */
  bytes: number;
  /** Records older than this epoch ms are skipped; 0 for none. */
  sinceMs: number;
  follow: boolean;
  timestamps: boolean;
}

/** A query the handler answers with an HTTP error, upstream's status and body. */
export class LogQueryError extends Error {
  /**
   * @param status the HTTP status
   * @param message the response body
   */
  constructor(readonly status: number, message: string) {
    super(message);
    this.name = "LogQueryError";
  }
}

/** Go's strconv.ParseInt(s, 10, 64). */
function parseInt64(text: string): number | undefined {
  if (!/^[+-]?\d+$/.test(text)) return undefined;
  const n = BigInt(text);
  if (n > 9223372036854775807n || n < -9223372036854775808n) return undefined;
  return Number(n);
}

/**
 * Decodes and validates the query of a `/containerLogs` request.
 * @param query the URL's parameters
 * @returns the options
 * @throws LogQueryError 400 `{"message": "Unable to decode query."}` for a value
 *   that does not decode, 422 `{"message": "Invalid request."}` for options
 *   that fail validation
 */
export function parsePodLogQuery(query: URLSearchParams): PodLogOptions {
  const values = new Map<string, string>();
  for (const [k, v] of query) if (!values.has(k)) values.set(k, v);
  // Upstream's backwards compatibility for the "tail" parameter; "all" means no tail.
  const tail = values.get("tail");
  if (tail) {
    if (tail === "all") values.delete("tailLines");
    else values.set("tailLines", tail);
  }
  const undecodable = () => new LogQueryError(400, `{"message": "Unable to decode query."}`);
  const bool = (name: string) => {
    const v = values.get(name);
    return v !== undefined && v !== "0" && v.toLowerCase() !== "false";
  };
  const out: PodLogOptions = {
    follow: bool("follow"),
    previous: bool("previous"),
    timestamps: bool("timestamps"),
  };
  for (const name of ["tailLines", "limitBytes", "sinceSeconds"] as const) {
    const v = values.get(name);
    if (v === undefined) continue;
    const n = parseInt64(v);
    if (n === undefined) throw undecodable();
    out[name] = n;
  }
  const since = values.get("sinceTime");
  if (since !== undefined) {
    if (since === "" || since === "null") out.sinceTime = 0;
    else {
      const t = parseRfc3339(since);
      if (!t) throw undecodable();
      out.sinceTime = t.ms;
    }
  }
  const invalid = (out.tailLines !== undefined && out.tailLines < 0) ||
    (out.limitBytes !== undefined && out.limitBytes < 1) ||
    (out.sinceSeconds !== undefined && out.sinceTime !== undefined) ||
    (out.sinceSeconds !== undefined && out.sinceSeconds < 1);
  if (invalid) throw new LogQueryError(422, `{"message": "Invalid request."}`);
  return out;
}

/**
 * The reader's options for a request, as upstream's NewLogOptions.
 * @param opts the decoded query
 * @param nowMs the time `sinceSeconds` counts back from
 * @returns the options
 */
export function logReadOptions(opts: PodLogOptions, nowMs: number): LogReadOptions {
  let sinceMs = 0;
  if (opts.sinceSeconds !== undefined) sinceMs = nowMs - opts.sinceSeconds * 1000;
  if (opts.sinceTime !== undefined && opts.sinceTime > sinceMs) sinceMs = opts.sinceTime;
  return {
    tail: opts.tailLines ?? -1,
    bytes: opts.limitBytes ?? -1,
    sinceMs,
    follow: opts.follow,
    timestamps: opts.timestamps,
  };
}
