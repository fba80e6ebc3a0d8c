import type { FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import * as actions from "../../../actions/emails.js";
import { getEmailSettings } from "../../../domain/email/email-settings.js";
import { getEmail, listEmails } from "../../../domain/email/outbox.js";
import * as contracts from "../../../contracts/emails.js";
import { pageLimits } from "../../../contracts/vocabulary.js";
import { productIdsOf, requireActor, requireProductInKey } from "../../admin-auth.js";
import { adminRoute, type App } from "../../contract-route.js";
import type { MailWorker } from "../../email-delivery.js";

export function adminEmailRoutes(app: App, db: Kysely<DB>, worker: MailWorker): void {
  // A key limited to products reaches only their settings, and only their messages.
  const inKey = requireProductInKey<FastifyRequest<{ Params: { slug: string } }>>(db, (r) => ({
    productSlug: r.params.slug,
  }));

  app.get(contracts.listEmails.url, adminRoute(db, contracts.listEmails), async (request) => {
    const { limit, cursor, state, productSlug } = request.query;
    return listEmails(db, {
      limit: Math.min(limit === undefined ? pageLimits.default : Number(limit), pageLimits.max),
      productIds: productIdsOf(request),
      ...(cursor === undefined ? {} : { cursor }),
      ...(state === undefined ? {} : { state }),
      ...(productSlug === undefined ? {} : { productSlug }),
    });
  });

  app.get(contracts.getEmail.url, adminRoute(db, contracts.getEmail), async (request) =>
    getEmail(db, request.params.id, productIdsOf(request)),
  );

  app.post(
    contracts.resendEmail.url,
    adminRoute(db, contracts.resendEmail),
    async (request, reply) => {
      const message = await actions.resendEmail(
        db,
        requireActor(request),
        request.params.id,
        worker.now(),
        request.idempotencyClaim,
      );
      worker.wake();
      return reply.status(202).send(message);
    },
  );

  app.get(
    contracts.getEmailSettings.url,
    { ...adminRoute(db, contracts.getEmailSettings), preHandler: inKey },
    async (request) => getEmailSettings(db, request.params.slug),
  );

  app.patch(
    contracts.updateEmailSettings.url,
    { ...adminRoute(db, contracts.updateEmailSettings), preHandler: inKey },
    async (request) =>
      actions.changeProductEmail(
        db,
        requireActor(request),
        request.params.slug,
        request.body,
        request.idempotencyClaim,
      ),
  );
}
