/**
 * Plain HTTP responses written straight onto a socket: after the server's
 * `upgrade` event there is no response object, so a refusal before the
 * protocol switch has to be written by hand.
 *
 * @module
 */

import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";

/**
 * Writes a complete `text/plain` HTTP/1.1 response and ends the socket.
 * @param socket the client's socket
 * @param status the HTTP status
 * @param message the body (a newline is added, as Go's http.Error does)
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
  if (socket.destroyed || !socket.writable) {
    done?.();
    return;
  }
  const body = new TextEncoder().encode(message.endsWith("\n") ? message : message + "\n");
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Unknown"}`,
    "Content-Type: text/plain; charset=utf-8",
    "X-Content-Type-Options: nosniff",
    `Content-Length: ${body.length}`,
    "Connection: close",
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.write(lines.join("\r\n") + "\r\n\r\n");
  socket.end(body, () => {
    socket.destroy();
    done?.();
  });
}
