/**
 * Decodes manifest text (YAML, possibly several `---` documents, or JSON) into
 * Pods. Only `kind: Pod` with `apiVersion: v1` is accepted, plus a PodList
 * where the caller allows it (the HTTP source, as upstream's does).
 *
 * @module
 */

import { parseAllDocuments } from "yaml";
import type { Pod } from "../api/types.ts";
import { isRecord } from "../util/json.ts";

/** A manifest that could not be decoded; names the file and the document. */
export class ManifestError extends Error {
  /** The file path or URL. */
  readonly file: string;
  /** 1-based index of the offending document, when one is to blame. */
  readonly document: number | undefined;
  /** The reason without the file prefix. */
  readonly reason: string;

  /**
   * @param file the file path or URL
   * @param document 1-based document index, or undefined for the whole text
   * @param reason why the manifest was rejected
   * @param options the underlying error as `cause`
   */
  constructor(file: string, document: number | undefined, reason: string, options?: ErrorOptions) {
    const where = document === undefined ? "" : ` document ${document}`;
    super(`manifest ${JSON.stringify(file)}${where}: ${reason}`, options);
    this.name = "ManifestError";
    this.file = file;
    this.document = document;
    this.reason = document === undefined ? reason : `document ${document}: ${reason}`;
  }
}

/** Options for {@link parseManifest}. */
export interface ParseManifestOptions {
  /** The file path or URL, for error messages. */
  file: string;
  /** Accept `kind: PodList` (and `List`) documents and return their items. */
  allowList?: boolean;
}

/**
 * The deepest nesting a manifest may have. No pod field nests more than ~20 levels;
 * upstream's decoders stop at 10,000, but the YAML parser and the walks over a pod
 * here recurse, and a few thousand levels overflow the stack.
 */
export const MAX_MANIFEST_DEPTH = 500;

function decodeDocuments(text: string, file: string): unknown[] {
  // JSON is YAML, but JSON.parse is stricter and faster for the common case of a JSON file.
  const trimmed = text.trimStart();
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    try {
      return [JSON.parse(text)];
    } catch {
      // Fall through: YAML flow style also starts with "{".
    }
  }
  let docs: ReturnType<typeof parseAllDocuments>;
  try {
    docs = parseAllDocuments(text);
  } catch (err) {
    // The parser recurses per level: a deep enough document overflows the stack.
    throw new ManifestError(file, undefined, `invalid YAML: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const out: unknown[] = [];
  // parseAllDocuments returns an EmptyStream (no docs) for blank input.
  for (const [i, doc] of (Array.isArray(docs) ? docs : []).entries()) {
    const first = doc.errors[0];
    if (first) {
      throw new ManifestError(file, i + 1, `invalid YAML: ${first.message.split("\n")[0]}`, {
        cause: first,
      });
    }
    try {
      out.push(doc.contents === null ? null : doc.toJS({ maxAliasCount: 100 }));
    } catch (err) {
      // An alias to an anchor set later, too many aliases, or a stack overflow.
      throw new ManifestError(file, i + 1, `invalid YAML: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
  return out;
}

/**
 * Finds where a decoded value nests deeper than {@link MAX_MANIFEST_DEPTH}, without
 * recursing itself.
 * @returns the field path at the limit (`spec.x.a.a...`), or undefined when shallow enough
 */
function tooDeep(value: unknown): string | undefined {
  const stack: [unknown, string, number][] = [[value, "", 0]];
  while (stack.length > 0) {
    const [v, path, depth] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth >= MAX_MANIFEST_DEPTH) return path;
    if (Array.isArray(v)) v.forEach((item, i) => stack.push([item, `${path}[${i}]`, depth + 1]));
    else {
      for (const [k, item] of Object.entries(v)) {
        stack.push([item, path === "" ? k : `${path}.${k}`, depth + 1]);
      }
    }
  }
  return undefined;
}

function checkPod(value: Record<string, unknown>, file: string, doc: number, item?: number): Pod {
  const where = item === undefined ? "" : `items[${item}]: `;
  if (value.apiVersion !== "v1") {
    throw new ManifestError(
      file,
      doc,
      `${where}apiVersion is ${JSON.stringify(value.apiVersion)}, want "v1"`,
    );
  }
  if (!isRecord(value.metadata)) throw new ManifestError(file, doc, `${where}metadata is missing`);
  if (!isRecord(value.spec)) throw new ManifestError(file, doc, `${where}spec is missing`);
  return value as unknown as Pod;
}

/** A pod decoded from a manifest, with the 1-based document it came from. */
export interface ManifestPod {
  pod: Pod;
  document: number;
}

/**
 * Decodes a manifest's text into pods, skipping empty documents.
 * @param text the file or response body
 * @param opts the file name for errors, and whether lists are allowed
 * @returns the pods in document order, undefaulted and unvalidated
 * @throws {ManifestError} when any document is not valid YAML/JSON or not a v1 Pod
 */
export function parseManifest(text: string, opts: ParseManifestOptions): Pod[] {
  return parseManifestDocuments(text, opts).map((p) => p.pod);
}

/**
 * Like {@link parseManifest}, keeping each pod's document index so that later
 * errors (validation) can still point at the document.
 * @param text the file or response body
 * @param opts the file name for errors, and whether lists are allowed
 * @returns the pods with their document index
 * @throws {ManifestError} when any document is not valid YAML/JSON or not a v1 Pod
 */
export function parseManifestDocuments(text: string, opts: ParseManifestOptions): ManifestPod[] {
  const pods: ManifestPod[] = [];
  decodeDocuments(text, opts.file).forEach((value, i) => {
    const doc = i + 1;
    if (value === null || value === undefined) return;
    if (!isRecord(value)) throw new ManifestError(opts.file, doc, "not an object");
    const deep = tooDeep(value);
    if (deep !== undefined) {
      const at = deep.length > 200 ? `${deep.slice(0, 200)}...` : deep;
      throw new ManifestError(
        opts.file,
        doc,
        `${at}: nested deeper than ${MAX_MANIFEST_DEPTH} levels`,
      );
    }
    const kind = value.kind;
    if (kind === "Pod") {
      pods.push({ pod: checkPod(value, opts.file, doc), document: doc });
      return;
    }
    if (opts.allowList && (kind === "PodList" || kind === "List")) {
      if (!Array.isArray(value.items)) {
        throw new ManifestError(opts.file, doc, `${kind} has no items`);
      }
      value.items.forEach((item, j) => {
        if (!isRecord(item) || item.kind !== undefined && item.kind !== "Pod") {
          throw new ManifestError(opts.file, doc, `items[${j}]: not a Pod`);
        }
        // List items may omit kind/apiVersion; they inherit the list's.
        const pod = checkPod({ apiVersion: "v1", kind: "Pod", ...item }, opts.file, doc, j);
        pods.push({ pod, document: doc });
      });
      return;
    }
    const want = opts.allowList ? `"Pod" or "PodList"` : `"Pod"`;
    throw new ManifestError(opts.file, doc, `kind is ${JSON.stringify(kind)}, want ${want}`);
  });
  return pods;
}
