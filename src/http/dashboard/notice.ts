import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { secureCookie } from "../cookie-security.js";
import { sessionCookie } from "../session.js";

/**
 * The one-time message a POST leaves for the page its 303 leads to: what it did, why it was
 * refused (a refused action sent back to its form's page), or a secret shown once (a new API
 * key, a webhook signing secret).
 */
export type Notice =
  | { kind: "done"; message: string }
  | { kind: "refused"; message: string }
  | { kind: "secret"; values: Record<string, string> };

/**
 * The dashboard's one way to carry a notice: an HttpOnly, SameSite=Strict cookie scoped to the
 * page's path, living 60 s, cleared by the response that shows it, so a reload shows it no more.
 * Sealed with AES-256-GCM under a key derived from the session token, which the server never
 * stores, and bound to the page's path: nothing readable is kept server-side, nothing is in a
 * URL, and another session or page cannot open it.
 */
export const noticeCookie = "shipkey_notice";
const lifetimeMs = 60_000;

function keyOf(sessionToken: string): Buffer {
  return Buffer.from(hkdfSync("sha256", sessionToken, "", "shipkey dashboard notice", 32));
}

function cookieOptions(request: FastifyRequest, path: string) {
  return { path, httpOnly: true, sameSite: "strict" as const, secure: secureCookie(request) };
}

/** Leaves `notice` for the page at `path` (no query) to show once; signed out, nothing. */
export function setNotice(
  request: FastifyRequest,
  reply: FastifyReply,
  path: string,
  notice: Notice,
  now = Date.now(),
): void {
  const token = request.cookies[sessionCookie];
  if (!token) return;
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", keyOf(token), iv);
  cipher.setAAD(Buffer.from(path));
  const plain = JSON.stringify({ expiresAt: now + lifetimeMs, notice });
  const sealed = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
  reply.setCookie(
    noticeCookie,
    Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString("base64url"),
    { ...cookieOptions(request, path), maxAge: lifetimeMs / 1000 },
  );
}

/** The notice left for the requested page, if any; the cookie is cleared either way. */
export function takeNotice(
  request: FastifyRequest,
  reply: FastifyReply,
  now = Date.now(),
): Notice | undefined {
  const sealed = request.cookies[noticeCookie];
  if (sealed === undefined) return undefined;
  const path = request.url.split("?")[0] ?? "";
  reply.clearCookie(noticeCookie, cookieOptions(request, path));
  const token = request.cookies[sessionCookie];
  return token ? open(sealed, token, path, now) : undefined;
}

function open(sealed: string, token: string, path: string, now: number): Notice | undefined {
  const bytes = Buffer.from(sealed, "base64url");
  if (bytes.length < 29 || bytes.length > 4096) return undefined;
  try {
    const decipher = createDecipheriv("aes-256-gcm", keyOf(token), bytes.subarray(0, 12));
    decipher.setAAD(Buffer.from(path));
    decipher.setAuthTag(bytes.subarray(12, 28));
    const plain = Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]);
    const parsed = JSON.parse(plain.toString("utf8")) as { expiresAt: number; notice: Notice };
    return parsed.expiresAt > now ? parsed.notice : undefined;
  } catch {
    // Sealed under another session or for another page, tampered with or truncated.
    return undefined;
  }
}

/** The secret values of a notice, if it is one. */
export function secretOf(notice: Notice | undefined): Record<string, string> | undefined {
  return notice?.kind === "secret" ? notice.values : undefined;
}
