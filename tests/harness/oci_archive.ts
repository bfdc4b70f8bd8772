/**
 * Writes an OCI image layout (`oci-layout`, `index.json`, `blobs/sha256/…`) and packs it
 * as an `oci-archive` tarball, the format `ctr images import` and `skopeo copy
 * oci-archive:` read. Layers come in as finished gzip blobs so several images can share
 * one layer.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { exec } from "./_exec.ts";

/** A content-addressed blob as an OCI descriptor names it. */
export interface Blob {
  mediaType: string;
  digest: string;
  size: number;
  bytes: Uint8Array;
}

/** A gzip layer with the digest of its uncompressed tar (the config's diff_id). */
export interface Layer {
  blob: Blob;
  diffId: string;
}

/** The process part of an OCI image config. */
export interface ImageProcess {
  Entrypoint?: string[];
  Cmd?: string[];
  Env: string[];
  WorkingDir: string;
  /** The user (`uid[:gid]`) the process runs as when a pod does not say. */
  User?: string;
}

/** Options for {@link writeOciArchive}. */
export interface OciArchiveOptions {
  /** Full image reference, e.g. `docker.io/denolet/busybox:test`. */
  ref: string;
  layers: readonly Layer[];
  process: ImageProcess;
  /** Where to write the archive. */
  path: string;
  /** Scratch directory the layout is assembled in (emptied by the caller). */
  workDir: string;
}

const encoder = new TextEncoder();

/**
 * The `sha256:<hex>` digest of `bytes`.
 *
 * @param bytes the content
 */
export function sha256(bytes: Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

/**
 * Wraps `bytes` as a blob of `mediaType`.
 *
 * @param mediaType the OCI media type
 * @param bytes the content
 */
export function blobOf(mediaType: string, bytes: Uint8Array): Blob {
  return { mediaType, digest: sha256(bytes), size: bytes.length, bytes };
}

/**
 * Packs `rootDir` into a reproducible gzip layer: sorted entries, owner 0:0, mtime 0,
 * so the same busybox always gives the same digests.
 *
 * @param rootDir the directory whose contents become the layer's root
 * @param workDir scratch directory for the tarball
 * @throws Error when tar or gzip fail
 */
export async function packLayer(rootDir: string, workDir: string): Promise<Layer> {
  const entries = [...Deno.readDirSync(rootDir)].map((entry) => entry.name).sort();
  const tarPath = `${workDir}/layer.tar`;
  await exec("tar", [
    "--create",
    "--file",
    tarPath,
    "--directory",
    rootDir,
    "--format=gnu",
    "--sort=name",
    "--owner=0",
    "--group=0",
    "--numeric-owner",
    "--mtime=@0",
    ...entries,
  ]);
  const tarBytes = await Deno.readFile(tarPath);
  await exec("gzip", ["-n", "-9", "-f", tarPath]);
  const gzBytes = await Deno.readFile(`${tarPath}.gz`);
  await Deno.remove(`${tarPath}.gz`);
  return {
    blob: blobOf("application/vnd.oci.image.layer.v1.tar+gzip", gzBytes),
    diffId: sha256(tarBytes),
  };
}

/** The OCI/Go name of this machine's CPU architecture. */
export function ociArch(): string {
  return Deno.build.arch === "aarch64" ? "arm64" : "amd64";
}

function jsonBlob(mediaType: string, value: unknown): Blob {
  return blobOf(mediaType, encoder.encode(JSON.stringify(value)));
}

/**
 * Writes the image described by `opts` as an OCI archive at `opts.path` (atomically:
 * concurrent builders never see a half-written file).
 *
 * @throws Error when the layout cannot be written or packed
 */
export async function writeOciArchive(opts: OciArchiveOptions): Promise<void> {
  const created = "1970-01-01T00:00:00Z";
  const config = jsonBlob("application/vnd.oci.image.config.v1+json", {
    created,
    architecture: ociArch(),
    os: "linux",
    config: opts.process,
    rootfs: { type: "layers", diff_ids: opts.layers.map((layer) => layer.diffId) },
    history: opts.layers.map(() => ({ created, created_by: "denolet test harness" })),
  });
  const manifest = jsonBlob("application/vnd.oci.image.manifest.v1+json", {
    schemaVersion: 2,
    mediaType: "application/vnd.oci.image.manifest.v1+json",
    config: descriptor(config),
    layers: opts.layers.map((layer) => descriptor(layer.blob)),
  });
  const tag = opts.ref.slice(opts.ref.lastIndexOf(":") + 1);
  const index = {
    schemaVersion: 2,
    manifests: [{
      ...descriptor(manifest),
      platform: { architecture: ociArch(), os: "linux" },
      // containerd names the import after the first; skopeo and other OCI tools use the second.
      annotations: {
        "io.containerd.image.name": opts.ref,
        "org.opencontainers.image.ref.name": tag,
      },
    }],
  };

  const layout = `${opts.workDir}/layout`;
  await Deno.mkdir(`${layout}/blobs/sha256`, { recursive: true });
  for (const blob of [config, manifest, ...opts.layers.map((layer) => layer.blob)]) {
    await Deno.writeFile(`${layout}/blobs/sha256/${blob.digest.slice(7)}`, blob.bytes);
  }
  await Deno.writeTextFile(`${layout}/oci-layout`, JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  await Deno.writeTextFile(`${layout}/index.json`, JSON.stringify(index));

  const partial = `${opts.path}.${crypto.randomUUID()}.partial`;
  try {
    await exec("tar", [
      "--create",
      "--file",
      partial,
      "--directory",
      layout,
      "--format=gnu",
      "--sort=name",
      "--owner=0",
      "--group=0",
      "--numeric-owner",
      "--mtime=@0",
      "oci-layout",
      "index.json",
      "blobs",
    ]);
    await Deno.rename(partial, opts.path);
  } catch (cause) {
    await Deno.remove(partial).catch(() => {});
    throw new Error(`harness: cannot write OCI archive ${opts.path} for ${opts.ref}`, { cause });
  } finally {
    await Deno.remove(layout, { recursive: true });
  }
}

function descriptor(blob: Blob): { mediaType: string; digest: string; size: number } {
  return { mediaType: blob.mediaType, digest: blob.digest, size: blob.size };
}
