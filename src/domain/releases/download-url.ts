/**
 * The spec's "well-formed URL using HTTPS", as stored: scheme https: and a host, no credentials
 * (a user or password in the URL would be handed to every client), no whitespace or control
 * characters anywhere (the WHATWG parser would silently strip or encode them). Returns the URL
 * normalised by that parser (`new URL(raw).href`: lower-case host, punycode, percent-encoding),
 * or null if it is not valid.
 */
export function normalizeDownloadUrl(raw: string): string | null {
  // eslint-disable-next-line no-control-regex -- rejecting control characters is the point
  if (/[\s\u0000-\u001f\u007f]/.test(raw)) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if (url.protocol !== "https:" || url.hostname === "") return null;
  if (url.username !== "" || url.password !== "") return null;
  return url.href;
}
