/**
 * The V8 flags the agent runs with, wherever it is started: `deno task run`
 * (deno.json spells them out; tests/unit/v8_flags_test.ts keeps the two
 * equal), the compiled binary (tools/compile.ts bakes them in), and the test,
 * demo and benchmark harness (tests/integration/_agent.ts).
 *
 * `--optimize-for-size` makes V8 favour memory over speed (less inlining,
 * smaller young generation, a heap that grows more slowly). Measured with 30
 * pods created at once through the apiserver, two rounds each on one cluster:
 * 0 pods 85 vs 92–93 MB, peak while the batch started 105–107 vs 141–146 MB,
 * steady (max over 30 s) 104 vs 107–109 MB. Its CPU cost is in the benchmark
 * report (docs/benchmarks.md), which runs the agent with these flags too.
 *
 * @module
 */

/** V8 flags, comma-separated as `--v8-flags=` takes them. */
export const AGENT_V8_FLAGS = "--optimize-for-size";
