/**
 * Event correlation as client-go's tools/record/events_cache.go does it,
 * before an event goes to the apiserver:
 *
 * 1. aggregate: more than 10 events that differ only in message for the same
 *    object and reason within 10 minutes become one
 *    "(combined from similar events): …" event;
 * 2. observe: an event identical to one already sent (same object, field
 *    path, type, reason, message) becomes a PATCH of that event's `count`;
 * 3. spam filter: a token bucket per source + object (burst 25, one token
 *    per 5 minutes) drops the rest.
 *
 * Each cache is an LRU bounded at 4096 entries, as upstream.
 *
 * @module
 */

import type { Event } from "../api/cluster_types.ts";
import { metaTime } from "../util/time.ts";

/** Upstream `maxLruCacheEntries`. */
const LRU_SIZE = 4096;
/** Upstream `defaultAggregateMaxEvents` and `defaultAggregateIntervalInSeconds`. */
const AGGREGATE_MAX_EVENTS = 10;
const AGGREGATE_INTERVAL_MS = 600_000;
/** Upstream `defaultSpamBurst` and `defaultSpamQPS` (1/300). */
export const SPAM_BURST = 25;
export const SPAM_REFILL_MS = 300_000;

/** A small LRU map: reads refresh an entry, inserts evict the oldest. */
class Lru<V> {
  #map = new Map<string, V>();
  constructor(readonly size: number) {}
  get(key: string): V | undefined {
    const v = this.#map.get(key);
    if (v !== undefined) {
      this.#map.delete(key);
      this.#map.set(key, v);
    }
    return v;
  }
  set(key: string, value: V): void {
    this.#map.delete(key);
    this.#map.set(key, value);
    if (this.#map.size > this.size) this.#map.delete(this.#map.keys().next().value!);
  }
}

function objectKey(e: Event): string[] {
  const o = e.involvedObject;
  return [
    e.source?.component ?? "",
    e.source?.host ?? "",
    o.kind ?? "",
    o.namespace ?? "",
    o.name ?? "",
    o.uid ?? "",
    o.apiVersion ?? "",
  ];
}

/** Upstream getEventKey: everything that makes two events "the same". */
function eventKey(e: Event): string {
  const o = e.involvedObject;
  return [...objectKey(e), o.fieldPath ?? "", e.type, e.reason, e.message].join("\x00");
}

/** Upstream EventAggregatorByReasonFunc: same object and reason, any message. */
function aggregateKey(e: Event): string {
  return [...objectKey(e), e.type, e.reason, e.reportingComponent ?? "", e.reportingInstance ?? ""]
    .join("\x00");
}

/** Upstream getSpamKey: source and object only. */
function spamKey(e: Event): string {
  return objectKey(e).join("\x00");
}

interface Observed {
  name: string;
  count: number;
  firstTimestamp: string;
  resourceVersion?: string;
}

/** What {@link EventCorrelator.correlate} decides for one event. */
export type Correlation =
  | { skip: true }
  | { skip: false; event: Event; key: string; patch?: Record<string, unknown> };

/** Aggregation, deduplication and spam filtering of outgoing events. */
export class EventCorrelator {
  #aggregates = new Lru<{ messages: Set<string>; last: number }>(LRU_SIZE);
  #observed = new Lru<Observed>(LRU_SIZE);
  #buckets = new Lru<{ tokens: number; at: number }>(LRU_SIZE);

  /**
   * Decides how to send `event`.
   * @param event a new event (count 1)
   * @param now epoch ms
   * @param newName a fresh event name for an aggregate event
   * @returns skip, or the event to POST (no patch) or to PATCH (with `patch`)
   */
  correlate(event: Event, now: number, newName: () => string): Correlation {
    const { event: agg, key } = this.#aggregate(event, now, newName);
    const seen = this.#observed.get(key);
    let out = agg;
    let patch: Record<string, unknown> | undefined;
    if (seen) {
      out = {
        ...agg,
        metadata: { ...agg.metadata, name: seen.name },
        count: seen.count + 1,
        firstTimestamp: seen.firstTimestamp,
      };
      if (seen.resourceVersion !== undefined) out.metadata.resourceVersion = seen.resourceVersion;
      patch = { count: out.count, lastTimestamp: out.lastTimestamp, message: out.message };
    }
    this.#observed.set(key, {
      name: out.metadata.name!,
      count: out.count ?? 1,
      firstTimestamp: out.firstTimestamp!,
    });
    if (!this.#allow(out, now)) return { skip: true };
    return patch ? { skip: false, event: out, key, patch } : { skip: false, event: out, key };
  }

  /**
   * Records what the apiserver returned, so the next PATCH names it right.
   * @param key the correlation key from {@link correlate}
   * @param written the Event the apiserver returned
   */
  written(key: string, written: Event): void {
    const seen = this.#observed.get(key);
    const name = written.metadata?.name;
    if (!name) return;
    const rec: Observed = {
      name,
      count: Math.max(written.count ?? 1, seen?.count ?? 1),
      firstTimestamp: written.firstTimestamp ?? seen?.firstTimestamp ?? "",
    };
    if (written.metadata.resourceVersion !== undefined) {
      rec.resourceVersion = written.metadata.resourceVersion;
    }
    this.#observed.set(key, rec);
  }

  #aggregate(event: Event, now: number, newName: () => string): { event: Event; key: string } {
    const aKey = aggregateKey(event);
    let rec = this.#aggregates.get(aKey);
    if (!rec || now - rec.last > AGGREGATE_INTERVAL_MS) rec = { messages: new Set(), last: now };
    rec.messages.add(event.message);
    rec.last = now;
    this.#aggregates.set(aKey, rec);
    if (rec.messages.size < AGGREGATE_MAX_EVENTS) return { event, key: eventKey(event) };
    // Keep the set bounded, as upstream pops one entry.
    rec.messages.delete(rec.messages.values().next().value!);
    const t = metaTime(now);
    const combined: Event = {
      ...event,
      metadata: { name: newName(), namespace: event.metadata.namespace! },
      message: `(combined from similar events): ${event.message}`,
      count: 1,
      firstTimestamp: t,
      lastTimestamp: t,
    };
    return { event: combined, key: aKey };
  }

  /** Token bucket per source + object; true when the event may go. */
  #allow(event: Event, now: number): boolean {
    const key = spamKey(event);
    const b = this.#buckets.get(key) ?? { tokens: SPAM_BURST, at: now };
    b.tokens = Math.min(SPAM_BURST, b.tokens + (now - b.at) / SPAM_REFILL_MS);
    b.at = now;
    const ok = b.tokens >= 1;
    if (ok) b.tokens -= 1;
    this.#buckets.set(key, b);
    return ok;
  }
}
