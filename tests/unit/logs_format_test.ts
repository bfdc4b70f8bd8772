import assert from "node:assert/strict";
import { CriLineParser } from "../../lib/logs/cri_format.ts";
import {
  LogQueryError,
  logReadOptions,
  parseCriLine,
  parsePodLogQuery,
  parseRfc3339,
} from "../../lib/logs/mod.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

Deno.test("parseCriLine() reads timestamp, stream, tag and content of full and partial lines", () => {
  const full = parseCriLine(enc.encode("2016-10-06T00:17:09.669794202Z stdout F hello world\n"));
  assert.ok(typeof full !== "string");
  assert.equal(full.timestamp, "2016-10-06T00:17:09.669794202Z");
  assert.equal(full.timeMs, Date.UTC(2016, 9, 6, 0, 17, 9, 669));
  assert.equal(full.stream, "stdout");
  assert.equal(full.partial, false);
  assert.equal(dec.decode(full.content), "hello world\n");

  const partial = parseCriLine(enc.encode("2016-10-06T00:17:09.669794203Z stderr P:x part\n"));
  assert.ok(typeof partial !== "string");
  assert.equal(partial.stream, "stderr");
  assert.equal(partial.partial, true);
  assert.equal(dec.decode(partial.content), "part", "a partial line's newline is trimmed");
});

Deno.test("parseCriLine() names what is wrong with a line that is not CRI", () => {
  assert.equal(parseCriLine(enc.encode("garbage")), "timestamp is not found");
  assert.match(String(parseCriLine(enc.encode("yesterday stdout F x\n"))), /timestamp format/);
  assert.equal(parseCriLine(enc.encode("2016-10-06T00:17:09Z stdout")), "stream type is not found");
  assert.equal(
    parseCriLine(enc.encode("2016-10-06T00:17:09Z stdin F x\n")),
    'unexpected stream type "stdin"',
  );
  assert.equal(parseCriLine(enc.encode("2016-10-06T00:17:09Z stdout F")), "log tag is not found");
});

Deno.test("CriLineParser.scan() reads a line in place inside a larger buffer, never past its end", () => {
  const buf = enc.encode(
    "2016-10-06T00:17:09Z stdout F first\n2016-10-06T00:17:10.5+01:00 stderr P second\nnext line",
  );
  const parser = new CriLineParser({ timestamps: true });
  const at = buf.indexOf(0x0a) + 1;
  const end = buf.indexOf(0x0a, at) + 1;
  assert.equal(parser.scan(buf, at, end), undefined);
  const l = parser.line;
  assert.equal(l.timestamp, "2016-10-06T00:17:10.5+01:00");
  assert.equal(l.timeMs, Date.UTC(2016, 9, 5, 23, 17, 10, 500));
  assert.equal(l.stream, "stderr");
  assert.equal(l.partial, true);
  assert.equal(dec.decode(buf.subarray(l.contentStart, l.contentEnd)), "second");
  // The first line cut before its tag: the spaces of the lines after it do not count.
  assert.equal(
    parser.scan(buf, 0, "2016-10-06T00:17:09Z stdout".length),
    "stream type is not found",
  );
});

Deno.test("parseRfc3339() renders times as Go's RFC3339Nano: trailing zeros dropped, zero offset as Z", () => {
  assert.equal(parseRfc3339("2026-01-02T03:04:05.120000000Z")?.text, "2026-01-02T03:04:05.12Z");
  assert.equal(parseRfc3339("2026-01-02T03:04:05.000Z")?.text, "2026-01-02T03:04:05Z");
  assert.equal(parseRfc3339("2026-01-02T03:04:05+00:00")?.text, "2026-01-02T03:04:05Z");
  const east = parseRfc3339("2026-01-02T03:04:05.5+02:00");
  assert.equal(east?.text, "2026-01-02T03:04:05.5+02:00");
  assert.equal(east?.ms, Date.UTC(2026, 0, 2, 1, 4, 5, 500));
  assert.equal(parseRfc3339("2026-02-30T00:00:00Z"), undefined);
  assert.equal(parseRfc3339("2026-01-02 03:04:05Z"), undefined);
});

function queryError(q: string): [number, string] {
  try {
    parsePodLogQuery(new URLSearchParams(q));
  } catch (err) {
    assert.ok(err instanceof LogQueryError);
    return [err.status, err.message];
  }
  throw new Error(`query ${q} was accepted`);
}

Deno.test("parsePodLogQuery() decodes booleans and numbers as apimachinery's query conversions", () => {
  assert.deepEqual(parsePodLogQuery(new URLSearchParams("")), {
    follow: false,
    previous: false,
    timestamps: false,
  });
  const o = parsePodLogQuery(
    new URLSearchParams("follow&previous=FALSE&timestamps=1&tailLines=10&limitBytes=5"),
  );
  assert.equal(o.follow, true, "an empty value is true");
  assert.equal(o.previous, false);
  assert.equal(o.timestamps, true);
  assert.equal(o.tailLines, 10);
  assert.equal(o.limitBytes, 5);
  assert.equal(parsePodLogQuery(new URLSearchParams("follow=0")).follow, false);
  assert.equal(
    parsePodLogQuery(new URLSearchParams("sinceTime=2026-01-01T00:00:10Z")).sinceTime,
    Date.UTC(2026, 0, 1, 0, 0, 10),
  );
});

Deno.test("parsePodLogQuery() keeps the legacy tail parameter; tail=all means every line", () => {
  assert.equal(parsePodLogQuery(new URLSearchParams("tail=3")).tailLines, 3);
  assert.equal(parsePodLogQuery(new URLSearchParams("tailLines=3&tail=all")).tailLines, undefined);
});

Deno.test("parsePodLogQuery() answers undecodable values with 400 and invalid options with 422, as upstream", () => {
  const decode = [400, `{"message": "Unable to decode query."}`];
  const invalid = [422, `{"message": "Invalid request."}`];
  assert.deepEqual(queryError("tailLines=ten"), decode);
  assert.deepEqual(queryError("limitBytes="), decode);
  assert.deepEqual(queryError("sinceTime=yesterday"), decode);
  assert.deepEqual(queryError("sinceSeconds=99999999999999999999"), decode);
  assert.deepEqual(queryError("tailLines=-1"), invalid);
  assert.deepEqual(queryError("limitBytes=0"), invalid);
  assert.deepEqual(queryError("sinceSeconds=0"), invalid);
  assert.deepEqual(queryError("sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z"), invalid);
});

Deno.test("logReadOptions() turns sinceSeconds into a time before now and defaults to everything", () => {
  const now = Date.UTC(2026, 0, 1, 0, 1, 0);
  assert.deepEqual(logReadOptions({ follow: false, previous: false, timestamps: false }, now), {
    tail: -1,
    bytes: -1,
    sinceMs: 0,
    follow: false,
    timestamps: false,
  });
  const o = logReadOptions(
    { follow: true, previous: false, timestamps: true, sinceSeconds: 30, tailLines: 2 },
    now,
  );
  assert.equal(o.sinceMs, now - 30_000);
  assert.equal(o.tail, 2);
});
