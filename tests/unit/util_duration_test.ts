import assert from "node:assert/strict";
import { formatDuration, parseDuration, parseSignedDuration } from "../../lib/util/duration.ts";

/**
 * `time.Duration(ns).String()` as Go prints it, for each nanosecond count
 * (printed by Go 1.26's time package; the table is the reference, not our
 * reading of its rules).
 */
const GO_STRINGS: [ns: number, text: string][] = [
  [0, "0s"],
  [1, "1ns"],
  [999, "999ns"],
  [1000, "1µs"],
  [1500, "1.5µs"],
  [999999, "999.999µs"],
  [1000000, "1ms"],
  [1500000, "1.5ms"],
  [250000000, "250ms"],
  [500000000, "500ms"],
  [999000000, "999ms"],
  [1000000000, "1s"],
  [1500000000, "1.5s"],
  [1234000000, "1.234s"],
  [1234567000, "1.234567s"],
  [1234567891, "1.234567891s"],
  [10000000000, "10s"],
  [59999000000, "59.999s"],
  [60000000000, "1m0s"],
  [62500000000, "1m2.5s"],
  [80000000000, "1m20s"],
  [300000000000, "5m0s"],
  [3599999000000, "59m59.999s"],
  [3600000000000, "1h0m0s"],
  [5400000000000, "1h30m0s"],
  [7200000000000, "2h0m0s"],
  [7261001000000, "2h1m1.001s"],
  [90061001000000, "25h1m1.001s"],
  [360000000000000, "100h0m0s"],
  [-1, "-1ns"],
  [-1500000, "-1.5ms"],
  [-10000000000, "-10s"],
  [-62500000000, "-1m2.5s"],
  [-7200000000000, "-2h0m0s"],
];

Deno.test("formatDuration() prints milliseconds as Go's Duration.String() prints the same span", () => {
  for (const [ns, text] of GO_STRINGS) assert.equal(formatDuration(ns / 1e6), text, `${ns}ns`);
});

Deno.test("formatDuration() reads back what parseDuration() reads", () => {
  for (const text of ["1.5s", "1m0s", "500ms", "2h0m0s", "1.234567s", "100µs", "1m30s"]) {
    assert.equal(formatDuration(parseDuration(text)), text);
  }
  assert.equal(formatDuration(parseSignedDuration("-1m30s")), "-1m30s");
});
