import assert from "node:assert/strict";
import {
  intValue,
  isValidQuantity,
  milliValue,
  parseQuantity,
  QuantityError,
} from "../../lib/api/quantity.ts";

Deno.test("parseQuantity() reads plain, fractional and signed decimals", () => {
  assert.equal(parseQuantity("1"), 1);
  assert.equal(parseQuantity("0.5"), 0.5);
  assert.equal(parseQuantity(".5"), 0.5);
  assert.equal(parseQuantity("2."), 2);
  assert.equal(parseQuantity("-3"), -3);
  assert.equal(parseQuantity("+3"), 3);
});

Deno.test("parseQuantity() accepts numbers as written in YAML", () => {
  assert.equal(parseQuantity(2), 2);
  assert.equal(parseQuantity(0.25), 0.25);
  assert.throws(() => parseQuantity(Infinity), QuantityError);
});

Deno.test("parseQuantity() applies decimal SI suffixes", () => {
  assert.equal(parseQuantity("100m"), 0.1);
  assert.equal(parseQuantity("250u"), 0.00025);
  assert.equal(parseQuantity("5n"), 5e-9);
  assert.equal(parseQuantity("1k"), 1000);
  assert.equal(parseQuantity("1G"), 1e9);
  assert.equal(parseQuantity("2T"), 2e12);
  assert.equal(parseQuantity("1E"), 1e18);
});

Deno.test("parseQuantity() applies binary SI suffixes", () => {
  assert.equal(parseQuantity("1Ki"), 1024);
  assert.equal(parseQuantity("128Mi"), 134217728);
  assert.equal(parseQuantity("1.5Gi"), 1.5 * 2 ** 30);
  assert.equal(parseQuantity("1Ti"), 2 ** 40);
});

Deno.test("parseQuantity() applies decimal exponents", () => {
  assert.equal(parseQuantity("1e3"), 1000);
  assert.equal(parseQuantity("1E3"), 1000);
  assert.equal(parseQuantity("5e-3"), 0.005);
  assert.equal(parseQuantity("2e+2"), 200);
});

Deno.test("parseQuantity() rejects bad input with a message naming it", () => {
  assert.throws(() => parseQuantity("12Qi"), /invalid quantity "12Qi"/);
  for (const bad of ["", "abc", "1.2.3", "Mi", "1 Mi", " 1", "1mi", "1e", "--1", "1KiB"]) {
    assert.throws(
      () => parseQuantity(bad),
      QuantityError,
      `expected ${JSON.stringify(bad)} to fail`,
    );
  }
});

Deno.test("QuantityError carries the offending quantity", () => {
  try {
    parseQuantity("7X");
    assert.fail("no error");
  } catch (err) {
    assert.ok(err instanceof QuantityError);
    assert.equal(err.quantity, "7X");
  }
});

Deno.test("milliValue() gives thousandths without float noise and rounds up", () => {
  assert.equal(milliValue("100m"), 100);
  assert.equal(milliValue("0.1"), 100);
  assert.equal(milliValue("0.5"), 500);
  assert.equal(milliValue("1"), 1000);
  assert.equal(milliValue(2), 2000);
  assert.equal(milliValue("1.0001"), 1001);
  assert.equal(milliValue("1u"), 1);
});

Deno.test("intValue() gives bytes for memory quantities, rounding up", () => {
  assert.equal(intValue("128Mi"), 134217728);
  assert.equal(intValue("1G"), 1_000_000_000);
  assert.equal(intValue("100m"), 1);
  assert.equal(intValue("1.5"), 2);
});

Deno.test("isValidQuantity() reports validity without throwing", () => {
  assert.equal(isValidQuantity("64Mi"), true);
  assert.equal(isValidQuantity("64MB"), false);
});
