import type { FastifyReply, FastifyRequest } from "fastify";
import type { Actor } from "../../domain/audit/audit-log.js";
import type { Session } from "../../domain/admins/admins.js";
import type { Html, PageContext } from "./html.js";
import { ShipkeyError } from "../../errors.js";
import { parseIsoTimestamp } from "../../lib/time.js";
import { type Form, FormRefused, text } from "./form-body.js";
export { type Form, list, text } from "./form-body.js";
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

/** "2026-11-21T15:12:50.056Z" → "2026-11-21T15:12" for a datetime-local input. */
export function localValue(iso: string | null): string {
  return iso === null ? "" : iso.slice(0, 16);
}

/** A page number from the query: a whole number from 1, else the first page. */
export function pageNumber(value: string): number {
  const page = Number(value);
  return Number.isSafeInteger(page) && page >= 1 ? page : 1;
}

// LEGACY (pages not yet reading their forms through form-body.ts)
/** A datetime-local value (read as UTC) or an ISO timestamp; "" is no expiry. */
export function expiryFrom(form: Form, name: string): number | null {
  const value = text(form, name);
  if (value === "") return null;
  const withZone = /Z|[+-]\d{2}:\d{2}$/.test(value)
    ? value
    : `${value.length === 16 ? `${value}:00` : value}Z`;
  const ms = parseIsoTimestamp(withZone);
  if (ms === null) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", `${name} must be a date and time`, {
      field: name,
    });
  }
  return ms;
}

export function integerFrom(form: Form, name: string): number {
  const value = text(form, name);
  if (!/^\d+$/.test(value)) {
    throw new ShipkeyError("INVALID_FIELD_VALUE", `${name} must be a whole number`, {
      field: name,
    });
  }
  return Number(value);
}

/** Gathers a form's refusals field by field; `done` throws them all at once, if any. */
export class FormCheck {
  private readonly errors: ShipkeyError[] = [];

  /** A field's parse: its value, or `fallback` once its refusal is noted. */
  field<T>(parse: () => T, fallback: T): T {
    try {
      return parse();
    } catch (err) {
      if (!(err instanceof ShipkeyError)) throw err;
      this.errors.push(err);
      return fallback;
    }
  }

  /** The domain's refusals of the fields (its *Errors functions). */
  add(errors: readonly ShipkeyError[]): void {
    this.errors.push(...errors);
  }

  /** Throws the domain's refusals of the fields, all at once, if any. */
  static refuse(errors: readonly ShipkeyError[]): void {
    const check = new FormCheck();
    check.add(errors);
    check.done();
  }

  done(): void {
    const [first, ...rest] = this.errors;
    if (first) throw new FormRefused([first, ...rest]);
  }
}

/**
 * Refusals shown next to the form fields they concern: the field each error carries (the root
 * of its path, so `features[2]` is the `features` input) when the form has it among `fields`;
 * otherwise above the form, as `_form`. The first message of a field wins. Anything that is not
 * a ShipkeyError is rethrown.
 */
export function errorsFor(error: unknown, fields: readonly string[]): Record<string, string> {
  if (!(error instanceof ShipkeyError)) throw error;
  const errors: Record<string, string> = {};
  for (const one of error instanceof FormRefused ? error.all : [error]) {
    const root = one.details.field?.split(/[.[]/)[0];
    const field = root !== undefined && fields.includes(root) ? root : "_form";
    errors[field] ??= one.message;
  }
  return errors;
}

declare module "fastify" {
  interface FastifyRequest {
    /** The notice this page shows once, if any (notice.ts). */
    dashboardNotice: Notice | undefined;
  }
}
