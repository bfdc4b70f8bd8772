/**
 * The streaming endpoints' refusals before the protocol switch, in Go's
 * http.Error shape, written onto the socket (lib/util/raw_http.ts).
 *
 * @module
 */

import type { Duplex } from "node:stream";
import { TEXT_ERROR_HEADERS, writeRawResponse } from "../util/raw_http.ts";

/**
 * Writes a complete `text/plain` HTTP/1.1 response and ends the socket.
 * @param socket the client's socket
 * @param status the HTTP status
 * @param message the body as sent (Go's http.Error ends it with a newline, go-restful's
 *   WriteError does not)
 * @param done called once the response is flushed (or at once if the socket is gone)
 * @param headers extra response headers, e.g. `Retry-After`
 */
export function writeHttpError(
  socket: Duplex,
  status: number,
  message: string,
  done?: () => void,
  headers: Record<string, string> = {},
): void {
  const body = new TextEncoder().encode(message);
  writeRawResponse(socket, status, body, { ...TEXT_ERROR_HEADERS, ...headers }, done);
}
