import assert from "node:assert/strict";
import {
  CriError,
  GrpcCode,
  grpcCodeName,
  isDeadlineExceeded,
  isNotFound,
  isUnavailable,
} from "../../lib/cri/errors.ts";

Deno.test("CriError names the call, the object and the Go-style code in its message", () => {
  const cause = new Error("14 UNAVAILABLE: connect ENOENT");
  const err = new CriError({
    call: "StopContainer",
    object: "3f2a",
    code: GrpcCode.UNAVAILABLE,
    details: "connect ENOENT",
    cause,
  });
  assert.equal(
    err.message,
    'StopContainer "3f2a": rpc error: code = Unavailable desc = connect ENOENT',
  );
  assert.equal(err.name, "CriError");
  assert.equal(err.call, "StopContainer");
  assert.equal(err.object, "3f2a");
  assert.equal(err.details, "connect ENOENT");
  assert.equal(err.cause, cause);
});

Deno.test("CriError leaves the object out of the message for calls about no object", () => {
  const err = new CriError({ call: "Version", code: GrpcCode.DEADLINE_EXCEEDED, details: "late" });
  assert.equal(err.message, "Version: rpc error: code = DeadlineExceeded desc = late");
  assert.equal(err.object, undefined);
  assert.equal("cause" in err, false);
});

Deno.test("isNotFound() is true only for NotFound CriErrors, also when wrapped as a cause", () => {
  const notFound = new CriError({ call: "RemoveContainer", object: "c", code: 5, details: "gone" });
  assert.equal(isNotFound(notFound), true);
  assert.equal(isNotFound(new Error("sync failed", { cause: notFound })), true);
  assert.equal(isNotFound(new CriError({ call: "RemoveContainer", code: 2, details: "x" })), false);
  assert.equal(isNotFound(Object.assign(new Error("not ours"), { code: 5 })), false);
  assert.equal(isNotFound("NotFound"), false);
  assert.equal(isNotFound(undefined), false);
});

Deno.test("isUnavailable() and isDeadlineExceeded() classify by code", () => {
  const down = new CriError({ call: "Version", code: GrpcCode.UNAVAILABLE, details: "down" });
  const slow = new CriError({ call: "Version", code: GrpcCode.DEADLINE_EXCEEDED, details: "slow" });
  assert.equal(isUnavailable(down), true);
  assert.equal(isUnavailable(slow), false);
  assert.equal(isDeadlineExceeded(slow), true);
  assert.equal(isDeadlineExceeded(down), false);
  assert.equal(isDeadlineExceeded(new Error("outer", { cause: slow })), true);
});

Deno.test("grpcCodeName() spells codes as Go's grpc does", () => {
  assert.equal(grpcCodeName(0), "OK");
  assert.equal(grpcCodeName(1), "Canceled");
  assert.equal(grpcCodeName(5), "NotFound");
  assert.equal(grpcCodeName(16), "Unauthenticated");
  assert.equal(grpcCodeName(42), "Code(42)");
});
