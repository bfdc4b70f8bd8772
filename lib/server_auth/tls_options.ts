/**
 * `tlsMinVersion` and `tlsCipherSuites` (upstream's Go names) turned into
 * node:tls server options, within what Deno 2.9.6's node:tls (rustls)
 * actually does. Observed with openssl s_client against a node:https server:
 *
 * - `minVersion`/`maxVersion` are honoured (TLS 1.2 refused under
 *   `minVersion: "TLSv1.3"`); TLS 1.0 and 1.1 are never offered.
 * - `ciphers` is ignored: whatever it says, the server negotiates exactly
 *   rustls's suites: TLS 1.3 AES-128-GCM, AES-256-GCM, CHACHA20-POLY1305;
 *   TLS 1.2 ECDHE (RSA or ECDSA, per the key) with the same three; no CBC,
 *   no static RSA, no DHE.
 *
 * So a cipher list is honoured only when it is moot (TLS 1.3 minimum: Go
 * ignores the list for TLS 1.3 too) or when it allows every TLS 1.2 suite
 * rustls would pick for the key; otherwise it is refused with an error
 * naming the setting rather than silently widened. Listed suites Deno cannot
 * offer, and minimum versions below 1.2, narrow what the server accepts and
 * come back as warnings.
 *
 * @module
 */

/** Upstream's `tlsMinVersion` names. */
const VERSIONS: Record<string, "TLSv1" | "TLSv1.1" | "TLSv1.2" | "TLSv1.3"> = {
  VersionTLS10: "TLSv1",
  VersionTLS11: "TLSv1.1",
  VersionTLS12: "TLSv1.2",
  VersionTLS13: "TLSv1.3",
};

/** The suites Deno's node:tls negotiates over TLS 1.2, by key type. */
const DENO_TLS12_SUITES = {
  rsa: [
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
  ],
  ec: [
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
  ],
} as const;

const TLS13_SUITES = [
  "TLS_AES_128_GCM_SHA256",
  "TLS_AES_256_GCM_SHA384",
  "TLS_CHACHA20_POLY1305_SHA256",
];

/** Every name upstream accepts (Go's secure and insecure suites, and cliflag's two aliases). */
const KNOWN_SUITES = new Set([
  ...TLS13_SUITES,
  ...DENO_TLS12_SUITES.rsa,
  ...DENO_TLS12_SUITES.ec,
  "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
  "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
  "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
  "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
  "TLS_RSA_WITH_RC4_128_SHA",
  "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
  "TLS_RSA_WITH_AES_128_CBC_SHA",
  "TLS_RSA_WITH_AES_256_CBC_SHA",
  "TLS_RSA_WITH_AES_128_CBC_SHA256",
  "TLS_RSA_WITH_AES_128_GCM_SHA256",
  "TLS_RSA_WITH_AES_256_GCM_SHA384",
  "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
  "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
  "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
  "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
  "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
  "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
  "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
]);

const ALIASES: Record<string, string> = {
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
};

/** Input of {@link resolveTlsOptions}. */
export interface TlsSettings {
  /** `tlsMinVersion`; empty means Go's server default, TLS 1.2. */
  tlsMinVersion?: string;
  /** `tlsCipherSuites`; empty means the defaults. */
  tlsCipherSuites?: string[];
  /** The serving key's type (node:crypto `asymmetricKeyType`); default "rsa". */
  keyType?: string;
}

/** node:tls server options and what the caller must log at start-up. */
export interface ResolvedTls {
  minVersion: "TLSv1.2" | "TLSv1.3";
  /** Settings narrowed by what Deno can do; log each as a warning. */
  warnings: string[];
}

/**
 * Resolves the TLS settings, or refuses them.
 * @throws Error naming `tlsMinVersion` or `tlsCipherSuites` when a value is
 *   unknown, or when the cipher list excludes a suite Deno would still negotiate
 */
export function resolveTlsOptions(settings: TlsSettings): ResolvedTls {
  const warnings: string[] = [];
  const versionName = settings.tlsMinVersion ?? "";
  let minVersion: ResolvedTls["minVersion"] = "TLSv1.2";
  if (versionName) {
    const v = VERSIONS[versionName];
    if (!v) {
      throw new Error(
        `tlsMinVersion: unknown tls version ${JSON.stringify(versionName)}; ` +
          `use one of ${Object.keys(VERSIONS).join(", ")}`,
      );
    }
    if (v === "TLSv1.3") minVersion = "TLSv1.3";
    else if (v !== "TLSv1.2") {
      warnings.push(
        `tlsMinVersion: ${versionName} is served as VersionTLS12: this TLS stack (Deno node:tls) has no TLS 1.0/1.1`,
      );
    }
  }

  const suites = settings.tlsCipherSuites ?? [];
  if (suites.length === 0) return { minVersion, warnings };
  const unknown = suites.filter((s) => !KNOWN_SUITES.has(s));
  if (unknown.length) {
    throw new Error(
      `tlsCipherSuites: cipher suite ${unknown.join(", ")} not supported or doesn't exist`,
    );
  }
  if (minVersion === "TLSv1.3") {
    warnings.push(
      "tlsCipherSuites: ignored with tlsMinVersion VersionTLS13 (TLS 1.3 suites are not configurable)",
    );
    return { minVersion, warnings };
  }
  const listed = new Set(suites.map((s) => ALIASES[s] ?? s));
  const keyType = settings.keyType === "ec" ? "ec" : "rsa";
  const negotiable = DENO_TLS12_SUITES[keyType];
  const excluded = negotiable.filter((s) => !listed.has(s));
  if (excluded.length) {
    throw new Error(
      `tlsCipherSuites: cannot be honoured: Deno's node:tls ignores the cipher list and would still ` +
        `negotiate ${excluded.join(", ")}; list all of ${negotiable.join(", ")}, ` +
        `or set tlsMinVersion to VersionTLS13, or leave tlsCipherSuites empty`,
    );
  }
  const unavailable = suites.filter((s) =>
    !(negotiable as readonly string[]).includes(ALIASES[s] ?? s) && !TLS13_SUITES.includes(s)
  );
  if (unavailable.length) {
    warnings.push(
      `tlsCipherSuites: ${unavailable.join(", ")} not offered: Deno's node:tls only negotiates ${
        negotiable.join(", ")
      } over TLS 1.2`,
    );
  }
  return { minVersion, warnings };
}
