import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { secureCookie } from "../cookie-security.js";
import { sessionCookie } from "../session.js";

/**
 * A one-time message from a form's POST to the page its 303 leads to, such as a new API key's
 * secret: an HttpOnly, SameSite=Strict cookie scoped to that page's path, living 60 s, cleared by
 * the response that shows it, so a reload shows it no more. Sealed with AES-256-GCM under a key
 * derived from the session token, which the server never stores: nothing readable is kept
 * server-side, nothing is in a URL, and another session cannot open it.
 */
export const flashCookie = "shipkey_flash";
/** The same, for a refused action's message shown on the page it was sent from (notices). */
export const noticeCookie = "shipkey_notice";
const lifetimeMs = 60_000;

type FlashValue = Record<string, string>;

function keyOf(sessionToken: string): Buffer {
  return Buffer.from(hkdfSync("sha256", sessionToken, "", "shipkey dashboard flash", 32));
}

function cookieOptions(request: FastifyRequest, path: string) {
  return {
    path,
    httpOnly: true,
    sameSite: "strict" as const,
    secure: secureCookie(request),
  };
}

export function setFlash(
  request: FastifyRequest,
  reply: FastifyReply,
  path: string,
  value: FlashValue,
  now = Date.now(),
  cookieName = flashCookie,
): void {
  const token = request.cookies[sessionCookie];
  if (!token) return;
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", keyOf(token), iv);
  cipher.setAAD(Buffer.from(path));
  const plain = JSON.stringify({ expiresAt: now + lifetimeMs, value });
  const sealed = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
  reply.setCookie(
    cookieName,
    Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString("base64url"),
    { ...cookieOptions(request, path), maxAge: lifetimeMs / 1000 },
  );
}

/** The page's flash, if any; clears it either way. */
export function takeFlash(
  request: FastifyRequest,
  reply: FastifyReply,
  path: string,
  now = Date.now(),
  cookieName = flashCookie,
): FlashValue | null {
  const sealed = request.cookies[cookieName];
  if (sealed === undefined) return null;
  reply.clearCookie(cookieName, cookieOptions(request, path));
  const token = request.cookies[sessionCookie];
  return token ? open(sealed, token, path, now) : null;
}

function open(sealed: string, token: string, path: string, now: number): FlashValue | null {
  const bytes = Buffer.from(sealed, "base64url");
  if (bytes.length < 29 || bytes.length > 4096) return null;
  try {
    const decipher = createDecipheriv("aes-256-gcm", keyOf(token), bytes.subarray(0, 12));
    decipher.setAAD(Buffer.from(path));
    decipher.setAuthTag(bytes.subarray(12, 28));
    const plain = Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]);
    const parsed = JSON.parse(plain.toString("utf8")) as { expiresAt: number; value: FlashValue };
    return parsed.expiresAt > now ? parsed.value : null;
  } catch {
    // Sealed under another session, tampered with or truncated: nothing to show.
    return null;
  }
}

/** A refused action's message, for the page at `path` (the form's page) to show once. */
export function setNotice(
  request: FastifyRequest,
  reply: FastifyReply,
  path: string,
  message: string,
): void {
  setFlash(request, reply, path, { message }, Date.now(), noticeCookie);
}

/** The notice for this page, if any; clears it either way. */
export function takeNotice(request: FastifyRequest, reply: FastifyReply): string | undefined {
  const path = request.url.split("?")[0] ?? "";
  return takeFlash(request, reply, path, Date.now(), noticeCookie)?.message;
}
