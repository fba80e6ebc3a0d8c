import type { FastifyRequest } from "fastify";
import { type ErrorCode, ShipkeyError } from "../../errors.js";
import type { FailureResponse } from "../error-handler.js";
import { csrfMatches } from "../session.js";
import { contextOf, redirectWith, sendPage } from "./page-kit.js";
import { errorView } from "./views/error.js";

/**
 * How the dashboard answers a failure the error handler (error-handler.ts, shared with the API)
 * made a ShipkeyError with its code's status: a refused action (a POST the domain turns down)
 * goes back to the page its form was on, which shows the refusal once (a notice); anything else
 * is a page with that status and a message fit to show.
 */
export const failurePage: FailureResponse = (failure, request, reply, error) => {
  const message = messageOf(failure, error);
  const back = error instanceof ShipkeyError ? refusedActionPage(request, failure) : undefined;
  if (back !== undefined) return redirectWith(request, reply, back, { kind: "refused", message });
  // contextOf keeps a notice this request took: a refusal sent back to a page that then failed
  // (its record deleted meanwhile) is still shown.
  const context = request.adminSession ? contextOf(request) : null;
  return sendPage(reply, errorView(context, failure.statusCode, message), failure.statusCode);
};

/** Messages meant for the public endpoints, said for the dashboard. */
const dashboardWording: Partial<Record<ErrorCode, string>> = {
  LICENSE_NOT_FOUND: "No license has this key.",
  DATABASE_UNAVAILABLE: "The database is unavailable. Try again in a few seconds.",
};

/** A refusal's own message; for what the framework refused or a fault, a sentence of ours. */
function messageOf(failure: ShipkeyError, error: unknown): string {
  const worded = dashboardWording[failure.code];
  if (worded !== undefined) return worded;
  if (error instanceof ShipkeyError) return failure.message;
  return failure.statusCode < 500
    ? "The request could not be understood."
    : "Something went wrong on our side.";
}

/**
 * The page to take a refused action back to: a signed-in POST with a valid CSRF token refused as
 * a bad or conflicting request, sent from a dashboard page (the Referer, same-origin only under
 * the dashboard's referrer policy) other than the sign-in page. Only its path and query are kept.
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
  return pathname + from.search;
}
