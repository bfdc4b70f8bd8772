/**
 * The file pod source (upstream pkg/kubelet/config/file.go): reads static pod
 * manifests from `--pod-manifest-path`, a directory or a single file, and
 * hands the complete set of pods to the mux on every read.
 *
 * Reads happen at start, on every filesystem event under the path (debounced,
 * since an editor's save is several events) and every `checkFrequencyMs`
 * (upstream's `fileCheckFrequency`, 20s) as a safety net for missed events.
 * Hidden files (leading ".") and subdirectories are skipped; every other
 * regular file is parsed, whatever its extension, as upstream does. A bad file
 * is reported and left out; the other files' pods are unaffected. A missing
 * path sends an empty set (so the source still counts as seen) and is retried.
 *
 * @module
 */

import { basename, join } from "node:path";
import { FILE_SOURCE } from "../api/pod.ts";
import type { Pod } from "../api/types.ts";
import type { Clock, Timer } from "../util/clock.ts";
import { realClock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { silentLogger } from "../util/log.ts";
import { staticPodsFromManifest } from "./static_pod.ts";
import type { PodSetSink, SourceError, SourceErrorSink } from "./types.ts";

/** Upstream's default `fileCheckFrequency`. */
export const DEFAULT_FILE_CHECK_FREQUENCY_MS = 20_000;

/** Options for {@link FileSource}. */
export interface FileSourceOptions {
  /** `--pod-manifest-path`: a directory of manifests or one manifest file. */
  path: string;
  /** The node's name, for static pod names and UIDs. */
  nodeName: string;
  /** Receives the complete pod set after every read. */
  onPods: PodSetSink;
  /** Receives each bad file on every read that finds it bad. */
  onError?: SourceErrorSink;
  clock?: Clock;
  log?: Logger;
  /** Period of the full re-read; default 20s. */
  checkFrequencyMs?: number;
  /** Watch the path for changes (default true); off leaves only the periodic re-read. */
  watch?: boolean;
  /**
   * Quiet time after the last filesystem event before re-reading; default 10ms:
   * enough to fold the burst of events one write makes, short enough not to
   * add to pod start-up (upstream reacts to each inotify event at once).
   */
  debounceMs?: number;
}

/** Reads and watches a manifest path; see the module doc. */
/** Logged for a static pod whose UID cannot be upstream's (lib/config/static_pod.ts). */
const OWN_UID_WARNING = "Static pod UID is not the one the upstream kubelet derives for this " +
  "manifest; the upstream kubelet would not adopt its containers";

export class FileSource {
  readonly #opts: FileSourceOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  /** UIDs already warned about by {@link OWN_UID_WARNING}, so each is logged once. */
  readonly #ownUIDsWarned = new Set<string>();
  #timer: Timer | undefined;
  #debounce: Timer | undefined;
  #watcher: Deno.FsWatcher | undefined;
  #queued: Promise<void> | undefined;
  #chain: Promise<void> = Promise.resolve();
  #stopped = false;
  /** file → last logged reason, so a persistently bad file is logged once. */
  #logged = new Map<string, string>();
  /**
   * file → its text and pods at the last good read: a file read again unchanged gives the
   * same pods (its UID hash and defaults are not worked out again; the mux copies them and
   * keeps each pod's first-seen time, as upstream's).
   */
  #parsed = new Map<string, { text: string; pods: Pod[] }>();
  #missingLogged = false;

  /** @param opts path, node name, sinks and timing */
  constructor(opts: FileSourceOptions) {
    this.#opts = opts;
    this.#clock = opts.clock ?? realClock;
    this.#log = (opts.log ?? silentLogger).with({ source: FILE_SOURCE, path: opts.path });
  }

  /**
   * Does the first read, then starts the periodic re-read and the watcher.
   * @returns once the first set has been handed over
   */
  async start(): Promise<void> {
    await this.refresh();
    if (this.#stopped) return;
    this.#timer = this.#clock.setInterval(() => {
      this.#ensureWatch();
      void this.refresh();
    }, this.#opts.checkFrequencyMs ?? DEFAULT_FILE_CHECK_FREQUENCY_MS);
    this.#ensureWatch();
  }

  /**
   * Re-reads the path and hands over the pod set. Reads never overlap; calls
   * made while one is queued share it.
   * @returns once a read that began after this call has been handed over
   */
  refresh(): Promise<void> {
    if (this.#queued) return this.#queued;
    const run = this.#chain.then(() => {
      this.#queued = undefined;
      return this.#stopped ? undefined : this.#readAndSend();
    });
    this.#queued = run;
    this.#chain = run;
    return run;
  }

  /** Stops the timer and the watcher; a read under way still completes. */
  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#debounce?.cancel();
    this.#closeWatcher();
  }

  async #readAndSend(): Promise<void> {
    try {
      const pods = await this.#readPath();
      if (pods && !this.#stopped) this.#opts.onPods(pods);
    } catch (err) {
      // The sink belongs to someone else; its failure must not kill the source's timer.
      this.#log.error("Failed to hand over static pods", err);
    }
  }

  /** @returns the pods, or undefined when the path could not be read (keep the last set) */
  async #readPath(): Promise<Pod[] | undefined> {
    const path = this.#opts.path;
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(path);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) {
        this.#report({ source: FILE_SOURCE, file: path, reason: String(err), cause: err });
        return undefined;
      }
      if (!this.#missingLogged) this.#log.warn("Manifest path does not exist, ignoring");
      this.#missingLogged = true;
      return [];
    }
    this.#missingLogged = false;
    if (info.isFile) return (await this.#readFile(path)) ?? [];
    if (!info.isDirectory) {
      this.#report({ source: FILE_SOURCE, file: path, reason: "not a directory or regular file" });
      return [];
    }
    const names: string[] = [];
    for await (const entry of Deno.readDir(path)) {
      if (!entry.name.startsWith(".")) names.push(entry.name);
    }
    names.sort();
    const pods: Pod[] = [];
    const seen = new Set<string>();
    for (const name of names) {
      const file = join(path, name);
      seen.add(file);
      let entry: Deno.FileInfo;
      try {
        entry = await Deno.stat(file);
      } catch {
        continue; // Removed (or a dangling symlink) between readDir and stat.
      }
      if (entry.isDirectory) {
        this.#log.v(4).info("Not recursing into manifest path", { file });
        continue;
      }
      if (!entry.isFile) continue;
      pods.push(...(await this.#readFile(file) ?? []));
    }
    for (const file of this.#logged.keys()) if (!seen.has(file)) this.#logged.delete(file);
    for (const file of this.#parsed.keys()) if (!seen.has(file)) this.#parsed.delete(file);
    return pods;
  }

  /** @returns the file's pods, or undefined when the file is bad (reported) or gone */
  async #readFile(file: string): Promise<Pod[] | undefined> {
    let text: string;
    try {
      text = await Deno.readTextFile(file);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return undefined;
      this.#report({ source: FILE_SOURCE, file, reason: `cannot read: ${err}`, cause: err });
      return undefined;
    }
    const last = this.#parsed.get(file);
    if (last?.text === text) return last.pods;
    this.#parsed.delete(file);
    try {
      const pods = staticPodsFromManifest(text, {
        nodeName: this.#opts.nodeName,
        source: "file",
        origin: file,
        now: this.#clock.now(),
        onOwnUID: (pod, podUID) => this.#warnOwnUID(pod, podUID),
      });
      this.#logged.delete(file);
      this.#parsed.set(file, { text, pods });
      return pods;
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      this.#report({ source: FILE_SOURCE, file, reason, cause: err });
      return undefined;
    }
  }

  #warnOwnUID(pod: string, podUID: string): void {
    if (this.#ownUIDsWarned.has(podUID)) return;
    this.#ownUIDsWarned.add(podUID);
    this.#log.warn(OWN_UID_WARNING, { pod, podUID });
  }

  #report(err: SourceError): void {
    if (this.#logged.get(err.file) !== err.reason) {
      this.#log.error("Could not process manifest file", err.cause ?? err.reason, {
        file: err.file,
      });
      this.#logged.set(err.file, err.reason);
    }
    try {
      this.#opts.onError?.(err);
    } catch (cbErr) {
      this.#log.error("Manifest error callback failed", cbErr, { file: err.file });
    }
  }

  #ensureWatch(): void {
    if (this.#stopped || this.#watcher || this.#opts.watch === false) return;
    let watcher: Deno.FsWatcher;
    try {
      watcher = Deno.watchFs(this.#opts.path, { recursive: false });
    } catch (err) {
      // Usually a missing path; the periodic tick tries again.
      this.#log.v(2).info("Cannot watch manifest path yet", { err: String(err) });
      return;
    }
    this.#watcher = watcher;
    void this.#pump(watcher);
  }

  async #pump(watcher: Deno.FsWatcher): Promise<void> {
    try {
      for await (const event of watcher) {
        if (event.paths.every((p) => basename(p).startsWith("."))) continue;
        this.#debounce?.cancel();
        this.#debounce = this.#clock.setTimeout(
          () => void this.refresh(),
          this.#opts.debounceMs ?? 10,
        );
      }
    } catch (err) {
      if (!this.#stopped) this.#log.error("Manifest watch failed", err);
    } finally {
      if (this.#watcher === watcher) this.#watcher = undefined;
    }
  }

  #closeWatcher(): void {
    const watcher = this.#watcher;
    this.#watcher = undefined;
    try {
      watcher?.close();
    } catch {
      // Already closed by the runtime (e.g. the watched directory went away).
    }
  }
}
