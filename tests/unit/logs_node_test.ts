import assert from "node:assert/strict";
import { nodeLogsHandler } from "../../lib/logs/mod.ts";

async function withRoot(fn: (get: (path: string) => Promise<Response>) => Promise<void>) {
  const root = await Deno.makeTempDir();
  await Deno.writeTextFile(`${root}/syslog`, "Jan 1 boot\n");
  await Deno.mkdir(`${root}/pods/a b`, { recursive: true });
  await Deno.writeTextFile(`${root}/pods/a b/0.log`, "x\n");
  await Deno.writeTextFile(`${root}/<odd>.log`, "y\n");
  const handler = nodeLogsHandler({ root });
  try {
    await fn(async (path) => {
      const url = new URL(`https://node:10250${path}`);
      return await handler(new Request(url), url);
    });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

Deno.test("nodeLogsHandler() lists a directory as Go's FileServer does", async () => {
  await withRoot(async (get) => {
    const res = await get("/logs/");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8");
    assert.equal(
      await res.text(),
      '<!doctype html>\n<meta name="viewport" content="width=device-width">\n<pre>\n' +
        '<a href="%3Codd%3E.log">&lt;odd&gt;.log</a>\n<a href="pods/">pods/</a>\n' +
        '<a href="syslog">syslog</a>\n</pre>\n',
    );
  });
});

Deno.test("nodeLogsHandler() serves files, redirects to canonical paths, 404s what is missing", async () => {
  await withRoot(async (get) => {
    let res = await get("/logs/syslog");
    assert.deepEqual([res.status, await res.text()], [200, "Jan 1 boot\n"]);
    assert.equal(res.headers.get("content-type"), "text/plain; charset=utf-8");
    res = await get("/logs/pods/a%20b/0.log");
    assert.deepEqual([res.status, await res.text()], [200, "x\n"]);
    res = await get("/logs/pods");
    assert.deepEqual([res.status, res.headers.get("location")], [301, "pods/"]);
    res = await get("/logs/syslog/");
    assert.deepEqual([res.status, res.headers.get("location")], [301, "../syslog"]);
    res = await get("/logs/nope");
    assert.deepEqual([res.status, await res.text()], [404, "404 page not found\n"]);
    // ".." cannot climb out of the root.
    res = await get("/logs/%2e%2e/%2e%2e/etc/passwd");
    assert.equal(res.status, 404);
    await res.body?.cancel();
  });
});
