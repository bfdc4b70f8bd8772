/**
 * The per-request gate of the kubelet's secure port (upstream
 * `Server.InstallAuthFilter`): authenticate, map the request to `nodes`
 * attributes, authorize; the request goes on only when one of its
 * subresources is allowed. Refusals are upstream's plain-text answers:
 * 401 `Unauthorized`, 403 `Forbidden (user=…, verb=…, resource=nodes,
 * subresource(s)=[…])`, 500 `Authorization error (…)` when the authorizer
 * failed.
 *
 * @module
 */

import type { Logger } from "../util/log.ts";
import { requestAttributes } from "./attributes.ts";
import type { Authenticator, Authorizer, RequestCredentials, UserInfo } from "./types.ts";

/** What the gate reads from a request. */
export interface FilterInput extends RequestCredentials {
  method: string;
  /** The URL path, without the query. */
  path: string;
}

/** The gate's verdict: go on as `identity`, or answer with `response`. */
export type FilterResult =
  | { identity: UserInfo; response?: undefined }
  | { identity?: undefined; response: Response };

/** Options for {@link createRequestFilter}. */
export interface RequestFilterOptions {
  authenticator: Authenticator;
  authorizer: Authorizer;
  nodeName: string;
  /** Upstream's KubeletFineGrainedAuthz (default on). */
  fineGrained?: boolean;
  logger?: Logger;
}

function plain(status: number, body: string): Response {
  // go-restful writes the text without a Content-Type; net/http sniffs this one.
  return new Response(body, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8" },
  });
}

/** The gate as a function; one per server, shared by plain and upgrade routes. */
export type RequestFilter = (req: FilterInput) => Promise<FilterResult>;

/** Builds the gate. */
export function createRequestFilter(opts: RequestFilterOptions): RequestFilter {
  const log = opts.logger;
  return async (req) => {
    const authn = await opts.authenticator.authenticate(req);
    if (!authn.user) {
      if (authn.error) {
        log?.error("Unable to authenticate the request due to an error", authn.error);
      }
      return { response: plain(401, "Unauthorized") };
    }
    const user = authn.user;
    const attrs = requestAttributes({
      user,
      method: req.method,
      path: req.path,
      nodeName: opts.nodeName,
      ...(opts.fineGrained === undefined ? {} : { fineGrained: opts.fineGrained }),
    });
    for (const attr of attrs) {
      let decision;
      try {
        decision = (await opts.authorizer.authorize(attr)).decision;
      } catch (err) {
        const fields = {
          user: user.name,
          verb: attr.verb,
          resource: attr.resource,
          subresource: attr.subresource,
        };
        log?.error("Authorization error", err, fields);
        return {
          response: plain(
            500,
            `Authorization error (user=${user.name}, verb=${attr.verb}, resource=${attr.resource}, subresource=${attr.subresource})`,
          ),
        };
      }
      if (decision === "allow") return { identity: user };
    }
    const first = attrs[0];
    const subresources = attrs.map((a) => a.subresource);
    log?.v(2).info("Forbidden", {
      user: user.name,
      verb: first?.verb,
      resource: first?.resource,
      "subresource(s)": subresources,
    });
    return {
      response: plain(
        403,
        `Forbidden (user=${user.name}, verb=${first?.verb}, resource=${first?.resource}, subresource(s)=[${
          subresources.join(" ")
        }])\n`,
      ),
    };
  };
}
