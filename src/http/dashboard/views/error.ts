import { document, type Html, html, layout, type PageContext } from "../html.js";

/**
 * A failure as a page, its status named in the markup: signed in (`context`), inside the layout
 * with the navigation; signed out, on its own.
 */
export function errorView(context: PageContext | null, status: number, message: string): Html {
  const title = status === 404 ? "Not found" : "Something is wrong";
  const content = html`<section class="panel error-page" data-status="${status}">
    ${status === 404 ? "" : html`<h2>${title}</h2>`}
    <p>${message}</p>
    <p><a href="/admin">Back to the dashboard</a></p>
  </section>`;
  if (context) return layout(status === 404 ? "Page not found" : "Error", null, context, content);
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
