/**
 * A complete HTTP/1.1 response written straight onto a socket. After a server's
 * `upgrade` event there is no response object, so a refusal before the
 * protocol switch (no route, not authenticated, the runtime said no) is
 * written by hand; the connection is closed after it.
 *
 * @module
 */

import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";

/**
 * Writes the status line, `headers`, Content-Length and `Connection: close`,
 * then the body, and closes the socket once it is flushed. A client gone
 * meanwhile (EPIPE, ECONNRESET) closes it too: the socket has an 'error'
 * listener until then, so the failure cannot escape as an uncaught error.
 * @param socket the client's socket
 * @param status the HTTP status (its reason phrase is Node's)
 * @param body the body
 * @param headers response headers besides Content-Length and Connection
 * @param done called once the response is flushed (or at once if the socket is gone)
 */
export function writeRawResponse(
  socket: Duplex,
  status: number,
  body: Uint8Array,
  headers: Record<string, string> = {},
  done?: () => void,
): void {
  if (socket.destroyed || !socket.writable) {
    done?.();
    return;
  }
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Unknown"}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    `Content-Length: ${body.length}`,
    "Connection: close",
  ];
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    socket.destroy();
    done?.();
  };
  socket.on("error", finish);
  socket.write(lines.join("\r\n") + "\r\n\r\n");
  socket.end(body, finish);
}

/** The headers of a plain-text error, as Go's http.Error sends them. */
export const TEXT_ERROR_HEADERS: Readonly<Record<string, string>> = {
  "Content-Type": "text/plain; charset=utf-8",
  "X-Content-Type-Options": "nosniff",
};
