import { strictEqual } from "node:assert";
import {
  type BackoffEntry,
  BackoffStore,
  DEFAULT_BACKOFF_INITIAL_MS,
  DEFAULT_BACKOFF_MAX_MS,
  isInBackoff,
  nextBackoff,
} from "../../lib/util/backoff.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { formatDuration } from "../../lib/util/duration.ts";

const T0 = Date.parse("2026-01-01T00:00:00Z");

Deno.test("backoff defaults are upstream's 10s initial and 300s maximum", () => {
  strictEqual(DEFAULT_BACKOFF_INITIAL_MS, 10_000);
  strictEqual(DEFAULT_BACKOFF_MAX_MS, 300_000);
});

Deno.test("nextBackoff() starts at 10s for a key with no entry", () => {
  const entry = nextBackoff(new Map(), "k", T0, T0 + 1);
  strictEqual(entry.delayMs, 10_000);
  strictEqual(entry.lastUpdate, T0 + 1);
});

Deno.test("nextBackoff() doubles the delay on each restart up to the 300s cap", () => {
  const state = new Map<string, BackoffEntry>();
  const seen: number[] = [];
  let now = T0;
  for (let i = 0; i < 8; i++) {
    const entry = nextBackoff(state, "k", now - 1_000, now);
    state.set("k", entry);
    seen.push(entry.delayMs / 1000);
    now += entry.delayMs + 2_000;
  }
  strictEqual(seen.join(","), "10,20,40,80,160,300,300,300");
});

Deno.test("nextBackoff() resets to 10s when the entry is older than 10 minutes", () => {
  const state = new Map([["k", { delayMs: 300_000, lastUpdate: T0 }]]);
  strictEqual(nextBackoff(state, "k", T0 + 600_000, T0 + 600_000).delayMs, 300_000);
  strictEqual(nextBackoff(state, "k", T0 + 600_001, T0 + 600_001).delayMs, 10_000);
});

Deno.test("nextBackoff() honours custom initial and maximum delays", () => {
  const state = new Map([["k", { delayMs: 4_000, lastUpdate: T0 }]]);
  const entry = nextBackoff(state, "k", T0, T0, { initialMs: 1_000, maxMs: 5_000 });
  strictEqual(entry.delayMs, 5_000);
});

Deno.test("isInBackoff() is false without an entry", () => {
  strictEqual(isInBackoff(undefined, T0, T0), false);
});

Deno.test("isInBackoff() is true until the delay since the finish time has passed", () => {
  const entry = { delayMs: 20_000, lastUpdate: T0 };
  strictEqual(isInBackoff(entry, T0, T0 + 19_999), true);
  strictEqual(isInBackoff(entry, T0, T0 + 20_000), false);
});

Deno.test("isInBackoff() is false once the entry has expired for the event", () => {
  const entry = { delayMs: 300_000, lastUpdate: T0 };
  strictEqual(isInBackoff(entry, T0 + 600_001, T0 + 600_002), false);
});

Deno.test("BackoffStore.next() records restarts the planner then sees in state", () => {
  const clock = new FakeClock(T0);
  const store = new BackoffStore();
  strictEqual(store.next("k", clock.now(), clock.now()).delayMs, 10_000);
  strictEqual(store.next("k", clock.now(), clock.now()).delayMs, 20_000);
  strictEqual(store.state.get("k")?.delayMs, 20_000);
  store.delete("k");
  strictEqual(store.size, 0);
});

Deno.test("BackoffStore.gc() drops entries not updated for twice the maximum", () => {
  const store = new BackoffStore();
  store.set("old", { delayMs: 10_000, lastUpdate: T0 });
  store.set("new", { delayMs: 10_000, lastUpdate: T0 + 300_000 });
  strictEqual(store.gc(T0 + 600_000), 0);
  strictEqual(store.gc(T0 + 600_001), 1);
  strictEqual(store.get("old"), undefined);
  strictEqual(store.get("new")?.delayMs, 10_000);
});

Deno.test("formatDuration() prints backoff delays as Go's Duration.String does", () => {
  const texts = [10_000, 20_000, 80_000, 160_000, 300_000, 500, 0, 3_900_000, 1_500].map(
    formatDuration,
  );
  strictEqual(texts.join(" "), "10s 20s 1m20s 2m40s 5m0s 500ms 0s 1h5m0s 1.5s");
});
