/**
 * Times as the Kubernetes API writes them. Two formats, both RFC 3339 in UTC:
 * `metav1.Time` (whole seconds: pod and node conditions, events, stats) and
 * `metav1.MicroTime` (six fractional digits: the Lease's renew time).
 *
 * @module
 */

/**
 * A `metav1.Time` as it marshals: the sub-second part is dropped.
 * @param ms epoch ms
 * @returns e.g. "2026-01-01T00:00:00Z"
 */
export function metaTime(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  let text = metaTimes.get(seconds);
  if (text === undefined) {
    if (metaTimes.size >= META_TIMES_KEPT) metaTimes.clear();
    text = new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
    metaTimes.set(seconds, text);
  }
  return text;
}

/**
 * The texts {@link metaTime} made last, by epoch second: a Summary writes the same few
 * sample and start times for every pod and container, and at every scrape until the
 * next housekeeping tick; each made again was garbage, and a fresh string that
 * JSON.stringify had to scan again.
 */
const metaTimes = new Map<number, string>();
const META_TIMES_KEPT = 512;

/**
 * Like {@link metaTime}, but undefined for 0 ("unknown"), which upstream
 * serializes as null.
 * @param ms epoch ms, or 0
 * @returns the text, or undefined
 */
export function optionalMetaTime(ms: number): string | undefined {
  return ms > 0 ? metaTime(ms) : undefined;
}

/**
 * A `metav1.MicroTime`: six fractional digits, of which we know three.
 * @param ms epoch ms
 * @returns e.g. "2026-01-01T00:00:00.123000Z"
 */
export function microTime(ms: number): string {
  return new Date(Math.floor(ms)).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}
