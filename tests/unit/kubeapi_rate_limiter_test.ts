import assert from "node:assert/strict";
import { TokenBucket } from "../../lib/kubeapi/rate_limiter.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { flush } from "../kit/mod.ts";

Deno.test("TokenBucket.wait() lets a full burst through without waiting", async () => {
  const clock = new FakeClock();
  const bucket = new TokenBucket({ qps: 5, burst: 3, clock });
  for (let i = 0; i < 3; i++) await bucket.wait();
  assert.equal(clock.pendingTimers, 0);
  assert.equal(bucket.tokens, 0);
});

Deno.test("TokenBucket.wait() waits for the next token at qps once the burst is spent", async () => {
  const clock = new FakeClock();
  const bucket = new TokenBucket({ qps: 10, burst: 1, clock });
  await bucket.wait();
  const order: number[] = [];
  const a = bucket.wait().then(() => order.push(1));
  const b = bucket.wait().then(() => order.push(2));
  await flush(5);
  assert.deepEqual(order, []);
  clock.tick(99);
  await flush(5);
  assert.deepEqual(order, [], "a token takes 100ms at 10 qps");
  clock.tick(1);
  await flush(5);
  assert.deepEqual(order, [1]);
  clock.tick(100);
  await Promise.all([a, b]);
  assert.deepEqual(order, [1, 2], "waiters are served in arrival order");
});

Deno.test("TokenBucket.wait() refills up to burst after a quiet period", async () => {
  const clock = new FakeClock();
  const bucket = new TokenBucket({ qps: 50, burst: 100, clock });
  for (let i = 0; i < 100; i++) await bucket.wait();
  clock.tick(10_000);
  assert.equal(bucket.tokens, 100, "never more than burst");
  for (let i = 0; i < 100; i++) await bucket.wait();
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("TokenBucket.wait() gives the reserved token back when aborted", async () => {
  const clock = new FakeClock();
  const bucket = new TokenBucket({ qps: 1, burst: 1, clock });
  await bucket.wait();
  const ac = new AbortController();
  const waiting = bucket.wait(ac.signal);
  assert.ok(bucket.tokens < 0);
  ac.abort(new Error("stop"));
  await assert.rejects(waiting, /stop/);
  assert.equal(bucket.tokens, 0);
  clock.tick(1000);
  await bucket.wait();
  assert.equal(clock.pendingTimers, 0, "the next caller got the refilled token at once");
});

Deno.test("TokenBucket.wait() does not limit when qps <= 0", async () => {
  const clock = new FakeClock();
  const bucket = new TokenBucket({ qps: 0, burst: 1, clock });
  for (let i = 0; i < 1000; i++) await bucket.wait();
  assert.equal(clock.pendingTimers, 0);
});
