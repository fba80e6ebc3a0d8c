import { randomBytes, timingSafeEqual } from "node:crypto";
import cookie from "@fastify/cookie";
import formbody from "@fastify/formbody";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import { secureCookie } from "../cookie-security.js";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";
import type { DatabaseFaults } from "../database-faults.js";
import { errorHandler } from "../error-handler.js";
import { chartScript, chartStylesheet, favicon, script, stylesheet } from "./assets.js";
import { overviewPages } from "./pages/overview.js";
import { failurePage } from "./failure-page.js";
import { noticeCookie, takeNotice } from "./notice.js";
import { adminPages } from "./pages/admins.js";
import { apiKeyPages } from "./pages/api-keys.js";
import { webhookPages } from "./pages/webhooks.js";
import { integrationPages } from "./pages/integrations.js";
import type { WebhookWorker } from "../webhook-delivery.js";
import type { MailWorker } from "../email-delivery.js";
import { emailPages } from "./pages/emails.js";
import { auditPages } from "./pages/audit.js";
import { licensePages } from "./pages/licenses.js";
import { loginRoutes } from "./pages/login.js";
import { productKeyPages } from "./pages/product-keys.js";
import { productPages } from "./pages/products.js";
import { planPages } from "./pages/plans.js";
import type { Signing } from "../../domain/signing/key-ring.js";
import { releasePages } from "./pages/releases.js";
import { rejectNulInput } from "../request-fields.js";
import { csrfMatches, loadSession, setSecurityHeaders } from "../session.js";
import { SignInThrottle } from "./sign-in-throttle.js";

export const loginCsrfCookie = "shipkey_login_csrf";

/**
 * The admin dashboard under /admin: server-rendered pages over the same domain functions as the
 * admin API and the CLI. Forms are parsed only in this plugin's scope, so the spec endpoints
 * still answer 415 to form bodies.
 */
export async function dashboard(
  app: FastifyInstance,
  db: Kysely<DB>,
  faults: DatabaseFaults,
  signing: Signing,
  webhooks: WebhookWorker,
  mail: MailWorker,
): Promise<void> {
  await app.register(formbody, { bodyLimit: 64 * 1024 });
  // Registered in the scopes that read cookies (here and the admin API), so that its onRequest
  // hook does not run on the license and publish endpoints.
  await app.register(cookie);

  app.addHook("onRequest", async (request, reply) => {
    setSecurityHeaders(reply);
    request.adminSession = await loadSession(db, request);
  });
  app.addHook("preValidation", async (request) => rejectNulInput(request));
  app.setErrorHandler(errorHandler(faults, failurePage));
  assetRoutes(app);

  app.addHook("preHandler", loginCsrf);
  loginRoutes(app, db, new SignInThrottle());

  await app.register(async (pages) => {
    pages.decorateRequest("dashboardNotice", undefined);
    pages.addHook("preHandler", signedIn);
    pages.addHook("preHandler", async (request, reply) => {
      if (request.method === "GET" && request.cookies[noticeCookie] !== undefined) {
        request.dashboardNotice = takeNotice(request, reply);
      }
    });
    overviewPages(pages, db);
    licensePages(pages, db);
    productPages(pages, db, signing);
    productKeyPages(pages, db, signing);
    planPages(pages, db);
    releasePages(pages, db);
    apiKeyPages(pages, db);
    webhookPages(pages, db, signing.masterKey, webhooks);
    integrationPages(pages, db, signing.masterKey);
    emailPages(pages, db, mail);
    auditPages(pages, db);
    adminPages(pages, db);
    notFoundPages(pages);
  });
}

/**
 * Any other path under /admin, and /admin itself with a method other than GET, only once signed
 * in: a signed-out visitor learns nothing.
 */
function notFoundPages(pages: FastifyInstance): void {
  const notFound = async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.method === "GET" && request.url.split("?")[0] === "/admin/") {
      return reply.redirect("/admin", 302);
    }
    throw new ShipkeyError("ROUTE_NOT_FOUND", "There is no such page in the dashboard.");
  };
  pages.all("/admin/*", notFound);
  const method = pages.supportedMethods.filter((m) => m !== "GET" && m !== "HEAD");
  pages.route({ method, url: "/admin", handler: notFound });
}

function assetRoutes(app: FastifyInstance): void {
  for (const [file, type, body] of [
    ["app.css", "text/css; charset=utf-8", stylesheet],
    ["app.js", "text/javascript; charset=utf-8", script],
    ["charts.js", "text/javascript; charset=utf-8", chartScript()],
    ["charts.css", "text/css; charset=utf-8", chartStylesheet()],
    ["favicon.svg", "image/svg+xml", favicon],
  ] as const) {
    app.get(`/admin/assets/${file}`, async (_request, reply) =>
      reply.header("cache-control", "public, max-age=3600").type(type).send(body),
    );
  }
}

/** The login form has no session yet: a double-submit token in a SameSite=Strict cookie. */
async function loginCsrf(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  // The routed path, not the raw URL: "/admin/%6Cogin" routes here too.
  if (request.routeOptions.url !== "/admin/login" || request.method === "HEAD") return;
  if (request.method === "GET") {
    const token = randomBytes(24).toString("base64url");
    reply.setCookie(loginCsrfCookie, token, {
      path: "/admin/login",
      httpOnly: true,
      sameSite: "strict",
      secure: secureCookie(request),
    });
    reply.loginCsrf = token;
    return;
  }
  const body = request.body as Record<string, unknown> | undefined;
  const sent = typeof body?._csrf === "string" ? Buffer.from(body._csrf) : Buffer.alloc(0);
  const expected = Buffer.from(request.cookies[loginCsrfCookie] ?? "");
  if (
    expected.length === 0 ||
    sent.length !== expected.length ||
    !timingSafeEqual(sent, expected)
  ) {
    throw new ShipkeyError(
      "BAD_REQUEST",
      "The sign-in form expired. Reload the page and try again.",
    );
  }
}

/** Every other page needs a session, and every POST its session's CSRF token. */
async function signedIn(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const session = request.adminSession;
  if (!session) {
    if (request.method === "GET" || request.method === "HEAD") {
      return reply.redirect("/admin/login", 303);
    }
    throw new ShipkeyError("MISSING_SCOPE", "Sign in first.");
  }
  if (
    request.method === "POST" &&
    !csrfMatches(session, (request.body as Record<string, unknown> | undefined)?._csrf)
  ) {
    throw new ShipkeyError(
      "MISSING_SCOPE",
      "This form is missing its security token (CSRF). Reload the page and try again.",
    );
  }
  return undefined;
}

declare module "fastify" {
  interface FastifyReply {
    /** The login form's CSRF token for this response. */
    loginCsrf: string;
  }
}
