/**
 * Headless Chromium (Debian's `chromium`, installed by tools/dev.sh) for the
 * tests that load a page in a real browser.
 *
 * @module
 */

/**
 * The browser's path.
 * @returns it
 * @throws {Error} when it is not installed, saying how to install it
 */
export function chromiumPath(): string {
  for (const p of ["/usr/bin/chromium", "/usr/bin/chromium-browser"]) {
    try {
      if (Deno.statSync(p).isFile) return p;
    } catch {
      // next
    }
  }
  throw new Error("chromium is not installed: run tools/dev.sh (apt-get install chromium)");
}

/** Options for {@link runChromium}. */
export interface RunChromiumOptions {
  /** A profile directory of the test's own (two browsers must not share one). */
  profile: string;
  /** More switches: `--dump-dom`, `--screenshot=…`, `--virtual-time-budget=…`. */
  args: string[];
  /** Default 90 s. */
  timeoutMs?: number;
}

/**
 * Runs headless Chromium once on `url` (as root: no sandbox; self-signed
 * certificates accepted).
 * @param url the page
 * @param opts profile and switches
 * @returns what it printed on stdout (the DOM with `--dump-dom`)
 * @throws {Error} with its stderr's tail when it exits non-zero
 */
export async function runChromium(url: string, opts: RunChromiumOptions): Promise<string> {
  const out = await new Deno.Command(chromiumPath(), {
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-dev-shm-usage",
      "--no-first-run",
      "--ignore-certificate-errors",
      `--user-data-dir=${opts.profile}`,
      "--window-size=1280,1000",
      ...opts.args,
      url,
    ],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(opts.timeoutMs ?? 90_000),
  }).output();
  if (!out.success) {
    const err = new TextDecoder().decode(out.stderr);
    throw new Error(`chromium exited ${out.code} on ${url}: ${err.slice(-2000)}`);
  }
  return new TextDecoder().decode(out.stdout);
}
