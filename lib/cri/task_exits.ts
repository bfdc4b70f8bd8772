/**
 * containerd's task exits: a faster signal of a container's death than the relist.
 *
 * containerd serves its own API beside CRI on the same socket; its
 * `containerd.services.events.v1.Events/Subscribe` streams a `/tasks/exit` event the
 * moment a container's (or a sandbox's) process ends. The agent only uses it to relist
 * at once (lib/pleg's `GenericPleg.relistSoon`): the relist stays the source of truth,
 * as with upstream's generic PLEG, whose relist alone notices a death within its 1 s
 * period. (Upstream's Evented PLEG streams CRI's own GetContainerEvents instead, which
 * containerd serves from 1.7 on.)
 *
 * A runtime that does not serve the service (Unimplemented, CRI-O say) is left to the
 * relist; a stream that breaks (containerd restarting) is subscribed again after a
 * backoff. Nothing but the wake-up depends on it.
 *
 * @module
 */

import type { Clock } from "../util/clock.ts";
import { errorText, type Logger } from "../util/log.ts";
import { descriptorCodecs } from "./codec.ts";
import { GrpcCode } from "./errors.ts";
import { GrpcStatusError } from "./_grpc.ts";
import { runtimeChannel } from "./_transport.ts";

/** The containerd namespace CRI's containers live in. */
export const CRI_NAMESPACE = "k8s.io";

/** The topic of a task's exit. */
export const TASK_EXIT_TOPIC = "/tasks/exit";

/** The Subscribe method's full path. */
export const SUBSCRIBE_METHOD = "/containerd.services.events.v1.Events/Subscribe";

/**
 * The messages Subscribe uses, from containerd's api/services/events/v1/events.proto
 * (SubscribeRequest, Envelope) and api/events/task.proto (TaskExit); Any and Timestamp
 * with google.protobuf's field numbers, declared here beside them.
 */
const codecs = descriptorCodecs({
  nested: {
    containerd: {
      nested: {
        events: {
          nested: {
            SubscribeRequest: { fields: { filters: { rule: "repeated", type: "string", id: 1 } } },
            Timestamp: {
              fields: { seconds: { type: "int64", id: 1 }, nanos: { type: "int32", id: 2 } },
            },
            Any: {
              fields: { typeUrl: { type: "string", id: 1 }, value: { type: "bytes", id: 2 } },
            },
            Envelope: {
              fields: {
                timestamp: { type: "Timestamp", id: 1 },
                namespace: { type: "string", id: 2 },
                topic: { type: "string", id: 3 },
                event: { type: "Any", id: 4 },
              },
            },
            TaskExit: {
              fields: {
                containerId: { type: "string", id: 1 },
                id: { type: "string", id: 2 },
                pid: { type: "uint32", id: 3 },
                exitStatus: { type: "uint32", id: 4 },
                exitedAt: { type: "Timestamp", id: 5 },
              },
            },
          },
        },
      },
    },
  },
});

interface Timestamp {
  seconds: number;
  nanos: number;
}

/** containerd's event envelope. */
export interface Envelope {
  timestamp?: Timestamp;
  namespace: string;
  topic: string;
  event?: { typeUrl: string; value: Uint8Array };
}

/** `SubscribeRequest`'s codec. */
export const subscribeRequest = codecs<{ filters: string[] }>("containerd.events.SubscribeRequest");
/** `Envelope`'s codec. */
export const envelopeCodec = codecs<Envelope>("containerd.events.Envelope");
/** `TaskExit`'s codec. */
export const taskExitCodec = codecs<{
  containerId: string;
  id: string;
  pid: number;
  exitStatus: number;
  exitedAt?: Timestamp;
}>("containerd.events.TaskExit");

/** One container's (or sandbox's) process ended. */
export interface TaskExit {
  /** The CRI container or sandbox ID. */
  containerId: string;
  exitStatus: number;
  /** When it exited, ms since the epoch (0 when containerd did not say). */
  exitedAt: number;
}

