import type { EmailMessage, EmailMessageDetail } from "../../../contracts/emails.js";
import { type EmailState, emailStates } from "../../../contracts/vocabulary.js";
import { actionForm, badge, type Html, html, layout, type PageContext, when } from "../html.js";

const path = "/admin/emails";
export const messagePath = (id: string) => `${path}/${encodeURIComponent(id)}`;

/** The outbox page: a page of messages, of one state if picked, and whether SMTP_URL is set. */
export interface OutboxPage {
  context: PageContext;
  messages: EmailMessage[];
  state: EmailState | null;
  nextCursor: string | null;
  configured: boolean;
}

/** A message's last SMTP reply: its code and text; a connection error without a code. */
function reply(message: EmailMessage): Html | string {
  if (message.lastResponse === null) return html`<span class="muted">none yet</span>`;
  return html`<span class="mono">${message.lastResponse}</span>`;
}

function stateFilter(state: EmailState | null): Html {
  return html`<form method="get" class="toolbar">
    <label
      >State
      <select name="state">
        <option value="">all</option>
        ${emailStates.map(
          (s) => html`<option value="${s}" ${s === state ? html`selected` : ""}>${s}</option>`,
        )}
      </select></label
    ><button type="submit" class="secondary">Show</button>
  </form>`;
}

export function outboxView(page: OutboxPage): Html {
  const { context, messages, state, nextCursor } = page;
  const more =
    nextCursor === null
      ? ""
      : html`<p>
          <a
            href="${path}?${new URLSearchParams({
              ...(state === null ? {} : { state }),
              cursor: nextCursor,
            }).toString()}"
            >Older messages</a
          >
        </p>`;
  return layout(
    "E-mail",
    "emails",
    context,
    html`${
      page.configured
        ? ""
        : html`<p class="alert" role="status">
            SMTP_URL is not set: messages wait here, pending, and are sent once SMTP_URL and
            MAIL_FROM are set (docs/email.md).
          </p>`
    }
    ${stateFilter(state)}
    ${
      messages.length === 0
        ? html`<p class="muted">No e-mail${state === null ? "" : ` ${state}`} yet.</p>`
        : html`<div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th>Created</th>
                  <th>Message</th>
                  <th>Product</th>
                  <th>To</th>
                  <th>State</th>
                  <th>Attempts</th>
                  <th>SMTP reply</th>
                  <th></th>
                </tr>
              </thead>
              <tbody>
                ${messages.map(
                  (m) =>
                    html`<tr>
                      <td>${when(m.createdAt)}</td>
                      <td><a href="${messagePath(m.id)}">${m.kind}</a></td>
                      <td>${m.product ?? ""}</td>
                      <td>${m.to}</td>
                      <td>${badge(m.state)}</td>
                      <td>${m.attempts}</td>
                      <td>${reply(m)}</td>
                      <td>
                        ${actionForm(
                          context.csrfToken,
                          { action: `${messagePath(m.id)}/resend` },
                          { label: "Resend", class: "secondary", ariaLabel: `Resend ${m.id}` },
                        )}
                      </td>
                    </tr>`,
                )}
              </tbody>
            </table>
          </div>`
    }
    ${more}`,
  );
}

export function messageView(context: PageContext, m: EmailMessageDetail): Html {
  return layout(
    m.subject,
    "emails",
    context,
    html`<p><a href="${path}">All e-mail</a></p>
      <dl class="facts">
        <dt>Message</dt>
        <dd>${m.kind} <span class="muted mono">${m.id}</span></dd>
        <dt>To</dt>
        <dd>${m.toName === null ? m.to : `${m.toName} <${m.to}>`}</dd>
        <dt>Product</dt>
        <dd>${m.product ?? ""}</dd>
        <dt>License</dt>
        <dd>
          ${
            m.licenseKey === null
              ? ""
              : html`<a href="/admin/licenses/${encodeURIComponent(m.licenseKey)}" class="mono"
                  >${m.licenseKey}</a
                >`
          }
        </dd>
        <dt>State</dt>
        <dd>${badge(m.state)}</dd>
        <dt>Attempts</dt>
        <dd>${m.attempts}</dd>
        <dt>Next attempt</dt>
        <dd>${m.nextAttemptAt === null ? "" : when(m.nextAttemptAt)}</dd>
        <dt>Last attempt</dt>
        <dd>${when(m.lastAttemptAt)}</dd>
        <dt>SMTP reply</dt>
        <dd>
          ${m.lastResponseCode === null ? "" : html`<strong>${m.lastResponseCode}</strong> `}
          ${reply(m)}
        </dd>
        <dt>Sent</dt>
        <dd>${when(m.sentAt)}</dd>
        <dt>Message-ID</dt>
        <dd class="mono">${m.messageId ?? ""}</dd>
        <dt>Idempotency key</dt>
        <dd class="mono">${m.idempotencyKey}</dd>
      </dl>
      ${actionForm(
        context.csrfToken,
        { action: `${messagePath(m.id)}/resend` },
        { label: "Resend", class: "secondary" },
      )}
      <h2>Text part, as sent</h2>
      <pre>${m.text}</pre>`,
  );
}
