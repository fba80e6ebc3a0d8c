import type { FastifyReply, FastifyRequest } from "fastify";
import type { Actor } from "../../domain/audit/audit-log.js";
import type { Session } from "../../domain/admins/admins.js";
import type { Html, PageContext } from "./html.js";
import { type Notice, setNotice } from "./notice.js";

export function sendPage(reply: FastifyReply, page: Html, status = 200): FastifyReply {
  return reply.status(status).type("text/html; charset=utf-8").send(page.value);
}

export function sessionOf(request: FastifyRequest): Session {
  if (!request.adminSession) throw new Error("dashboard page without a session");
  return request.adminSession;
}

/** Who is signed in, and the notice this request took (dashboard.ts), for the layout. */
export function contextOf(request: FastifyRequest): PageContext {
  const session = sessionOf(request);
  const notice = request.dashboardNotice;
  return {
    email: session.admin.email,
    csrfToken: session.csrfToken,
    ...(notice === undefined ? {} : { notice }),
  };
}

export function adminActor(request: FastifyRequest): Actor {
  const { admin } = sessionOf(request);
  return { type: "admin", id: admin.id, label: admin.email, ip: request.ip };
}

/** Goes on (303) to `to`, which shows `notice` once (notice.ts). */
export function redirectWith(
  request: FastifyRequest,
  reply: FastifyReply,
  to: string,
  notice: Notice,
): FastifyReply {
  setNotice(request, reply, to.split("?")[0] ?? to, notice);
  return reply.redirect(to, 303);
}

/** Goes on (303) to `to`, which says once what was done. */
export function redirectDone(
  request: FastifyRequest,
  reply: FastifyReply,
  to: string,
  message: string,
): FastifyReply {
  return redirectWith(request, reply, to, { kind: "done", message });
}

/** A page number from the query: a whole number from 1, else the first page. */
export function pageNumber(value: string): number {
  const page = Number(value);
  return Number.isSafeInteger(page) && page >= 1 ? page : 1;
}

declare module "fastify" {
  interface FastifyRequest {
    /** The notice this page shows once, if any (notice.ts). */
    dashboardNotice: Notice | undefined;
  }
}
