/**
 * Regenerates `proto/api.json` from `proto/api.proto`.
 *
 * Usage: `deno run -A tools/gen_proto.ts` from the repository root. Commit both
 * files together; `tests/unit/cri_codec_test.ts` fails when they disagree.
 *
 * @module
 */

import { DESCRIPTOR_PATH, PROTO_PATH, renderDescriptor } from "../lib/cri/_descriptor_gen.ts";

const root = new URL("../", import.meta.url);
const protoText = await Deno.readTextFile(new URL(PROTO_PATH, root));
const rendered = renderDescriptor(protoText);
await Deno.writeTextFile(new URL(DESCRIPTOR_PATH, root), rendered);
console.log(`wrote ${DESCRIPTOR_PATH} (${rendered.length} bytes)`);
