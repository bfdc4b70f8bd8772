/**
 * Turning failed responses and thrown values into messages: metav1.Status
 * bodies become {@link ApiError}s as client-go builds them.
 *
 * @module
 */

import type { TransportResponse } from "./transport.ts";
import { ApiError } from "./types.ts";

/** Reasons client-go gives an HTTP status that came without a metav1.Status body. */
const REASON_BY_STATUS: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  406: "NotAcceptable",
  409: "Conflict",
  410: "Gone",
  415: "UnsupportedMediaType",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

/**
 * The ApiError for a non-2xx response.
 * @param method HTTP method
 * @param path apiserver path
 * @param res the response (status, statusText)
 * @param text its body
 * @returns an ApiError with the Status reason, or one derived from the HTTP status
 */
export function apiError(
  method: string,
  path: string,
  res: TransportResponse,
  text: string,
): ApiError {
  let status: { kind?: string; reason?: string; message?: string } | undefined;
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed === "object" && parsed.kind === "Status") status = parsed;
  } catch {
    // Not a metav1.Status (a proxy or a plain-text error); use the raw text.
  }
  const reason = status?.reason || REASON_BY_STATUS[res.status] ||
    (res.status >= 500 ? "InternalError" : "Unknown");
  const message = status?.message || text.trim().slice(0, 512) || res.statusText;
  return new ApiError(`${method} ${path}: ${res.status} ${reason}: ${message}`, res.status, reason);
}

/** A thrown value as text, with its direct cause. */
export function errorText(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : "";
    return `${err.message}${cause}`;
  }
  return String(err);
}
