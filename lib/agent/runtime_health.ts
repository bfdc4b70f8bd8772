/**
 * Whether the container runtime answers. Polled on its own timer so that
 * `/healthz` never waits on a CRI call.
 *
 * @module
 */

import type { RuntimeService } from "../cri/types.ts";
import type { Clock, Timer } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { everyAligned } from "../util/tick.ts";

/** Options for {@link RuntimeHealth}. */
export interface RuntimeHealthOptions {
  runtime: RuntimeService;
  clock: Clock;
  logger: Logger;
  /** How often to ask the runtime for its status (default 5s). */
  periodMs?: number;
  /** Aligns the checks to this grid (lib/util/tick.ts); 0 (default) disables. */
  tickGridMs?: number;
}

/** Tracks the runtime's reachability and its RuntimeReady condition. */
export class RuntimeHealth {
  #opts: RuntimeHealthOptions;
  #timer: Timer | undefined;
  #problem: string | undefined = "runtime not checked yet";
  #inFlight = false;

  constructor(opts: RuntimeHealthOptions) {
    this.#opts = opts;
  }

  /** Checks now and then every period. */
  start(): void {
    void this.check();
    this.#timer = everyAligned(
      this.#opts.clock,
      this.#opts.periodMs ?? 5000,
      this.#opts.tickGridMs ?? 0,
      () => void this.check(),
    );
  }

  stop(): void {
    this.#timer?.cancel();
  }

  /** Undefined when the runtime answered its last status call and is RuntimeReady. */
  problem(): string | undefined {
    return this.#problem;
  }

  /** Asks the runtime once; never throws. */
  async check(): Promise<void> {
    if (this.#inFlight) return;
    this.#inFlight = true;
    const before = this.#problem;
    try {
      const resp = await this.#opts.runtime.status({ timeoutMs: 2000 });
      const ready = resp.status.conditions.find((c) => c.type === "RuntimeReady");
      this.#problem = ready && !ready.status
        ? `container runtime not ready: ${ready.reason}: ${ready.message}`
        : undefined;
    } catch (err) {
      this.#problem = `container runtime is down: ${(err as Error).message}`;
    } finally {
      this.#inFlight = false;
    }
    if (this.#problem !== before) {
      if (this.#problem) {
        this.#opts.logger.warn("Container runtime unhealthy", { reason: this.#problem });
      } else this.#opts.logger.info("Container runtime is healthy");
    }
  }
}
