import { escapeHtml } from "../../lib/escape-html.js";
import type { Notice } from "./notice.js";

/**
 * Server-rendered HTML with escaping by default: every interpolated value is escaped unless it
 * is itself an Html fragment made by `html` (or `raw`, for trusted constant markup).
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

type Interpolation = Html | string | number | boolean | null | undefined | Interpolation[];

function render(value: Interpolation): string {
  if (value === null || value === undefined || value === false) return "";
  if (Array.isArray(value)) return value.map(render).join("");
  if (value instanceof Html) return value.value;
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Interpolation[]): Html {
  let out = strings[0] ?? "";
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? "");
  });
  return new Html(out);
}

export function raw(trusted: string): Html {
  return new Html(trusted);
}

export const sections = [
  ["overview", "Overview"],
  ["products", "Products"],
  ["licenses", "Licenses"],
  ["releases", "Releases"],
  ["api-keys", "API Keys"],
  ["webhooks", "Webhooks"],
  ["integrations", "Integrations"],
  ["emails", "E-mail"],
  ["audit", "Audit log"],
  ["admins", "Admins"],
] as const;
export type Section = (typeof sections)[number][0];

export interface PageContext {
  email: string;
  csrfToken: string;
  /** The notice the page shows once (notice.ts). */
  notice?: Notice;
}

/** The signed-in layout: navigation, the page's content, the sign-out form. */
export function layout(
  title: string,
  section: Section | null,
  context: PageContext,
  content: Html,
): Html {
  return document(
    title,
    html`<div class="shell">
      <header class="sidebar">
        <a class="brand" href="/admin">Shipkey</a>
        <nav aria-label="Sections">
          ${sections.map(
            ([id, label]) =>
              html`<a
                href="${id === "overview" ? "/admin" : `/admin/${id}`}"
                ${id === section ? raw('aria-current="page"') : ""}
                >${label}</a
              >`,
          )}
        </nav>
        <form method="post" action="/admin/logout" class="signout">
          ${csrfField(context.csrfToken)}
          <span class="muted">${context.email}</span>
          <button type="submit" class="link">Sign out</button>
        </form>
      </header>
      <main id="main">
        <h1>${title}</h1>
        ${noticeOf(context.notice)} ${content}
      </main>
    </div>`,
  );
}

/** What was done, as a status; a refused action's message, as an alert; a secret, by its page. */
function noticeOf(notice: Notice | undefined): Html | string {
  if (notice?.kind === "done") return html`<p class="flash" role="status">${notice.message}</p>`;
  if (notice?.kind === "refused") {
    return html`<p class="alert notice" role="alert">${notice.message}</p>`;
  }
  return "";
}

export function document(title: string, body: Html): Html {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · Shipkey</title>
        <link rel="icon" href="/admin/assets/favicon.svg" type="image/svg+xml" />
        <link rel="stylesheet" href="/admin/assets/app.css" />
        <script src="/admin/assets/app.js" defer></script>
      </head>
      <body>
        ${body}
      </body>
    </html>`;
}

export function csrfField(token: string): Html {
  return html`<input type="hidden" name="_csrf" value="${token}" />`;
}

/**
 * A POST form of one button, with the CSRF field and any hidden fields: the dashboard's row and
 * page actions. With `confirm`, dashboard.js asks before it submits.
 */
export function actionForm(
  csrfToken: string,
  form: { action: string; confirm?: string; class?: string; hidden?: Record<string, string> },
  button: { label: string; class?: string; ariaLabel?: string },
): Html {
  const hidden = Object.entries(form.hidden ?? {}).map(
    ([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`,
  );
  return html`<form
    method="post"
    action="${form.action}"
    ${attribute("class", form.class)}${attribute("data-confirm", form.confirm)}
  >
    ${csrfField(csrfToken)}${hidden}
    <button
      type="submit"
      ${attribute("class", button.class)}${attribute("aria-label", button.ariaLabel)}
    >
      ${button.label}
    </button>
  </form>`;
}

const attribute = (name: string, value: string | undefined) =>
  value === undefined ? "" : html` ${raw(name)}="${value}"`;

export function fieldError(errors: Record<string, string>, field: string): Html | string {
  const message = errors[field];
  return message ? html`<p class="field-error" id="${field}-error">${message}</p>` : "";
}

/** A refusal that concerns no one field of the form, shown above it (formFailure's `_form`). */
export function formError(errors: Record<string, string>): Html | string {
  return errors._form ? html`<p class="alert" role="alert">${errors._form}</p>` : "";
}

export function badge(status: string): Html {
  return html`<span class="badge badge-${status.toLowerCase()}">${status}</span>`;
}

export function when(iso: string | null): Html | string {
  return iso === null
    ? html`<span class="muted">never</span>`
    : html`<time datetime="${iso}"
        ><span>${iso.slice(0, 10)}</span> <span>${iso.slice(11, 19)} UTC</span></time
      >`;
}

/**
 * The toolbar that picks the product a page shows (a GET form); with `allLabel`, a first choice
 * of every product (the value "").
 */
export function productPicker(
  products: readonly { slug: string; name: string }[],
  slug: string,
  allLabel?: string,
): Html {
  return html`<form method="get" class="toolbar">
    <label
      >Product
      <select name="product">
        ${allLabel === undefined ? "" : html`<option value="">${allLabel}</option>`}
        ${products.map(
          (p) =>
            html`<option value="${p.slug}" ${p.slug === slug ? html`selected` : ""}>
              ${p.name}
            </option>`,
        )}
      </select></label
    ><button type="submit" class="secondary">Show</button>
  </form>`;
}
