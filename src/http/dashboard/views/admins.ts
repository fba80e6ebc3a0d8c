import { type AdminView, minPasswordLength } from "../../../domain/admins/admins.js";
import { type Form, text } from "../form-body.js";
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

const path = "/admin/admins";

/** What the admins page shows: the admins, and the new-admin form as last sent. */
export interface AdminsPage {
  context: PageContext;
  admins: AdminView[];
  form: Form;
  errors: Record<string, string>;
}

export function adminsView(page: AdminsPage): Html {
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
