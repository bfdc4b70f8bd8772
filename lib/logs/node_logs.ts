/**
 * `/logs/`: the node's log directory served as upstream serves it, through
 * Go's http.FileServer under http.StripPrefix("/logs/"): directory listings
 * as `<pre>` links, files as they are, canonical-path redirects. The
 * NodeLogQuery `?query=` mode needs `enableSystemLogQuery`, off by default,
 * so only the file server is here.
 *
 * @module
 */

import { type Handler, textResponse } from "./_http.ts";

/** Upstream's nodeLogDir. */
export const DEFAULT_NODE_LOG_DIR = "/var/log";

/** Options for {@link nodeLogsHandler}. */
export interface NodeLogsOptions {
  /** The directory served; default /var/log. */
  root?: string;
}

const CONTENT_TYPES: Record<string, string> = {
  ".css": "text/css; charset=utf-8",
  ".htm": "text/html; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".json": "application/json",
  ".xml": "text/xml; charset=utf-8",
  ".gz": "application/gzip",
};

/** Go's path.Clean for a rooted path. */
function cleanPath(p: string): string {
  const out: string[] = [];
  for (const seg of p.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") out.pop();
    else out.push(seg);
  }
  return "/" + out.join("/");
}

function htmlEscape(s: string): string {
  return s.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;" })[c]!,
  );
}

function redirect(to: string, url: URL): Response {
  return new Response(null, { status: 301, headers: { location: to + url.search } });
}

function errorResponse(err: unknown): Response {
  if (err instanceof Deno.errors.NotFound) return textResponse(404, "404 page not found\n");
  if (err instanceof Deno.errors.PermissionDenied) return textResponse(403, "403 Forbidden\n");
  return textResponse(500, "500 Internal Server Error\n");
}

/** Go's DetectContentType, reduced to what a log directory holds. */
function sniff(head: Uint8Array): string {
  if (head[0] === 0x1f && head[1] === 0x8b) return "application/x-gzip";
  for (const b of head) {
    if (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0c && b !== 0x0d && b !== 0x1b) {
      return "application/octet-stream";
    }
  }
  return "text/plain; charset=utf-8";
}

/**
 * The `/logs/` handler.
 * @param opts the directory to serve
 * @returns a handler for `GET /logs/...`
 */
export function nodeLogsHandler(opts: NodeLogsOptions = {}): Handler {
  const root = (opts.root ?? DEFAULT_NODE_LOG_DIR).replace(/\/+$/, "");
  return async (req, url) => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      return textResponse(405, "405: Method Not Allowed");
    }
    let rel: string;
    try {
      if (!url.pathname.startsWith("/logs/")) return textResponse(404, "404 page not found\n");
      // The request's path after the prefix, as Go sees it once decoded.
      rel = "/" + decodeURIComponent(url.pathname.slice("/logs/".length));
    } catch {
      return textResponse(400, "400 Bad Request\n");
    }
    if (rel.includes("\0")) return textResponse(400, "invalid character in file path\n");
    if (rel.endsWith("/index.html")) return redirect("./", url);
    const name = cleanPath(rel);
    const full = root + name;
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(full);
    } catch (err) {
      return errorResponse(err);
    }
    const base = name === "/" ? "" : name.slice(name.lastIndexOf("/") + 1);
    if (info.isDirectory && !rel.endsWith("/")) return redirect(`${base}/`, url);
    if (!info.isDirectory && rel.endsWith("/")) return redirect(`../${base}`, url);
    const lastModified = info.mtime ? { "last-modified": info.mtime.toUTCString() } : {};

    if (info.isDirectory) {
      try {
        await Deno.stat(`${full}/index.html`);
        return await serveFile(`${full}/index.html`, req, lastModified);
      } catch { /* no index: list the directory */ }
      const entries: string[] = [];
      try {
        for await (const e of Deno.readDir(full)) {
          let dir = e.isDirectory;
          if (e.isSymlink) {
            dir = await Deno.stat(`${full}/${e.name}`).then((s) => s.isDirectory, () => false);
          }
          entries.push(dir ? `${e.name}/` : e.name);
        }
      } catch (err) {
        return errorResponse(err);
      }
      entries.sort();
      let body = '<!doctype html>\n<meta name="viewport" content="width=device-width">\n<pre>\n';
      for (const e of entries) {
        const href = e.split("/").map(encodeURIComponent).join("/").replace(/^([^/]*:)/, "./$1");
        body += `<a href="${htmlEscape(href)}">${htmlEscape(e)}</a>\n`;
      }
      body += "</pre>\n";
      return new Response(req.method === "HEAD" ? null : body, {
        status: 200,
        headers: { "content-type": "text/html; charset=utf-8", ...lastModified },
      });
    }
    try {
      return await serveFile(full, req, lastModified);
    } catch (err) {
      return errorResponse(err);
    }
  };
}

async function serveFile(
  path: string,
  req: Request,
  extra: Record<string, string>,
): Promise<Response> {
  const file = await Deno.open(path, { read: true });
  try {
    const size = (await file.stat()).size;
    const dot = path.lastIndexOf(".");
    let type = dot > path.lastIndexOf("/") ? CONTENT_TYPES[path.slice(dot)] : undefined;
    if (!type) {
      const head = new Uint8Array(512);
      const n = (await file.read(head)) ?? 0;
      type = sniff(head.subarray(0, n));
      await file.seek(0, Deno.SeekMode.Start);
    }
    const headers = { "content-type": type, "content-length": String(size), ...extra };
    if (req.method === "HEAD") {
      file.close();
      return new Response(null, { status: 200, headers });
    }
    return new Response(firstBytes(file, size), { status: 200, headers });
  } catch (err) {
    file.close();
    throw err;
  }
}

/** The file's first `size` bytes: a log that grows while it is sent must not overrun content-length. */
function firstBytes(file: Deno.FsFile, size: number): ReadableStream<Uint8Array> {
  let left = size;
  const done = (c: ReadableStreamDefaultController<Uint8Array>) => {
    file.close();
    c.close();
  };
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      if (left <= 0) return done(c);
      const buf = new Uint8Array(Math.min(64 * 1024, left));
      const n = await file.read(buf);
      if (n === null) return done(c);
      left -= n;
      c.enqueue(buf.subarray(0, n));
    },
    cancel() {
      file.close();
    },
  });
}
