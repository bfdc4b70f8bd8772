/** startDeadline(): its signal, its timer, and whether its time is up. */

import assert from "node:assert/strict";
import { startDeadline } from "../../lib/util/deadline.ts";

/** Keeps the event loop from turning for `ms`: no timer can run meanwhile. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) { /* busy */ }
}

Deno.test("startDeadline() is expired once its time has passed, before its timer has run", () => {
  const deadline = startDeadline(new AbortController().signal, 5);
  assert.equal(deadline.expired, false);
  busy(10);
  assert.equal(deadline.expired, true);
  assert.equal(deadline.signal.aborted, false);
  deadline.clear();
});

Deno.test("startDeadline() aborts its signal at the deadline, and with its parent without expiring", async () => {
  const deadline = startDeadline(new AbortController().signal, 1);
  await new Promise((resolve) => deadline.signal.addEventListener("abort", resolve));
  assert.equal(deadline.expired, true);
  deadline.clear();

  const parent = new AbortController();
  const cancelled = startDeadline(parent.signal, 5);
  parent.abort();
  assert.equal(cancelled.signal.aborted, true);
  busy(10);
  assert.equal(cancelled.expired, false);
  cancelled.clear();
});
