import assert from "node:assert/strict";
import { FakeClock } from "../../lib/util/clock.ts";
import {
  type Payload,
  timestampDirName,
  validatePayloadPath,
  writeAtomically,
} from "../../lib/volumes/mod.ts";
import { withTempDir } from "../kit/mod.ts";

const enc = new TextEncoder();

function payload(files: Record<string, string | [string, number]>): Payload {
  return new Map(
    Object.entries(files).map(([k, v]) => {
      const [text, mode] = typeof v === "string" ? [v, 0o644] : v;
      return [k, { data: enc.encode(text), mode }];
    }),
  );
}

async function entries(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) out.push(e.name);
  return out.sort();
}

Deno.test("timestampDirName() names payload dirs ..YYYY_MM_DD_HH_MM_SS.N in UTC", () => {
  const name = timestampDirName(Date.UTC(2026, 10, 30, 18, 4, 5), 0.25);
  assert.equal(name, "..2026_11_30_18_04_05.250000000");
  assert.match(timestampDirName(Date.now()), /^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d+$/);
});

Deno.test("validatePayloadPath() rejects absolute, .. and ..-prefixed paths", () => {
  validatePayloadPath("a/b.txt");
  assert.throws(() => validatePayloadPath(""), /must not be empty/);
  assert.throws(() => validatePayloadPath("/etc/passwd"), /must be relative/);
  assert.throws(() => validatePayloadPath("a/../../b"), /must not contain '\.\.'/);
  assert.throws(() => validatePayloadPath("..data"), /must not start with '\.\.'/);
});

Deno.test("writeAtomically() writes a timestamped dir, a ..data link and per-key links with modes", async () => {
  await withTempDir(async (dir) => {
    const clock = new FakeClock(Date.UTC(2026, 10, 30, 12, 0, 0));
    const wrote = await writeAtomically(
      dir,
      payload({ "a.conf": "alpha", "nested/b": ["beta", 0o600] }),
      { clock },
    );
    assert.equal(wrote, true);
    const names = await entries(dir);
    assert.equal(names.length, 4);
    const ts = names.find((n) => n.startsWith("..2026_11_30_12_00_00."));
    assert.ok(ts, `no timestamped dir in ${names}`);
    assert.deepEqual(names.filter((n) => n !== ts), ["..data", "a.conf", "nested"]);
    assert.equal(await Deno.readLink(`${dir}/..data`), ts);
    assert.equal(await Deno.readLink(`${dir}/a.conf`), "..data/a.conf");
    assert.equal(await Deno.readLink(`${dir}/nested`), "..data/nested");
    assert.equal(await Deno.readTextFile(`${dir}/a.conf`), "alpha");
    assert.equal(await Deno.readTextFile(`${dir}/nested/b`), "beta");
    assert.equal((await Deno.stat(`${dir}/a.conf`)).mode! & 0o777, 0o644);
    assert.equal((await Deno.stat(`${dir}/nested/b`)).mode! & 0o777, 0o600);
    assert.equal((await Deno.stat(`${dir}/${ts}`)).mode! & 0o777, 0o755);
  });
});

Deno.test("writeAtomically() leaves an unchanged payload alone", async () => {
  await withTempDir(async (dir) => {
    const clock = new FakeClock();
    await writeAtomically(dir, payload({ k: "v" }), { clock });
    const before = await Deno.readLink(`${dir}/..data`);
    clock.tick(5000);
    assert.equal(await writeAtomically(dir, payload({ k: "v" }), { clock }), false);
    assert.equal(await Deno.readLink(`${dir}/..data`), before);
  });
});

Deno.test("writeAtomically() swaps ..data on update, drops removed keys and the old dir", async () => {
  await withTempDir(async (dir) => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    await writeAtomically(dir, payload({ keep: "1", gone: "x" }), { clock });
    const first = await Deno.readLink(`${dir}/..data`);
    // A reader holding the "keep" link follows it to the new content.
    clock.tick(2000);
    await writeAtomically(dir, payload({ keep: "2", added: "new" }), { clock });
    const second = await Deno.readLink(`${dir}/..data`);
    assert.notEqual(second, first);
    assert.equal(await Deno.readTextFile(`${dir}/keep`), "2");
    assert.equal(await Deno.readTextFile(`${dir}/added`), "new");
    await assert.rejects(Deno.lstat(`${dir}/gone`), Deno.errors.NotFound);
    await assert.rejects(Deno.stat(`${dir}/${first}`), Deno.errors.NotFound);
    assert.deepEqual(await entries(dir), ["..data", second, "added", "keep"].sort());
  });
});

Deno.test("writeAtomically() rewrites when only a mode changed, and an empty payload empties the dir", async () => {
  await withTempDir(async (dir) => {
    await writeAtomically(dir, payload({ k: ["v", 0o644] }));
    assert.equal(await writeAtomically(dir, payload({ k: ["v", 0o400] })), true);
    assert.equal((await Deno.stat(`${dir}/k`)).mode! & 0o777, 0o400);
    assert.equal(await writeAtomically(dir, new Map()), true);
    const names = await entries(dir);
    assert.deepEqual(names.filter((n) => !n.startsWith("..")), []);
    assert.equal(names.length, 2); // ..data and its (empty) target
  });
});

Deno.test("writeAtomically() refuses an escaping path before writing anything", async () => {
  await withTempDir(async (dir) => {
    await assert.rejects(
      writeAtomically(dir, payload({ "../escape": "x" })),
      /invalid file path "\.\.\/escape"/,
    );
    assert.deepEqual(await entries(dir), []);
  });
});
