import assert from "node:assert/strict";
import { joinHostPort } from "../../lib/util/net.ts";

Deno.test("joinHostPort() brackets an IPv6 host once, as Go's net.JoinHostPort", () => {
  assert.equal(joinHostPort("10.0.0.1", 80), "10.0.0.1:80");
  assert.equal(joinHostPort("example.com", 8080), "example.com:8080");
  assert.equal(joinHostPort("fd00::1", 443), "[fd00::1]:443");
  assert.equal(joinHostPort("[fd00::1]", 443), "[fd00::1]:443");
});
