/**
 * Plain-text replies, and the handler shape the kubelet server mounts (lib/server's).
 *
 * @module
 */

export type { Handler } from "../server/mod.ts";

/**
 * A plain-text reply, as Go's http.Error and go-restful's WriteError send them.
 * @param status the HTTP status
 * @param text the body
 * @returns the response
 */
export function textResponse(status: number, text: string): Response {
  return new Response(text, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" },
  });
}
