import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import { resendEmail } from "../../../actions/emails.js";
import { getEmail, listEmails } from "../../../domain/email/outbox.js";
import type { EmailMessage, EmailMessageDetail } from "../../../contracts/emails.js";
import { type EmailState, emailStates, pageLimits } from "../../../contracts/vocabulary.js";
import { actionForm, badge, type Html, html, layout, type PageContext, when } from "../html.js";
import { adminActor, contextOf, sendPage } from "../page-kit.js";
import type { MailWorker } from "../../email-delivery.js";

const path = "/admin/emails";
const messagePath = (id: string) => `${path}/${encodeURIComponent(id)}`;

/** The outbox page: a page of messages, of one state if picked, and whether SMTP_URL is set. */
interface OutboxPage {
  context: PageContext;
  messages: EmailMessage[];
  state: EmailState | null;
  nextCursor: string | null;
  configured: boolean;
}

/**
 * The e-mail outbox (docs/email.md): every message with its state and last SMTP reply, one
 * message's text as sent, and its resend (the action resendEmail, audited).
 */
export function emailPages(app: FastifyInstance, db: Kysely<DB>, worker: MailWorker): void {
  app.get<{ Querystring: { state?: string; cursor?: string } }>(path, async (request, reply) => {
    const { state: picked, cursor } = request.query;
    const state = (emailStates as readonly string[]).includes(picked ?? "")
      ? (picked as EmailState)
      : null;
    const page = await listEmails(db, {
      limit: pageLimits.default,
      productIds: null,
      ...(state === null ? {} : { state }),
      ...(cursor ? { cursor } : {}),
    });
    return sendPage(
      reply,
      outboxView({
        context: contextOf(request),
        messages: page.items,
        state,
        nextCursor: page.nextCursor,
        configured: worker.configured,
      }),
    );
  });

  app.get<{ Params: { id: string }; Querystring: { done?: string } }>(
    `${path}/:id`,
    async (request, reply) => {
      const message = await getEmail(db, request.params.id, null);
      const flash = request.query.done === "resend" ? resentMessage(worker) : undefined;
      return sendPage(reply, messageView(contextOf(request), message, flash));
    },
  );

  app.post<{ Params: { id: string } }>(`${path}/:id/resend`, async (request, reply) => {
    const { id } = request.params;
    await resendEmail(db, adminActor(request), id, worker.now());
    worker.wake();
    return reply.redirect(`${messagePath(id)}?done=resend`, 303);
  });
}

const resentMessage = (worker: MailWorker) =>
  worker.configured
    ? "Queued again: the message is sent within a few seconds."
    : "Queued again: it waits here until SMTP_URL is set.";

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

function outboxView(page: OutboxPage): Html {
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

function messageView(context: PageContext, m: EmailMessageDetail, flash?: string): Html {
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
    flash,
  );
}
