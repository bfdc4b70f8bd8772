/**
 * Decoding a watch response body incrementally. The apiserver writes one JSON
 * event per line, but its JSON framing (like Go's json.Decoder) only promises
 * a sequence of objects, so this splitter tracks object depth and strings
 * instead of trusting newlines; an event may arrive split across any number
 * of chunks and is parsed as soon as its closing brace arrives. Nothing but
 * the current partial event is buffered.
 *
 * @module
 */

/** Splits a byte stream of concatenated (usually newline-separated) JSON objects. */
export class JsonObjectSplitter {
  readonly #decoder = new TextDecoder();
  #buf = "";
  /** Scan position within #buf. */
  #pos = 0;
  #depth = 0;
  #inString = false;
  #escaped = false;

  /**
   * Feeds the next chunk.
   * @param chunk bytes from the body (may end inside a UTF-8 sequence)
   * @returns the complete objects' JSON texts, in order
   * @throws Error when bytes outside an object are not whitespace
   */
  push(chunk: Uint8Array): string[] {
    this.#buf += this.#decoder.decode(chunk, { stream: true });
    const out: string[] = [];
    let start = 0;
    const buf = this.#buf;
    for (let i = this.#pos; i < buf.length; i++) {
      const c = buf.charCodeAt(i);
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (c === 0x5c) this.#escaped = true; // backslash
        else if (c === 0x22) this.#inString = false; // quote
        continue;
      }
      if (this.#depth === 0) {
        if (c === 0x7b) { // {
          start = i;
          this.#depth = 1;
        } else if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) {
          throw new Error(`unexpected ${JSON.stringify(buf[i])} between watch events`);
        }
        continue;
      }
      if (c === 0x22) this.#inString = true;
      else if (c === 0x7b || c === 0x5b) this.#depth++;
      else if (c === 0x7d || c === 0x5d) {
        if (--this.#depth === 0) {
          out.push(buf.slice(start, i + 1));
          start = i + 1;
        }
      }
    }
    // Keep only the unfinished object; remember how far it was scanned.
    if (this.#depth === 0) {
      this.#buf = "";
      this.#pos = 0;
    } else {
      this.#buf = buf.slice(start);
      this.#pos = buf.length - start;
    }
    return out;
  }

  /** True when a partial object is buffered (the stream ended mid-event). */
  get pending(): boolean {
    return this.#depth > 0;
  }
}
