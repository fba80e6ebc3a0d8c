import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import { Type } from "typebox";
import type { DB } from "../../../db/schema.js";
import { listAdmins, newAdminErrors } from "../../../domain/admins/admins.js";
import * as actions from "../../../actions/admins.js";
import { type Form, formBody, formFailure, text } from "../form-body.js";
import { adminActor, contextOf, redirectDone, sendPage, sessionOf } from "../page-kit.js";
import { adminsView, type AdminsPage } from "../views/admins.js";

const path = "/admin/admins";

/**
 * The admins' forms: an email, and a password as typed (not trimmed). Admins have no admin API
 * endpoint (the dashboard and the CLI manage them), so this schema is the forms' own.
 */
const AdminForm = Type.Object({ email: Type.String(), password: Type.String() });
const asTyped = { verbatim: ["password"] } as const;

export function adminPages(app: FastifyInstance, db: Kysely<DB>): void {
  const render = async (
    request: FastifyRequest,
    reply: FastifyReply,
    view: Omit<AdminsPage, "context" | "admins">,
    status = 200,
  ) => {
    const page = { ...view, context: contextOf(request), admins: await listAdmins(db) };
    return sendPage(reply, adminsView(page), status);
  };

  /** A refused change re-renders the page with its message (no write happened). */
  const refused = (
    request: FastifyRequest,
    reply: FastifyReply,
    err: unknown,
    form: Form = {},
    fields: string[] = [],
  ) => {
    const { status, errors } = formFailure(err, fields);
    return render(request, reply, { form, errors }, status);
  };

  /** After ending the signed-in admin's own sessions, the next stop is the sign-in page. */
  const afterChange = (
    request: FastifyRequest,
    reply: FastifyReply,
    email: string,
    done: string,
  ) =>
    email.toLowerCase() === sessionOf(request).admin.email
      ? reply.redirect("/admin/login", 303)
      : redirectDone(request, reply, path, done);

  app.get(path, async (request, reply) => render(request, reply, { form: {}, errors: {} }));

  app.post<{ Body: Form }>(path, async (request, reply) => {
    try {
      const input = await formBody(AdminForm, request.body, { ...asTyped, checks: newAdminErrors });
      await actions.createAdmin(db, adminActor(request), input);
      return redirectDone(request, reply, path, "Admin added.");
    } catch (err) {
      const email = text(request.body, "email");
      return refused(request, reply, err, { email }, ["email", "password"]);
    }
  });

  app.post<{ Body: Form }>(`${path}/reset-password`, async (request, reply) => {
    try {
      const input = await formBody(AdminForm, request.body, asTyped);
      await actions.resetAdminPassword(db, adminActor(request), input);
      return afterChange(
        request,
        reply,
        input.email,
        "Password reset; that admin's sessions have ended.",
      );
    } catch (err) {
      return refused(request, reply, err);
    }
  });

  app.post<{ Body: Form }>(`${path}/remove`, async (request, reply) => {
    try {
      const { email } = await formBody(AdminForm, request.body, { fields: ["email"] });
      await actions.removeAdmin(db, adminActor(request), email);
      return afterChange(request, reply, email, "Admin removed; their sessions have ended.");
    } catch (err) {
      return refused(request, reply, err);
    }
  });
}
