import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import * as actions from "../../../actions/emails.js";
import { getEmail, listEmails } from "../../../domain/email/outbox.js";
import { type EmailState, emailStates, pageLimits } from "../../../contracts/vocabulary.js";
import type { MailWorker } from "../../email-delivery.js";
import { type Form, text } from "../form-body.js";
import { adminActor, contextOf, redirectDone, sendPage } from "../page-kit.js";
import { messagePath, messageView, outboxView } from "../views/emails.js";

const path = "/admin/emails";

/**
 * The e-mail outbox (docs/email.md): every message with its state and last SMTP reply, one
 * message's text as sent, and its resend (the action resendEmail, audited).
 */
export function emailPages(app: FastifyInstance, db: Kysely<DB>, worker: MailWorker): void {
  app.get<{ Querystring: Form }>(path, async (request, reply) => {
    const picked = text(request.query, "state");
    const cursor = text(request.query, "cursor");
    const state = (emailStates as readonly string[]).includes(picked)
      ? (picked as EmailState)
      : null;
    const page = await listEmails(db, {
      limit: pageLimits.default,
      productIds: null,
      ...(state === null ? {} : { state }),
      ...(cursor === "" ? {} : { cursor }),
    });
    const view = {
      context: contextOf(request),
      messages: page.items,
      state,
      nextCursor: page.nextCursor,
      configured: worker.configured,
    };
    return sendPage(reply, outboxView(view));
  });

  app.get<{ Params: { id: string } }>(`${path}/:id`, async (request, reply) => {
    const message = await getEmail(db, request.params.id, null);
    return sendPage(reply, messageView(contextOf(request), message));
  });

  app.post<{ Params: { id: string } }>(`${path}/:id/resend`, async (request, reply) => {
    const { id } = request.params;
    await actions.resendEmail(db, adminActor(request), id, worker.now());
    worker.wake();
    const done = worker.configured
      ? "Queued again: the message is sent within a few seconds."
      : "Queued again: it waits here until SMTP_URL is set.";
    return redirectDone(request, reply, messagePath(id), done);
  });
}
