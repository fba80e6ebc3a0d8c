import type { FastifyReply, FastifyRequest } from "fastify";
import type { Actor } from "../../domain/audit/audit-log.js";
import type { Session } from "../../domain/admins/admins.js";
import { ShipkeyError } from "../../errors.js";
import { parseIsoTimestamp } from "../../lib/time.js";
import type { Html, PageContext } from "./html.js";

export type Form = Record<string, string | string[] | undefined>;

export function sendPage(reply: FastifyReply, page: Html, status = 200): FastifyReply {
  return reply.status(status).type("text/html; charset=utf-8").send(page.value);
}

export function sessionOf(request: FastifyRequest): Session {
  if (!request.adminSession) throw new Error("dashboard page without a session");
  return request.adminSession;
}

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

/** A form field as text; anything that is not a string (a JSON body, say) reads as "". */
export function text(form: Form | undefined, name: string): string {
  const value: unknown = form?.[name];
  const first: unknown = Array.isArray(value) ? value[0] : value;
  return typeof first === "string" ? first.trim() : "";
}

export function list(form: Form | undefined, name: string): string[] {
  const value: unknown = form?.[name];
  const all: unknown[] = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return all.filter((item): item is string => typeof item === "string");
}

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

/**
 * A form's refusals found together: each field's parse and the domain's checks of each field,
 * so that one round trip shows every invalid field with its message (errorsFor).
 */
export class FormRefused extends ShipkeyError {
  constructor(readonly all: readonly [ShipkeyError, ...ShipkeyError[]]) {
    super(all[0].code, all[0].message, all[0].details);
  }
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

/** "2026-11-21T15:12:50.056Z" → "2026-11-21T15:12" for a datetime-local input. */
export function localValue(iso: string | null): string {
  return iso === null ? "" : iso.slice(0, 16);
}
