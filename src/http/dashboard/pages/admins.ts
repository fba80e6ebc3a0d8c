import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import {
  type AdminView,
  listAdmins,
  minPasswordLength,
  newAdminErrors,
} from "../../../domain/admins/admins.js";
import { createAdmin, removeAdmin, resetAdminPassword } from "../../../actions/admins.js";
import { ShipkeyError } from "../../../errors.js";
import {
  actionForm,
  csrfField,
  fieldError,
  formError,
  type Html,
  html,
  layout,
  type PageContext,
  when,
} from "../html.js";
import {
  adminActor,
  contextOf,
  errorsFor,
  type Form,
  FormCheck,
  sendPage,
  sessionOf,
  text,
} from "../page-kit.js";

const path = "/admin/admins";

const done: Record<string, string> = {
  created: "Admin added.",
  reset: "Password reset; that admin's sessions have ended.",
  removed: "Admin removed; their sessions have ended.",
};

/** A password exactly as typed (not trimmed). */
function password(form: Form | undefined): string {
  const value: unknown = form?.password;
  return typeof value === "string" ? value : "";
}

function adminRow(context: PageContext, admin: { email: string; createdAt: string }): Html {
  return html`<tr data-admin="${admin.email}">
    <td>
      ${admin.email}${admin.email === context.email ? html` <span class="muted">(you)</span>` : ""}
    </td>
    <td>${when(admin.createdAt)}</td>
    <td>
      <form method="post" action="${path}/reset-password" class="actions">
        ${csrfField(context.csrfToken)}<input type="hidden" name="email" value="${admin.email}" />
        <input
          type="password"
          name="password"
          autocomplete="new-password"
          minlength="${minPasswordLength}"
          required
          aria-label="New password for ${admin.email}"
        />
        <button type="submit" class="secondary">Reset password</button>
      </form>
    </td>
    <td>
      ${actionForm(
        context.csrfToken,
        {
          action: `${path}/remove`,
          confirm: `Remove admin ${admin.email}? Their sessions end at once.`,
          hidden: { email: admin.email },
        },
        { label: "Remove", class: "danger", ariaLabel: `Remove ${admin.email}` },
      )}
    </td>
  </tr>`;
}

/** What the admins page shows: the admins, and the new-admin form as last sent. */
interface AdminsPage {
  context: PageContext;
  admins: AdminView[];
  form: Form;
  errors: Record<string, string>;
  flash?: string;
}

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
    request: FastifyRequest<{ Body: Form }>,
    reply: FastifyReply,
    err: unknown,
    form: Form = {},
    fields: string[] = [],
  ) => {
    const errors = errorsFor(err, fields);
    const status = err instanceof ShipkeyError ? err.statusCode : 400;
    return render(request, reply, { form, errors }, status);
  };

  /** After ending the signed-in admin's own sessions, the next stop is the sign-in page. */
  const afterChange = (request: FastifyRequest<{ Body: Form }>, reply: FastifyReply, to: string) =>
    reply.redirect(
      text(request.body, "email").toLowerCase() === sessionOf(request).admin.email
        ? "/admin/login"
        : `${path}?done=${to}`,
      303,
    );

  app.get<{ Querystring: { done?: string } }>(path, async (request, reply) =>
    render(request, reply, { form: {}, errors: {}, flash: done[request.query.done ?? ""] }),
  );

  app.post<{ Body: Form }>(path, async (request, reply) => {
    const email = text(request.body, "email");
    try {
      const input = { email, password: password(request.body) };
      FormCheck.refuse(newAdminErrors(input));
      await createAdmin(db, adminActor(request), input);
      return reply.redirect(`${path}?done=created`, 303);
    } catch (err) {
      return refused(request, reply, err, { email }, ["email", "password"]);
    }
  });

  app.post<{ Body: Form }>(`${path}/reset-password`, async (request, reply) => {
    try {
      await resetAdminPassword(db, adminActor(request), {
        email: text(request.body, "email"),
        password: password(request.body),
      });
      return afterChange(request, reply, "reset");
    } catch (err) {
      return refused(request, reply, err);
    }
  });

  app.post<{ Body: Form }>(`${path}/remove`, async (request, reply) => {
    try {
      await removeAdmin(db, adminActor(request), text(request.body, "email"));
      return afterChange(request, reply, "removed");
    } catch (err) {
      return refused(request, reply, err);
    }
  });
}

function adminsView(page: AdminsPage): Html {
  const { context } = page;
  return layout(
    "Admins",
    "admins",
    context,
    html`${formError(page.errors)}
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th>Email</th>
              <th>Added</th>
              <th>Password</th>
              <th></th>
            </tr>
          </thead>
          <tbody>
            ${page.admins.map((admin) => adminRow(context, admin))}
          </tbody>
        </table>
      </div>
      ${newAdminForm(context.csrfToken, page.form, page.errors)}`,
    page.flash,
  );
}

function newAdminForm(csrfToken: string, form: Form, errors: Record<string, string>): Html {
  return html`<h2>New admin</h2>
    <form method="post" action="${path}" class="stack panel">
      ${csrfField(csrfToken)}
      <div class="grid-2">
        <label
          >Email
          <input
            type="email"
            name="email"
            autocomplete="off"
            required
            value="${text(form, "email")}"
            ${errors.email ? html`aria-invalid="true"` : ""}
          />${fieldError(errors, "email")}</label
        >
        <label
          >Password <span class="hint">(at least ${minPasswordLength} characters)</span>
          <input
            type="password"
            name="password"
            autocomplete="new-password"
            minlength="${minPasswordLength}"
            required
            ${errors.password ? html`aria-invalid="true"` : ""}
          />${fieldError(errors, "password")}</label
        >
      </div>
      <div class="actions"><button type="submit">Add admin</button></div>
    </form>`;
}
