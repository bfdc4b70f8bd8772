/**
 * Removes the directories of pods nobody knows any more (upstream's
 * cleanupOrphanedPodDirs, run from HandlePodCleanups): a pod that disappeared
 * while the agent was down, or whose removal failed, leaves
 * `<rootDir>/pods/<uid>` behind, and housekeeping reclaims it.
 *
 * Per orphan, as upstream (its volume manager's teardown of volumes no pod
 * wants, then the dir cleanup):
 * 1. its volumes are torn down ({@link tearDownPodVolumes}) when every plugin
 *    dir is one of ours; a foreign plugin's volume is left to the rmdir below;
 * 2. if a volume is still mounted: skipped ("Orphaned pod found, but volumes
 *    are not cleaned up");
 * 3. the volume dirs are rmdir'ed, volume-subpaths entries removed (only while
 *    nothing is mounted under them), the volumes dir removed (dirs only);
 * 4. every other subdir is removed, then the pod dir itself.
 *
 * Nothing is followed through a symlink and nothing outside `<rootDir>/pods`
 * is touched; a name that is not a pod UID is left alone.
 *
 * @module
 */

import type { Logger } from "../util/log.ts";
import { API_VOLUME_PLUGINS } from "./api_volumes.ts";
import { hostMounter, type Mounter, mountPointsUnder } from "./mount.ts";
import { EMPTY_DIR_PLUGIN, podDir, tearDownPodVolumes } from "./pod_dirs.ts";

/** The plugin dirs whose teardown (upstream's emptyDir and its wrappers) removes the content. */
const OUR_PLUGINS: ReadonlySet<string> = new Set([
  EMPTY_DIR_PLUGIN,
  ...Object.values(API_VOLUME_PLUGINS),
]);

/** An API UID (RFC 4122 text) or a static pod's (upstream's 32 hex digits of its hash). */
const UID_PATTERN =
  /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$/i;

/** Options for {@link cleanupOrphanedPodDirs}. */
export interface OrphanedPodDirsOptions {
  /** The kubelet root dir. */
  rootDir: string;
  /**
   * True for a known pod: desired, known to a pod worker, or in the runtime.
   * Asked again right before a pod's files are touched, since pods may arrive
   * while the cleanup runs.
   */
  isKnown: (uid: string) => boolean;
  logger: Logger;
  /** Unmounts and lists mounts (the host's by default). */
  mounter?: Mounter;
}

/** What one pass found (upstream's orphan_pod_cleaned_volumes gauges). */
export interface OrphanedPodDirsResult {
  /** Orphaned pod dirs found. */
  total: number;
  /** Of those, the ones that could not be removed (yet). */
  errors: number;
}

