import type { FastifyRequest } from "fastify";

/** COOKIE_SECURE's values. */
export const cookieSecureModes = ["auto", "always", "never"] as const;
export type CookieSecure = (typeof cookieSecureModes)[number];

/**
 * Whether a cookie set in answer to this request carries Secure (COOKIE_SECURE): "auto" when
 * the request came over HTTPS (behind a proxy, only with TRUST_PROXY), or always, or never.
 */
export function secureCookie(request: FastifyRequest): boolean {
  const mode = request.server.cookieSecure;
  return mode === "always" || (mode === "auto" && request.protocol === "https");
}

/** The start-up warning for a configuration under which session cookies travel without Secure. */
export function insecureCookieWarning(
  mode: CookieSecure,
  trustProxy: boolean | string[],
): string | null {
  if (mode === "never") {
    return "COOKIE_SECURE=never: dashboard session cookies are sent without Secure, also over plain HTTP";
  }
  if (mode === "auto" && trustProxy === false) {
    return "dashboard session cookies are sent without Secure: Shipkey serves plain HTTP; behind a TLS proxy set TRUST_PROXY (or COOKIE_SECURE=always)";
  }
  return null;
}
