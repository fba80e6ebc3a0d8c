import { randomBytes, timingSafeEqual } from "node:crypto";
import cookie from "@fastify/cookie";
import formbody from "@fastify/formbody";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import { secureCookie } from "../cookie-security.js";
import type { DB } from "../../db/schema.js";
import { type ErrorCode, ShipkeyError } from "../../errors.js";
import type { DatabaseFaults } from "../database-faults.js";
import { databaseRetryAfterSeconds, routeOf } from "../error-handler.js";
import { chartScript, chartStylesheet, favicon, script, stylesheet } from "./assets.js";
import { overviewPages } from "./pages/overview.js";
import { noticeCookie, setNotice, takeNotice } from "./flash.js";
import { document, type Html, html, layout } from "./html.js";
import { contextOf, sendPage } from "./page-kit.js";
import { adminPages } from "./pages/admins.js";
import { apiKeyPages } from "./pages/api-keys.js";
import { webhookPages } from "./pages/webhooks.js";
import type { WebhookWorker } from "../webhook-delivery.js";
import type { MailWorker } from "../email-delivery.js";
import { emailPages } from "./pages/emails.js";
import { auditPages } from "./pages/audit.js";
import { licensePages } from "./pages/licenses.js";
import { loginRoutes } from "./pages/login.js";
import { productKeyPages } from "./pages/product-keys.js";
import { productPages } from "./pages/products.js";
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
  app.setErrorHandler(errorHandler(faults));
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
    releasePages(pages, db);
    apiKeyPages(pages, db);
    webhookPages(pages, db, signing.masterKey, webhooks);
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

/**
 * Every failure in the dashboard is a page: its status, and a message fit to show; signed in,
 * inside the layout with the navigation. A refused action (a POST the domain turns down) goes
 * back to the page its form was on, which shows the refusal once (a notice).
 */
function errorHandler(faults: DatabaseFaults) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const unavailable = faults.reportIfUnavailable(error, routeOf(request));
    const known = error instanceof ShipkeyError;
    const status = unavailable
      ? 503
      : known
        ? error.statusCode
        : error.statusCode && error.statusCode < 500
          ? error.statusCode
          : 500;
    if (unavailable) {
      reply.header("retry-after", String(databaseRetryAfterSeconds));
    } else if (status >= 500) {
      request.log.error({ err: error }, "dashboard error");
    }
    const message = known
      ? (friendlierMessages[error.code] ?? error.message)
      : unavailable
        ? "The database is unavailable. Try again in a few seconds."
        : status < 500
          ? "The request could not be understood."
          : "Something went wrong on our side.";
    const back = known ? refusedActionPage(request, error) : undefined;
    if (back !== undefined) {
      setNotice(request, reply, back.split("?")[0] ?? back, message);
      return reply.redirect(back, 303);
    }
    return sendPage(reply, errorView(request, status, message), status);
  };
}

/** Messages meant for the public endpoints, said for the dashboard. */
const friendlierMessages: Partial<Record<ErrorCode, string>> = {
  LICENSE_NOT_FOUND: "No license has this key.",
};

/**
 * The page to take a refused action back to: a signed-in POST with a valid CSRF token refused as
 * a bad or conflicting request, sent from a dashboard page (the Referer, same-origin only under
 * the dashboard's referrer policy) other than the sign-in page. Only its path is kept.
 */
function refusedActionPage(request: FastifyRequest, error: ShipkeyError): string | undefined {
  const session = request.adminSession;
  if (request.method !== "POST" || !session) return undefined;
  if (![400, 403, 409, 422].includes(error.statusCode) || error.code === "MISSING_SCOPE") {
    return undefined;
  }
  if (!csrfMatches(session, (request.body as Record<string, unknown> | undefined)?._csrf)) {
    return undefined;
  }
  const referer = request.headers.referer;
  if (referer === undefined) return undefined;
  let from: URL;
  try {
    from = new URL(referer);
  } catch {
    return undefined;
  }
  const { pathname } = from;
  const underDashboard = pathname === "/admin" || pathname.startsWith("/admin/");
  // A cookie's Path may not hold ';' or control characters.
  if (!underDashboard || pathname === "/admin/login" || !/^[\x20-\x3a\x3d-\x7e]+$/.test(pathname)) {
    return undefined;
  }
  // A page only a POST renders (a form's refusal, at the form's address) has no GET to go back to.
  // Only the not-found pages' route, `/admin/*`, has a wildcard.
  const page = request.server.findRoute({ method: "GET", url: pathname });
  if (page === null || "*" in page.params) return undefined;
  // The page's last success message (`done`) would contradict the refusal.
  from.searchParams.delete("done");
  return pathname + from.search;
}

function errorView(request: FastifyRequest, status: number, message: string): Html {
  const title = status === 404 ? "Not found" : "Something is wrong";
  const content = html`<section class="panel error-page" data-status="${status}">
    ${status === 404 ? "" : html`<h2>${title}</h2>`}
    <p>${message}</p>
    <p><a href="/admin">Back to the dashboard</a></p>
  </section>`;
  if (request.adminSession) {
    // contextOf keeps a notice this request took: a refusal sent back to a page that then failed
    // (its record deleted meanwhile) is still shown.
    return layout(status === 404 ? "Page not found" : "Error", null, contextOf(request), content);
  }
  return document(
    "Error",
    html`<main class="login">
      <section class="panel">
        <h1>${title}</h1>
        <p>${message}</p>
        <p><a href="/admin">Back to the dashboard</a></p>
      </section>
    </main>`,
  );
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
  interface FastifyRequest {
    /** The notice this page shows once (a refused action's message), if any. */
    dashboardNotice: string | undefined;
  }
  interface FastifyReply {
    /** The login form's CSRF token for this response. */
    loginCsrf: string;
  }
}
