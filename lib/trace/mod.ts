/**
 * The sync trace (issue #20): per pod, the last N syncs — why each ran, the
 * plan with its reasons, every CRI call, the executor's steps and the status
 * written — served at `/debug/pods/{namespace}/{name}/syncs` and read by
 * `denolet explain`. The JSON shape is in `types.ts`.
 *
 * @module
 */

export * from "./types.ts";
export {
  clip,
  currentSync,
  MAX_CALLS,
  MAX_STEPS,
  MAX_TEXT,
  MAX_TRIGGERS,
  SyncTracer,
  type SyncTracerOptions,
  type TracedPod,
  tracedPod,
} from "./recorder.ts";
export type { ActiveSync } from "./recorder.ts";
export { describeRuntimeArgs } from "./runtime_args.ts";
export { explainAnswer, renderExplanation, type RenderOptions, renderSync } from "./render.ts";
export { EXPLAIN_USAGE, explainMain, parseExplainArgs } from "./explain.ts";
