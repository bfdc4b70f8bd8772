import assert from "node:assert/strict";
import { Slots } from "../../lib/util/slots.ts";

/** A task that stays in flight until `release()`. */
function held(log: string[], name: string) {
  let release!: () => void;
  let fail!: (err: Error) => void;
  const done = new Promise<void>((resolve, reject) => {
    release = resolve;
    fail = reject;
  });
  return {
    task: async () => {
      log.push(`start ${name}`);
      await done;
      return name;
    },
    release,
    fail,
  };
}

/** Lets every settled promise's reactions run. */
const settle = () => new Promise((r) => setTimeout(r, 0));

Deno.test("Slots runs at most its limit at once, the rest in arrival order as slots free", async () => {
  const slots = new Slots(2);
  const log: string[] = [];
  const [a, b, c, d] = ["a", "b", "c", "d"].map((n) => held(log, n));
  const results = [a, b, c, d].map((h) => slots.run(h!.task));
  await settle();
  assert.deepEqual(log, ["start a", "start b"]);
  assert.equal(slots.waiting, 2);
  b!.release();
  await settle();
  assert.deepEqual(log, ["start a", "start b", "start c"]);
  a!.release();
  await settle();
  assert.deepEqual(log, ["start a", "start b", "start c", "start d"]);
  assert.equal(slots.waiting, 0);
  c!.release();
  d!.release();
  assert.deepEqual(await Promise.all(results), ["a", "b", "c", "d"]);
});

Deno.test("Slots frees a failed task's slot for the next one and passes the failure on", async () => {
  const slots = new Slots(1);
  const log: string[] = [];
  const [a, b] = ["a", "b"].map((n) => held(log, n));
  const first = slots.run(a!.task);
  const second = slots.run(b!.task);
  await settle();
  a!.fail(new Error("mount: permission denied"));
  await assert.rejects(first, /permission denied/);
  await settle();
  assert.deepEqual(log, ["start a", "start b"]);
  b!.release();
  assert.equal(await second, "b");
});

Deno.test("Slots refuses a limit that is not a positive whole number", () => {
  for (const bad of [0, -1, 1.5, NaN]) {
    assert.throws(() => new Slots(bad), RangeError);
  }
});
