// Upstream retries webhook calls (TokenReview, SubjectAccessReview) with
// DefaultAuthWebhookRetryBackoff when the failure looks transient
// (webhook.DefaultShouldRetry); a refused or malformed review is not retried.

import { ApiError } from "../kubeapi/mod.ts";
import type { Clock } from "../util/clock.ts";

/** Exponential backoff of webhook calls. */
export interface RetryBackoff {
  /** The first wait. */
  initialMs: number;
  factor: number;
  /** Attempts in all, the first included. */
  steps: number;
}

/** Upstream's DefaultAuthWebhookRetryBackoff (500 ms, ×1.5, 5 steps; no jitter here). */
export const DEFAULT_WEBHOOK_RETRY_BACKOFF: RetryBackoff = {
  initialMs: 500,
  factor: 1.5,
  steps: 5,
};

/** Whether a failed webhook call is worth another try. */
export function shouldRetry(err: unknown): boolean {
  if (err instanceof ApiError) {
    return ["InternalError", "Timeout", "TooManyRequests"].includes(err.reason) ||
      err.status === 429 || err.status === 504;
  }
  // A connection that failed or dropped; an abort is final.
  return !(err instanceof DOMException && err.name === "AbortError");
}

/** Calls `fn` until it succeeds, fails for good, or the steps run out. */
export async function withRetry<T>(
  fn: () => Promise<T>,
  backoff: RetryBackoff,
  clock: Clock,
): Promise<T> {
  let delay = backoff.initialMs;
  for (let attempt = 1;; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= backoff.steps || !shouldRetry(err)) throw err;
      await clock.sleep(delay);
      delay *= backoff.factor;
    }
  }
}
