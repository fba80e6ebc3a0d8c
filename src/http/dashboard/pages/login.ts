import { normalizeIP } from "@fastify/rate-limit";
import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import { createSession, deleteSession, verifySignIn } from "../../../domain/admins/admins.js";
import { recordAudit } from "../../../domain/audit/audit-log.js";
import { ShipkeyError } from "../../../errors.js";
import { Type } from "typebox";
import { type Form, formBody } from "../form-body.js";
import { loginView } from "../views/login.js";
import { sendPage } from "../page-kit.js";
import { clearSessionCookie, csrfMatches, sessionCookie, setSessionCookie } from "../../session.js";
import type { SignInThrottle } from "../sign-in-throttle.js";

/**
 * The sign-in form as sent, exactly as typed: the password never trimmed, the CSRF token (already
 * checked against the cookie) kept for the retry. Sign-in has no admin API endpoint.
 */
const SignInForm = Type.Object({
  email: Type.String(),
  password: Type.String(),
  _csrf: Type.String(),
});
const asTyped = { verbatim: ["email", "password", "_csrf"] } as const;

export function loginRoutes(app: FastifyInstance, db: Kysely<DB>, throttle: SignInThrottle): void {
  app.get("/admin/login", async (request, reply) => {
    if (request.adminSession) return reply.redirect("/admin");
    return sendPage(reply, loginView(reply.loginCsrf));
  });

  app.post<{ Body: Form }>("/admin/login", async (request, reply) => {
    const { email, password, _csrf: csrf } = await formBody(SignInForm, request.body, asTyped);
    // IPv6 clients by their /64, as the rate limits count them.
    const verdict = throttle.begin(normalizeIP(request.ip ?? ""), email);
    if (!verdict.allowed) {
      const seconds = verdict.retryAfterSeconds;
      reply.header("retry-after", String(seconds));
      const error = `Too many sign-in attempts from your address. Try again in ${seconds} seconds.`;
      return sendPage(reply, loginView(csrf, error, email), 429);
    }
    if (verdict.attempt.waitMs > 0) await sleep(verdict.attempt.waitMs);
    const signedIn = await signIn(db, email, password, (outcome) =>
      throttle.end(verdict.attempt, outcome),
    );
    if (!signedIn) {
      // The same answer whether or not the email exists.
      return sendPage(reply, loginView(csrf, "Wrong email or password.", email), 401);
    }
    const { admin, token } = signedIn;
    setSessionCookie(request, reply, token);
    await recordAudit(
      db,
      { type: "admin", id: admin.id, label: admin.email, ip: request.ip },
      "admin.sign_in",
      { type: "admin", id: admin.id },
    );
    return reply.redirect("/admin", 303);
  });

  app.post<{ Body: { _csrf?: unknown } }>("/admin/logout", async (request, reply) => {
    const session = request.adminSession;
    if (session && csrfMatches(session, request.body?._csrf)) {
      const token = request.cookies[sessionCookie];
      if (token) await deleteSession(db, token);
    }
    clearSessionCookie(request, reply);
    return reply.redirect("/admin/login", 303);
  });
}

/**
 * Checks the password and opens a session, or null; `end` learns the outcome either way, for
 * the throttle.
 */
async function signIn(
  db: Kysely<DB>,
  email: string,
  password: string,
  end: (outcome: { succeeded: boolean; accountExists: boolean }) => void,
) {
  const { admin, accountExists, verifiedHash } = await verifySignIn(db, email, password);
  let session: Awaited<ReturnType<typeof createSession>> | null = null;
  try {
    if (admin && verifiedHash !== null) {
      session = await createSession(db, admin.id, Date.now(), verifiedHash);
    }
  } catch (err) {
    // Removed, or its password reset, since the check: refused like a wrong password.
    if (!(err instanceof ShipkeyError && err.code === "ADMIN_NOT_FOUND")) throw err;
  } finally {
    end({ succeeded: session !== null, accountExists });
  }
  return admin && session ? { admin, token: session.token } : null;
}
