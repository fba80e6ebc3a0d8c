import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import * as actions from "../../../actions/products.js";
import { promoteSigningKey, updateProduct } from "../../../contracts/products.js";
import { offlinePeriod } from "../../../contracts/vocabulary.js";
import { requireProduct } from "../../../domain/products/products.js";
import { ShipkeyError } from "../../../errors.js";
import { listProductKeys } from "../../../domain/signing/signing-keys.js";
import type { Signing } from "../../../domain/signing/key-ring.js";
import { type Form, formBody, formFailure, text } from "../form-body.js";
import { adminActor, contextOf, redirectDone, sendPage } from "../page-kit.js";
import { keysPath, keysView, type KeysPage } from "../views/product-keys.js";

type KeysRequest = FastifyRequest<{ Params: { slug: string; kid?: string }; Body: Form }>;

/**
 * A product's signing keys: the key set (JWKS) to paste into an app, the current public key as
 * JWK and PEM, the two steps of a rotation (prepare a next key, promote it), the retired keys
 * still published; and its offline settings: the period of certificates, the offline allowance,
 * the churn limit and the machine lease, each form read as updateProduct's body. The private key
 * is never shown.
 */
export function productKeyPages(app: FastifyInstance, db: Kysely<DB>, signing: Signing): void {
  /** A POST: make the change and go back to the page, or show the page with the refusal. */
  const change = (
    route: string,
    field: string | null,
    act: (request: KeysRequest) => Promise<string>,
  ) =>
    app.post<{ Params: { slug: string; kid?: string }; Body: Form }>(
      `/admin/products/:slug/keys${route}`,
      async (request, reply) => {
        try {
          const done = await act(request);
          return redirectDone(request, reply, keysPath(request.params.slug), done);
        } catch (err) {
          const { status, errors } = formFailure(err, field === null ? [] : [field]);
          return sendKeysPage(db, signing, request, reply, errors, status);
        }
      },
    );
  /** An offline setting: one field of updateProduct's body, refused beside its input. */
  const setting = (
    route: string,
    field: keyof typeof updateProduct.schema.body.properties,
    saved: string,
  ) =>
    change(route, field, async (request) => {
      const changes = await formBody(updateProduct.schema.body, request.body, { fields: [field] });
      await actions.updateProduct(db, adminActor(request), request.params.slug, changes);
      return saved;
    });

  app.get<{ Params: { slug: string } }>("/admin/products/:slug/keys", async (request, reply) =>
    sendKeysPage(db, signing, request, reply, {}, 200),
  );

  change("/prepare", null, async (request) => {
    const { slug } = request.params;
    await actions.prepareSigningKey(db, adminActor(request), signing.masterKey, slug);
    return "Next key made. Apps learn it from their next signed answer; promote it after the offline period.";
  });
  change("/promote", null, async (request) => {
    const { force } = await formBody(promoteSigningKey.schema.body, request.body);
    await actions.promoteSigningKey(db, adminActor(request), request.params.slug, { force });
    return "Next key promoted. Running servers sign with it within 30 seconds.";
  });
  change("/:kid/remove", null, async (request) => {
    const { slug, kid = "" } = request.params;
    await actions.removeSigningKey(db, adminActor(request), slug, kid);
    return "Key removed.";
  });
  change("/offline-period", "offlinePeriodDays", async (request) => {
    const offlinePeriodSeconds = offlinePeriodFrom(request.body);
    const actor = adminActor(request);
    await actions.updateProduct(db, actor, request.params.slug, { offlinePeriodSeconds });
    return "Offline period saved.";
  });
  setting("/offline-allowance", "offlineAllowance", "Offline allowance saved.");
  setting("/deactivation-limit", "maxDeactivationsPer30Days", "Deactivation limit saved.");
  setting("/machine-lease", "machineLeaseDays", "Machine lease saved.");
}

/** The keys page of the request's product, with the refusals beside their fields or above. */
async function sendKeysPage(
  db: Kysely<DB>,
  signing: Signing,
  request: FastifyRequest<{ Params: { slug: string } }>,
  reply: FastifyReply,
  errors: KeysPage["errors"],
  status: number,
): Promise<FastifyReply> {
  const { slug } = request.params;
  const product = await requireProduct(db, slug);
  await signing.ring.keyFor(slug); // a product without a key gets its first one
  const keys = await listProductKeys(db, slug);
  return sendPage(reply, keysView({ context: contextOf(request), product, keys, errors }), status);
}

/**
 * The offline period as typed, in days (fractions allowed: 0.5 is 12 hours; a decimal comma too,
 * which a phone's decimal keypad types in many locales), as the seconds updateProduct's body
 * holds, rounded to the second. The admin API and the CLI take seconds.
 */
function offlinePeriodFrom(form: Form): number {
  const typed = text(form, "offlinePeriodDays").replace(",", ".");
  const seconds = /^\d{1,3}(\.\d{1,6})?$/.test(typed) ? Math.round(Number(typed) * 86_400) : NaN;
  if (!(seconds >= offlinePeriod.minSeconds && seconds <= offlinePeriod.maxSeconds)) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      "The offline period must be a number of days from 0.000694 (one minute) to 90",
      { field: "offlinePeriodDays" },
    );
  }
  return seconds;
}
