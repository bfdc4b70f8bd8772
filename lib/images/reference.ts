/**
 * Image reference normalisation, as the docker reference library does it for
 * the kubelet: a missing registry is docker.io, a single-name Docker Hub repo
 * is under library/, a missing tag is `latest` unless a digest pins it.
 *
 * @module
 */

/** An image reference split into parts. */
export interface ImageReference {
  /** Registry host[:port], e.g. "docker.io" or "127.0.0.1:5000". */
  domain: string;
  /** Repository path, e.g. "library/busybox". */
  path: string;
  /** Tag, "" when only a digest is given. */
  tag: string;
  /** "sha256:…" or "". */
  digest: string;
}

const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$/;

/**
 * Parses and normalises an image reference.
 * @param image e.g. "busybox", "busybox:1.36", "127.0.0.1:5000/x/y@sha256:…"
 * @returns the parts, with defaults applied
 * @throws {Error} naming the image when it is not a valid reference
 */
export function parseImageReference(image: string): ImageReference {
  if (!image) throw new Error("image reference is empty");
  let rest = image;
  let digest = "";
  const at = rest.indexOf("@");
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) throw new Error(`invalid image reference "${image}": bad digest`);
  }
  let tag = "";
  const lastSlash = rest.lastIndexOf("/");
  const colon = rest.indexOf(":", lastSlash + 1);
  if (colon >= 0) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) throw new Error(`invalid image reference "${image}": bad tag "${tag}"`);
  }
  let domain = "docker.io";
  let path = rest;
  const slash = rest.indexOf("/");
  if (slash >= 0) {
    const first = rest.slice(0, slash);
    if (first.includes(".") || first.includes(":") || first === "localhost") {
      domain = first;
      path = rest.slice(slash + 1);
    }
  }
  if (domain === "index.docker.io") domain = "docker.io";
  if (domain === "docker.io" && !path.includes("/")) path = `library/${path}`;
  if (!path.split("/").every((c) => PATH_COMPONENT.test(c))) {
    throw new Error(
      `invalid image reference "${image}": repository name must be lowercase alphanumerics separated by '.', '_', '__' or '-'`,
    );
  }
  if (!tag && !digest) tag = "latest";
  return { domain, path, tag, digest };
}

/**
 * The fully qualified form of a reference ("busybox" → "docker.io/library/busybox:latest").
 * @param image the reference as written
 * @returns the normalised reference
 * @throws {Error} when the reference is invalid
 */
export function normalizeImage(image: string): string {
  const r = parseImageReference(image);
  return `${r.domain}/${r.path}${r.tag ? `:${r.tag}` : ""}${r.digest ? `@${r.digest}` : ""}`;
}

/**
 * The reference with a `:latest` tag added when it has neither tag nor digest,
 * as upstream's applyDefaultImageTag; otherwise unchanged.
 * @param image the reference as written
 * @returns the reference to ask the runtime for
 * @throws {Error} when the reference is invalid
 */
export function applyDefaultImageTag(image: string): string {
  const r = parseImageReference(image);
  const name = image.split("@")[0]!;
  const hasTag = name.slice(name.lastIndexOf("/") + 1).includes(":");
  return hasTag || r.digest ? image : `${image}:latest`;
}
