/**
 * A stopped container's termination message, read back as upstream's
 * kubelet reads it when it converts a CRI status (kuberuntime_container.go:
 * convertToKubeContainerStatus, getTerminationMessage,
 * readLastStringFromContainerLogs):
 *
 * ```
 * exited container ──► the mount at its terminationMessagePath (annotation)
 *                       │ the host file, its last 4096 bytes
 *                       ├─ text ────────────────────────────► message
 *                       └─ empty or missing, and FallbackToLogsOnError
 *                          and exit code ≠ 0 and not ContainerCannotRun
 *                            └─► the log's last 80 lines, last 2048 bytes
 * CRI's own message (StartError's error) comes first, then ": " and the text.
 * ```
 *
 * The pod-wide budget (12 KiB shared by the pod's containers) is the status
 * manager's (lib/status `normalizeStatus`).
 *
 * @module
 */

import { posix } from "node:path";
import type { ContainerStatus as CriContainerStatus } from "../cri/types.ts";
import { ContainerState } from "../cri/types.ts";
import { Annotations } from "./types.ts";

/** Upstream `MaxContainerTerminationMessageLength`: the file's last this many bytes. */
export const MAX_TERMINATION_MESSAGE_BYTES = 4 * 1024;
/** Upstream `MaxContainerTerminationMessageLogLength`: the log's last this many bytes. */
export const MAX_TERMINATION_MESSAGE_LOG_BYTES = 2 * 1024;
/** Upstream `MaxContainerTerminationMessageLogLines`. */
export const MAX_TERMINATION_MESSAGE_LOG_LINES = 80;

/**
 * Reads the end of a container's CRI log (lib/logs `readLogTail`; passed
 * in, as lib/logs sits above this folder).
 * @param path the log file
 * @param lines lines from the end
 * @param maxBytes bytes from the end of those lines
 * @returns the log's content without the CRI prefixes
 */
export type ContainerLogTailReader = (
  path: string,
  lines: number,
  maxBytes: number,
) => Promise<Uint8Array>;

const decoder = new TextDecoder();

/** The last `max` bytes of a file. */
async function readAtMost(path: string, max: number): Promise<Uint8Array> {
  const file = await Deno.open(path, { read: true });
  try {
    const size = (await file.stat()).size;
    const start = Math.max(0, size - max);
    await file.seek(start, Deno.SeekMode.Start);
    const buf = new Uint8Array(size - start);
    let at = 0;
    while (at < buf.length) {
      const n = await file.read(buf.subarray(at));
      if (n === null) break;
      at += n;
    }
    return buf.subarray(0, at);
  } finally {
    file.close();
  }
}

/**
 * Upstream `getTerminationMessage`: the text of the file mounted at the
 * container's terminationMessagePath, and whether the log should be read
 * instead.
 */
async function fromFile(
  status: CriContainerStatus,
  messagePath: string,
  fallbackToLogs: boolean,
): Promise<{ text: string; checkLogs: boolean }> {
  if (messagePath === "") return { text: "", checkLogs: fallbackToLogs };
  const wanted = posix.normalize(`/${messagePath}`).replace(/(.)\/+$/, "$1");
  const mount = (status.mounts ?? []).find((m) => m.containerPath === wanted);
  if (mount === undefined) return { text: "", checkLogs: fallbackToLogs };
  try {
    const data = await readAtMost(mount.hostPath, MAX_TERMINATION_MESSAGE_BYTES);
    return { text: decoder.decode(data), checkLogs: fallbackToLogs && data.length === 0 };
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return { text: "", checkLogs: fallbackToLogs };
    return {
      text: `Error on reading termination log ${mount.hostPath}: ${(err as Error).message}`,
      checkLogs: false,
    };
  }
}

/**
 * The message an exited container's API status shows: the runtime's
 * message, enriched with what the container left at its
 * terminationMessagePath or (FallbackToLogsOnError, failed) in its log.
 * Containers in any other state keep the runtime's message.
 * @param status the CRI container status (annotations, mounts, log path)
 * @param readLogTail reads the end of the container's log
 * @returns the message ("" when there is none)
 */
export async function terminationMessage(
  status: CriContainerStatus,
  readLogTail: ContainerLogTailReader,
): Promise<string> {
  const runtimeMessage = status.message ?? "";
  if (status.state !== ContainerState.CONTAINER_EXITED) return runtimeMessage;
  const annotations = status.annotations ?? {};
  const fallbackToLogs =
    annotations[Annotations.terminationMessagePolicy] === "FallbackToLogsOnError" &&
    (status.exitCode ?? 0) !== 0 && status.reason !== "ContainerCannotRun";
  let { text, checkLogs } = await fromFile(
    status,
    annotations[Annotations.terminationMessagePath] ?? "",
    fallbackToLogs,
  );
  if (checkLogs) {
    try {
      text = decoder.decode(
        await readLogTail(
          status.logPath ?? "",
          MAX_TERMINATION_MESSAGE_LOG_LINES,
          MAX_TERMINATION_MESSAGE_LOG_BYTES,
        ),
      );
    } catch (err) {
      text = `Error on reading termination message from logs: ${(err as Error).message}`;
    }
  }
  if (text === "") return runtimeMessage;
  return runtimeMessage === "" ? text : `${runtimeMessage}: ${text}`;
}
