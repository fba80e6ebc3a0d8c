/**
 * The Cookie header for the page a dashboard POST's 303 leads to: `cookie` (the session) and
 * the one-time notice the POST left for that page (src/http/dashboard/notice.ts), as a browser
 * sends them.
 */
export function cookieAfter(
  cookie: string,
  response: { headers: Record<string, unknown> },
): string {
  const set = response.headers["set-cookie"];
  const all = Array.isArray(set) ? set.map(String) : set === undefined ? [] : [String(set)];
  const notice = all
    .map((line) => line.split(";")[0] ?? "")
    .filter((pair) => pair.startsWith("shipkey_notice=") && pair !== "shipkey_notice=");
  return [cookie, ...notice].join("; ");
}

/** The notice cookie's value a response set, or "" (the notice a test carries to the next page). */
export function noticeOf(response: { headers: Record<string, unknown> }): string {
  return /shipkey_notice=([^;]+)/.exec(String(response.headers["set-cookie"]))?.[1] ?? "";
}
