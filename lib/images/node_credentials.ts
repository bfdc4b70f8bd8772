/**
 * The node's own registry credentials, as upstream's default docker keyring
 * (pkg/credentialprovider/provider.go, config.go) reads them for every pull, after the
 * pod's pull secrets: the first `config.json` (`{"auths": ...}`) that exists and parses
 * in the kubelet's root directory (`--root-dir`, e.g. /var/lib/kubelet), the working
 * directory, `$HOME/.docker` and `/.docker`; failing that, the first legacy `.dockercfg`
 * in the root directory, the working directory, `$HOME` and `/`. Read again at most
 * every five minutes.
 *
 * @module
 */

import type { Clock } from "../util/clock.ts";
import { type Logger, silentLogger } from "../util/log.ts";
import { parseDockerConfigEntries, type RegistryCredential } from "./credentials.ts";

/** Upstream's CachingDockerConfigProvider lifetime. */
const CACHE_MS = 5 * 60_000;

/** The working directory, "" when it is gone. */
function workingDir(): string {
  try {
    return Deno.cwd();
  } catch {
    return "";
  }
}

/** Options for {@link NodeDockerConfig}. */
export interface NodeDockerConfigOptions {
  /** The kubelet's root directory, searched first. */
  rootDir: string;
  clock: Clock;
  logger?: Logger;
  /** `$HOME`; read from the environment when unset. */
  home?: string;
  /** The working directory; `Deno.cwd()` when unset. */
  cwd?: string;
}

/** The node's docker config files, cached. */
export class NodeDockerConfig {
  readonly #opts: NodeDockerConfigOptions;
  readonly #logger: Logger;
  #cached: Map<string, RegistryCredential> | undefined;
  #expires = 0;

  /** @param opts the root dir, clock and search paths */
  constructor(opts: NodeDockerConfigOptions) {
    this.#opts = opts;
    this.#logger = opts.logger ?? silentLogger;
  }

  /**
   * The entries of the first docker config file found (empty when there is none).
   * @returns registry → credential
   */
  async entries(): Promise<Map<string, RegistryCredential>> {
    const now = this.#opts.clock.now();
    if (this.#cached && now < this.#expires) return this.#cached;
    this.#cached = await this.#read();
    this.#expires = now + CACHE_MS;
    return this.#cached;
  }

  async #read(): Promise<Map<string, RegistryCredential>> {
    const home = this.#opts.home ?? Deno.env.get("HOME") ?? "";
    const cwd = this.#opts.cwd ?? workingDir();
    const dirs = (homeDir: string, root: string) =>
      [this.#opts.rootDir, cwd, homeDir, root].filter((d) => d !== "");
    const json = dirs(home ? `${home}/.docker` : "", "/.docker").map((d) => `${d}/config.json`);
    for (const path of json) {
      const found = await this.#tryFile(path, (v) => (v as { auths?: unknown } | null)?.auths);
      if (found) return found;
    }
    for (const path of dirs(home, "/").map((d) => `${d.replace(/\/$/, "")}/.dockercfg`)) {
      const found = await this.#tryFile(path, (v) => v);
      if (found) return found;
    }
    return new Map();
  }

  /** The file's entries; undefined when it is absent or does not parse (upstream goes on). */
  async #tryFile(
    path: string,
    pick: (parsed: unknown) => unknown,
  ): Promise<Map<string, RegistryCredential> | undefined> {
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch {
      return undefined;
    }
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
        throw new Error("not a JSON object");
      }
      const entries = parseDockerConfigEntries(pick(parsed));
      this.#logger.info("Found docker config", { path, registries: entries.size });
      return entries;
    } catch (err) {
      this.#logger.info("Skipping docker config", { path, err: (err as Error).message });
      return undefined;
    }
  }
}
