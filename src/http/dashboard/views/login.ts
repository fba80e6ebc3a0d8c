import { document, type Html, html } from "../html.js";

/** The sign-in form, with the last refusal and the email as typed. */
export function loginView(csrf: string, error?: string, email = ""): Html {
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
