/**
 * Kubernetes Events from the node: what `kubectl describe` shows under
 * "Events". {@link ApiEventRecorder} writes them to the apiserver in the
 * background (batched by a bounded queue, identical events counted, spam
 * filtered per object, as client-go's EventBroadcaster); {@link LogEventRecorder}
 * logs them in standalone mode. Reasons and messages are upstream's.
 *
 * ```ts
 * const recorder = new ApiEventRecorder({ client, clock, logger, host: nodeName });
 * recorder.start();
 * recorder.event(nodeReference(nodeName), "Normal", EventReason.starting, EventMessage.starting());
 * recorder.event(podReference(pod, { name: "app" }), "Normal", EventReason.pulling,
 *   EventMessage.pulling("busybox:1.36"));
 * ```
 *
 * @module
 */

export { discardEvents, type EventRecorder, type EventType } from "./types.ts";
export {
  ApiEventRecorder,
  type ApiEventRecorderOptions,
  LogEventRecorder,
  nodeReference,
  podReference,
} from "./recorder.ts";
export { EventMessage, EventReason, type ProbeKind } from "./reasons.ts";
