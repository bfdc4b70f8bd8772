/**
 * The handler shape the kubelet server mounts, and plain-text replies.
 *
 * @module
 */

/** A plain route: a fetch Request in, a Response out (bodies may stream). */
export type Handler = (req: Request, url: URL) => Response | Promise<Response>;

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