/**
 * The task exit an envelope carries, when it is one of a CRI container.
 * @param message an encoded Envelope
 * @returns the exit, or undefined for any other event
 * @throws Error when the bytes are not an Envelope (or its TaskExit)
 */
export function decodeTaskExit(message: Uint8Array): TaskExit | undefined {
  const envelope = envelopeCodec.decode(message);
  if (envelope.topic !== TASK_EXIT_TOPIC || envelope.namespace !== CRI_NAMESPACE) return undefined;
  if (envelope.event === undefined) return undefined;
  const exit = taskExitCodec.decode(envelope.event.value);
  const at = exit.exitedAt;
  return {
    containerId: exit.containerId,
    exitStatus: exit.exitStatus,
    exitedAt: at ? at.seconds * 1000 + Math.floor(at.nanos / 1e6) : 0,
  };
}

/** A stream that lasted this long resets the backoff. */
const HEALTHY_STREAM_MS = 10_000;

/** Options for {@link watchTaskExits}. */
export interface WatchTaskExitsOptions {
  /** The runtime endpoint, `unix:///run/containerd/containerd.sock`. */
  endpoint: string;
  /** Called for each exit, at once; must not block. */
  onExit: (exit: TaskExit) => void;
  clock: Clock;
  logger: Logger;
  /** Ends the watch. */
  signal: AbortSignal;
  /** Between a broken stream and the next Subscribe, growing to `maxMs` (default 1 s, 30 s). */
  backoff?: { initialMs: number; maxMs: number };
}

/**
 * Streams containerd's task exits of CRI containers to `onExit` until the signal aborts,
 * subscribing again after a backoff when the stream breaks.
 * @param opts see {@link WatchTaskExitsOptions}
 * @returns once the signal aborted, or at once when the runtime serves no such events
 */
export async function watchTaskExits(opts: WatchTaskExitsOptions): Promise<void> {
  const { signal, clock } = opts;
  const log = opts.logger.with({ component: "task-exits" });
  const backoff = opts.backoff ?? { initialMs: 1000, maxMs: 30_000 };
  const channel = runtimeChannel(opts.endpoint);
  const request = subscribeRequest.encode({
    filters: [
      `namespace==${JSON.stringify(CRI_NAMESPACE)},topic==${JSON.stringify(TASK_EXIT_TOPIC)}`,
    ],
  });
  let waitMs = backoff.initialMs;
  let failedBefore = false;
  try {
    while (!signal.aborted) {
      const subscribed = clock.monotonic();
      let broken: unknown;
      try {
        await channel.serverStream(
          SUBSCRIBE_METHOD,
          request,
          { deadline: undefined, signal },
          (m) => {
            const exit = decodeTaskExit(m);
            if (exit) opts.onExit(exit);
          },
        );
      } catch (err) {
        broken = err;
      }
      if (signal.aborted) break;
      if (broken instanceof GrpcStatusError && broken.code === GrpcCode.UNIMPLEMENTED) {
        log.info(
          "The runtime serves no containerd events: container deaths are noticed by the relist alone",
          { err: broken.details },
        );
        return;
      }
      // A stream that held a while was a good one: this break starts the backoff over.
      if (clock.monotonic() - subscribed >= HEALTHY_STREAM_MS) {
        waitMs = backoff.initialMs;
        failedBefore = false;
      }
      // A restarting runtime fails every try until it is back: say it once.
      (failedBefore ? log.v(4) : log.v(2)).info("Runtime event stream ended; subscribing again", {
        err: broken === undefined ? "ended by the runtime" : errorText(broken),
        inMs: waitMs,
      });
      failedBefore = true;
      await clock.sleep(waitMs, signal).catch(() => {});
      waitMs = Math.min(waitMs * 2, backoff.maxMs);
    }
  } finally {
    channel.close();
  }
}