/** True when `path` is a directory itself, not a symlink to one; false when missing. */
async function isRealDir(path: string): Promise<boolean> {
  try {
    return (await Deno.lstat(path)).isDirectory;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

/** The names in a directory; none when it is missing. */
async function entries(dir: string): Promise<Deno.DirEntry[]> {
  const out: Deno.DirEntry[] = [];
  try {
    for await (const e of Deno.readDir(dir)) out.push(e);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return out;
    throw err;
  }
  return out;
}

/** Removes `dir` and the directories below it, failing on any other file (RemoveDirsOneFilesystem). */
async function removeDirsOnly(dir: string): Promise<void> {
  for (const e of await entries(dir)) {
    if (!e.isDirectory) throw new Error(`"${dir}/${e.name}" is not a directory`);
    await removeDirsOnly(`${dir}/${e.name}`);
  }
  try {
    await Deno.remove(dir);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
}

/** Upstream's utilerrors aggregate text: one error's message, or `[a, b]`. */
function aggregate(errs: readonly string[]): Error {
  return new Error(errs.length === 1 ? errs[0]! : `[${errs.join(", ")}]`);
}

/**
 * Removes the dirs under `<rootDir>/pods` of pods no one knows (see the
 * module doc for the steps). Errors are rolled up as upstream's: one line per
 * kind, each error at verbosity 5.
 * @param opts root dir, the known-pod check, logger, mounter
 * @returns how many orphans were found and how many are left
 * @throws {Error} the removal errors aggregated, after every orphan was tried
 */
export async function cleanupOrphanedPodDirs(
  opts: OrphanedPodDirsOptions,
): Promise<OrphanedPodDirsResult> {
  const { rootDir, isKnown, logger, mounter = hostMounter } = opts;
  const podsDir = `${rootDir.replace(/\/+$/, "")}/pods`;
  const volumeErrors: string[] = [];
  const removalErrors: string[] = [];
  let total = 0;
  let errorPods = 0;
  for (const entry of await entries(podsDir)) {
    // A symlink is never followed (upstream lists directories only).
    if (!entry.isDirectory) continue;
    const uid = entry.name;
    if (isKnown(uid)) continue;
    if (!UID_PATTERN.test(uid)) {
      logger.v(2).info("Directory under the pods dir is not a pod UID, leaving it", {
        path: `${podsDir}/${uid}`,
      });
      continue;
    }
    total++;
    const dir = podDir(rootDir, uid);
    const volumes = `${dir}/volumes`;
    try {
      if ((await Deno.lstat(volumes).catch(() => undefined))?.isSymlink) {
        throw new Error(`orphaned pod "${uid}" found, but its volumes dir is a symlink`);
      }
      const plugins = await entries(volumes);
      if (plugins.every((p) => p.isDirectory && OUR_PLUGINS.has(p.name))) {
        // Upstream's volume manager tears down the volumes no pod wants first.
        await tearDownPodVolumes(rootDir, uid, mounter);
      }
    } catch (err) {
      logger.error("Failed to tear down the volumes of an orphaned pod", err, { podUID: uid });
    }
    const real = await Deno.realPath(dir).catch(() => dir);
    const mounts = await mounter.mounts();
    const mountedVolumes = mountPointsUnder(mounts, `${real}/volumes`);
    if (mountedVolumes.length > 0) {
      errorPods++;
      logger.v(4).info("Pod found, but volumes are still mounted on disk", {
        podUID: uid,
        paths: mountedVolumes,
      });
      logger.v(3).info("Orphaned pod found, but volumes are not cleaned up", { podUID: uid });
      continue;
    }
    const errs = await removeVolumeDirs(dir, real, uid, mounts, logger);
    if (errs.length > 0) {
      errorPods++;
      volumeErrors.push(...errs);
      continue;
    }
    if (isKnown(uid)) continue; // arrived while we were at it
    let failed = false;
    for (const sub of await entries(dir)) {
      const path = `${dir}/${sub.name}`;
      if (sub.name === "volumes") {
        failed = true;
        logger.error(
          "Orphaned pod found, but failed to remove volumes subdir",
          "volumes subdir was found after it was removed",
          { podUID: uid, path },
        );
        continue;
      }
      try {
        // Deno.remove never follows a symlink; a mount below is never deleted through.
        if (mountPointsUnder(mounts, `${real}/${sub.name}`).length > 0) {
          throw new Error("a mount point is under it");
        }
        await Deno.remove(path, { recursive: true });
      } catch (err) {
        failed = true;
        logger.error("Failed to remove orphaned pod subdir", err, { podUID: uid, path });
        removalErrors.push(
          `orphaned pod "${uid}" found, but error occurred when trying to remove subdir "${path}": ${
            String((err as Error).message ?? err)
          }`,
        );
      }
    }
    logger.v(3).info("Orphaned pod found, removing", { podUID: uid });
    try {
      await Deno.remove(dir);
    } catch (err) {
      failed = true;
      logger.error("Failed to remove orphaned pod dir", err, { podUID: uid });
      removalErrors.push(
        `orphaned pod "${uid}" found, but error occurred when trying to remove the pod directory: ${
          String((err as Error).message ?? err)
        }`,
      );
    }
    if (failed) errorPods++;
  }
  for (const errs of [volumeErrors, removalErrors]) {
    if (errs.length === 0) continue;
    logger.error("There were many similar errors. Turn up verbosity to see them.", errs[0], {
      numErrs: errs.length,
    });
    for (const err of errs) logger.v(5).info("Orphan pod", { err });
  }
  if (removalErrors.length > 0) throw aggregate(removalErrors);
  return { total, errors: errorPods };
}

/**
 * Upstream's removeOrphanedPodVolumeDirs: rmdir each volume dir (never its
 * content), remove each volume-subpaths entry (a file or an empty dir, only
 * while nothing is mounted there), then the volumes dir, dirs only.
 */
async function removeVolumeDirs(
  dir: string,
  real: string,
  uid: string,
  mounts: Awaited<ReturnType<Mounter["mounts"]>>,
  logger: Logger,
): Promise<string[]> {
  const errs: string[] = [];
  const volumes = `${dir}/volumes`;
  try {
    for (const plugin of await entries(volumes)) {
      if (!plugin.isDirectory) continue;
      for (const volume of await entries(`${volumes}/${plugin.name}`)) {
        const path = `${volumes}/${plugin.name}/${volume.name}`;
        try {
          await Deno.remove(path);
          logger.info("Cleaned up orphaned volume from pod", { podUID: uid, path });
        } catch (err) {
          errs.push(
            `orphaned pod "${uid}" found, but failed to rmdir() volume at path ${path}: ${
              (err as Error).message
            }`,
          );
        }
      }
    }
  } catch (err) {
    return [
      `orphaned pod "${uid}" found, but error occurred during reading volume dir from disk: ${
        (err as Error).message
      }`,
    ];
  }
  const subpaths = `${dir}/volume-subpaths`;
  if (await isRealDir(subpaths)) {
    if (mountPointsUnder(mounts, `${real}/volume-subpaths`).length > 0) {
      errs.push(`orphaned pod "${uid}" found, but its volume-subpaths are still mounted`);
    } else {
      try {
        for (const volume of await entries(subpaths)) {
          if (!volume.isDirectory) continue;
          for (const container of await entries(`${subpaths}/${volume.name}`)) {
            if (!container.isDirectory) continue;
            const base = `${subpaths}/${volume.name}/${container.name}`;
            for (const index of await entries(base)) {
              const path = `${base}/${index.name}`;
              try {
                await Deno.remove(path);
                logger.info("Cleaned up orphaned volume subpath from pod", { podUID: uid, path });
              } catch (err) {
                errs.push(
                  `orphaned pod "${uid}" found, but failed to remove subpath at path ${path}: ${
                    (err as Error).message
                  }`,
                );
              }
            }
          }
        }
      } catch (err) {
        return [
          ...errs,
          `orphaned pod "${uid}" found, but error occurred during reading of volume-subpaths dir from disk: ${
            (err as Error).message
          }`,
        ];
      }
    }
  }
  if (errs.length > 0) return errs;
  try {
    await removeDirsOnly(volumes);
    logger.info("Cleaned up orphaned pod volumes dir", { podUID: uid, path: volumes });
  } catch (err) {
    errs.push(
      `orphaned pod "${uid}" found, but error occurred when trying to remove the volumes dir: ${
        (err as Error).message
      }`,
    );
  }
  return errs;
}
