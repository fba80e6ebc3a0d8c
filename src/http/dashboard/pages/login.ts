import { normalizeIP } from "@fastify/rate-limit";
import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import { createSession, deleteSession, verifySignIn } from "../../../domain/admins/admins.js";
import { recordAudit } from "../../../domain/audit/audit-log.js";
import { ShipkeyError } from "../../../errors.js";
import { document, html } from "../html.js";
import { clearSessionCookie, csrfMatches, sessionCookie, setSessionCookie } from "../session.js";
import type { SignInThrottle } from "../sign-in-throttle.js";

function loginPage(csrf: string, error?: string, email = "") {
  return document(
    "Sign in",
    html`<div class="login">
      <section class="panel">
        <h1>Sign in to Shipkey</h1>
        ${error ? html`<p class="alert" role="alert">${error}</p>` : ""}
        <form method="post" action="/admin/login" class="stack">
          <input type="hidden" name="_csrf" value="${csrf}" />
          <label
            >Email
            <input
              type="email"
              name="email"
              autocomplete="username"
              required
              value="${email}"
              autofocus
          /></label>
          <label
            >Password
            <input type="password" name="password" autocomplete="current-password" required
          /></label>
          <button type="submit">Sign in</button>
        </form>
      </section>
    </div>`,
  );
}

export function loginRoutes(app: FastifyInstance, db: Kysely<DB>, throttle: SignInThrottle): void {
  app.get("/admin/login", async (request, reply) => {
    if (request.adminSession) return reply.redirect("/admin");
    return reply.type("text/html; charset=utf-8").send(loginPage(reply.loginCsrf).value);
  });

  app.post<{ Body: { email?: unknown; password?: unknown; _csrf?: unknown } }>(
    "/admin/login",
    async (request, reply) => {
      const email = typeof request.body?.email === "string" ? request.body.email : "";
      const password = typeof request.body?.password === "string" ? request.body.password : "";
      // The form keeps its CSRF token (already checked against the cookie) for the retry.
      const csrf = typeof request.body?._csrf === "string" ? request.body._csrf : "";
      // IPv6 clients by their /64, as the rate limits count them.
      const verdict = throttle.begin(normalizeIP(request.ip ?? ""), email);
      if (!verdict.allowed) {
        const seconds = verdict.retryAfterSeconds;
        return reply
          .status(429)
          .header("retry-after", String(seconds))
          .type("text/html; charset=utf-8")
          .send(
            loginPage(
              csrf,
              `Too many sign-in attempts from your address. Try again in ${seconds} seconds.`,
              email,
            ).value,
          );
      }
      if (verdict.attempt.waitMs > 0) await sleep(verdict.attempt.waitMs);
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
        throttle.end(verdict.attempt, { succeeded: session !== null, accountExists });
      }
      if (!admin || !session) {
        // The same answer whether or not the email exists.
        return reply
          .status(401)
          .type("text/html; charset=utf-8")
          .send(loginPage(csrf, "Wrong email or password.", email).value);
      }
      setSessionCookie(request, reply, session.token);
      await recordAudit(
        db,
        { type: "admin", id: admin.id, label: admin.email, ip: request.ip },
        "admin.sign_in",
        {
          type: "admin",
          id: admin.id,
        },
      );
      return reply.redirect("/admin", 303);
    },
  );

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
