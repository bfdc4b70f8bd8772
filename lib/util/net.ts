/**
 * Network address helpers shared by the probes, the runtime's health check and the
 * service environment variables.
 *
 * @module
 */

/**
 * `host:port`, with brackets around an IPv6 host (Go's net.JoinHostPort; a host
 * already in brackets is left as it is).
 * @param host name or IP
 * @param port port number
 * @returns the address
 */
export function joinHostPort(host: string, port: number): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]:${port}` : `${host}:${port}`;
}
