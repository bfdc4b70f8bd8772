/**
 * Plain-text replies, and the handler shape the kubelet server mounts (lib/server's).
 *
 * @module
 */

export { type Handler, textResponse } from "../server/mod.ts";
