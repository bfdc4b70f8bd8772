/**
 * Errors from CRI calls, classified by behaviour so that callers can make
 * teardown idempotent (`isNotFound`) and tell a runtime that is down
 * (`isUnavailable`) from one that is slow (`isDeadlineExceeded`).
 *
 * @module
 */

/** gRPC status codes (grpc/doc/statuscodes.md); the numbers are the wire values. */
export const GrpcCode = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

/**
 * The names Go's grpc prints (`codes.Code.String()`), so our messages read
 * like the kubelet's and containerd's logs: `code = NotFound`.
 */
const codeNames = [
  "OK",
  "Canceled",
  "Unknown",
  "InvalidArgument",
  "DeadlineExceeded",
  "NotFound",
  "AlreadyExists",
  "PermissionDenied",
  "ResourceExhausted",
  "FailedPrecondition",
  "Aborted",
  "OutOfRange",
  "Unimplemented",
  "Internal",
  "Unavailable",
  "DataLoss",
  "Unauthenticated",
];

/**
 * The Go-style name of a gRPC status code.
 * @param code a gRPC status code number
 * @returns e.g. `NotFound`, or `Code(42)` for numbers outside the table
 */
export function grpcCodeName(code: number): string {
  return codeNames[code] ?? `Code(${code})`;
}

/** What {@link CriError} is built from. */
export interface CriErrorInit {
  /** The RPC name, e.g. `StopContainer`. */
  call: string;
  /** The gRPC status code. */
  code: number;
  /** The runtime's description (gRPC status details). */
  details: string;
  /** The object the call was about: a container or sandbox id, an image name. */
  object?: string;
  /** The underlying error (the gRPC status error, an abort reason...). */
  cause?: unknown;
}

/**
 * A failed CRI call.
 *
 * The message names the call and the object the way the kubelet logs them:
 * `StopContainer "3f2a…": rpc error: code = NotFound desc = …`.
 */
export class CriError extends Error {
  /** The gRPC status code (see {@link GrpcCode}). */
  readonly code: number;
  /** The RPC name, e.g. `StopContainer`. */
  readonly call: string;
  /** The container/sandbox id or image the call was about, if any. */
  readonly object: string | undefined;
  /** The runtime's description, without our prefix. */
  readonly details: string;

  /** @param init the call, code, details, object and cause */
  constructor(init: CriErrorInit) {
    const subject = init.object === undefined
      ? init.call
      : `${init.call} ${JSON.stringify(init.object)}`;
    super(
      `${subject}: rpc error: code = ${grpcCodeName(init.code)} desc = ${init.details}`,
      init.cause === undefined ? undefined : { cause: init.cause },
    );
    this.name = "CriError";
    this.code = init.code;
    this.call = init.call;
    this.object = init.object;
    this.details = init.details;
  }
}

/**
 * Finds the CriError in an error or its `cause` chain, so that decorators that
 * wrap errors (metrics, logging, the pod sync) keep the classification.
 */
function findCriError(err: unknown): CriError | undefined {
  for (let e: unknown = err, depth = 0; e !== undefined && depth < 16; depth++) {
    if (e instanceof CriError) return e;
    if (!(e instanceof Error)) return undefined;
    e = e.cause;
  }
  return undefined;
}

/**
 * Whether a CRI call failed because its object does not exist.
 * @param err any thrown value
 * @returns true for a CriError (or an error caused by one) with code NotFound
 */
export function isNotFound(err: unknown): boolean {
  return findCriError(err)?.code === GrpcCode.NOT_FOUND;
}

/**
 * Whether a CRI call failed because the runtime could not be reached.
 * @param err any thrown value
 * @returns true for a CriError (or an error caused by one) with code Unavailable
 */
export function isUnavailable(err: unknown): boolean {
  return findCriError(err)?.code === GrpcCode.UNAVAILABLE;
}

/**
 * Whether a CRI call ran past its deadline.
 * @param err any thrown value
 * @returns true for a CriError (or an error caused by one) with code DeadlineExceeded
 */
export function isDeadlineExceeded(err: unknown): boolean {
  return findCriError(err)?.code === GrpcCode.DEADLINE_EXCEEDED;
}
