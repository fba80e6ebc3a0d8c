import type {} from "@fastify/cookie";
import { timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import { secureCookie } from "./cookie-security.js";
import type { DB } from "../db/schema.js";
import { findSession, type Session, sessionLifetimeMs } from "../domain/admins/admins.js";

export const sessionCookie = "shipkey_session";

declare module "fastify" {
  interface FastifyRequest {
    adminSession: Session | null;
  }
}

export async function loadSession(
  db: Kysely<DB>,
  request: FastifyRequest,
): Promise<Session | null> {
  const token = request.cookies[sessionCookie];
  return token ? findSession(db, token) : null;
}

export function setSessionCookie(
  request: FastifyRequest,
  reply: FastifyReply,
  token: string,
): void {
  reply.setCookie(sessionCookie, token, {
    path: "/",
    httpOnly: true,
    sameSite: "strict",
    secure: secureCookie(request),
    maxAge: Math.floor(sessionLifetimeMs / 1000),
  });
}

export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply): void {
  reply.clearCookie(sessionCookie, {
    path: "/",
    httpOnly: true,
    sameSite: "strict",
    secure: secureCookie(request),
  });
}

/** Constant-time comparison of a submitted CSRF token with the session's. */
export function csrfMatches(session: Session, submitted: unknown): boolean {
  if (typeof submitted !== "string") return false;
  const a = Buffer.from(session.csrfToken);
  const b = Buffer.from(submitted);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Dashboard pages: CSP without inline scripts, no framing, no sniffing, no referrer leaks. */
export function setSecurityHeaders(reply: FastifyReply): void {
  reply.header(
    "content-security-policy",
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
      "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'",
  );
  reply.header("x-frame-options", "DENY");
  reply.header("x-content-type-options", "nosniff");
  reply.header("referrer-policy", "same-origin");
  reply.header("cache-control", "no-store");
}
