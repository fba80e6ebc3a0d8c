import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import { type DB } from "../../../db/schema.js";
import * as productActions from "../../../actions/products.js";
import * as actions from "../../../actions/releases.js";
import {
  deleteReleaseEntry,
  setCritical,
  startRollout,
} from "../../../contracts/release-versions.js";
import { updateProduct } from "../../../contracts/products.js";
import { lastActors } from "../../../domain/audit/audit-log.js";
import { usageReport } from "../../../domain/releases/usage-report.js";
import { listReleases } from "../../../domain/releases/manage-releases.js";
import { listProducts, type Product } from "../../../domain/products/products.js";
import { ShipkeyError } from "../../../errors.js";
import { requestOrigin } from "../../public-origin.js";
import { type Form, formBody, text } from "../form-body.js";
import { adminActor, contextOf, pageNumber, redirectDone, sendPage } from "../page-kit.js";
import { type ProductReleases, releasesView, usageDays } from "../views/releases.js";

type ReleaseParams = { slug: string; version: string; platform?: string; arch?: string };
type ReleaseRequest = FastifyRequest<{ Params: ReleaseParams; Body: Form }>;

/** The releases page: one product's versions, their files, rollouts and use. */
export function releasePages(app: FastifyInstance, db: Kysely<DB>): void {
  app.get<{ Querystring: Form }>("/admin/releases", async (request, reply) => {
    const products = await listProducts(db);
    const slug = text(request.query, "product") || products[0]?.slug || "";
    const product = products.find((p) => p.slug === slug);
    if (product === undefined && slug !== "") throw ShipkeyError.spec("PRODUCT_NOT_FOUND");
    return sendPage(
      reply,
      releasesView({
        context: contextOf(request),
        products,
        slug,
        shown: product ? await productReleases(db, product) : null,
        page: pageNumber(text(request.query, "page")),
        origin: requestOrigin(request),
      }),
    );
  });
  releaseChanges(app, db);
}

/**
 * The page's forms, each read as the admin API's body of the same write: each makes its change
 * and goes back to the product's releases, which say what was done. A refusal goes to the error
 * handler (a notice on the page, dashboard.ts).
 */
function releaseChanges(app: FastifyInstance, db: Kysely<DB>): void {
  const change = (route: string, act: (request: ReleaseRequest) => Promise<string>) =>
    app.post<{ Params: ReleaseParams; Body: Form }>(route, async (request, reply) => {
      const done = await act(request);
      const to = `/admin/releases?product=${encodeURIComponent(request.params.slug)}`;
      return redirectDone(request, reply, to, done);
    });
  const version = "/admin/releases/:slug/:version";

  change(`${version}/:platform/:arch/delete`, async (request) => {
    const { slug, version } = request.params;
    const target = await formBody(deleteReleaseEntry.schema.params, request.params, onePlatform);
    await actions.deleteRelease(db, adminActor(request), slug, version, target);
    return "File removed.";
  });
  for (const [action, done] of [
    ["yank", "Version yanked: the update feeds no longer offer it."],
    ["unyank", "Version restored to the update feeds."],
  ] as const) {
    change(`${version}/${action}`, async (request) => {
      const { slug, version } = request.params;
      await actions.setReleaseYanked(db, adminActor(request), slug, version, action === "yank");
      return done;
    });
  }
  change(`${version}/rollout`, async (request) => {
    const { slug, version } = request.params;
    const [byPercent] = startRollout.schema.body.anyOf;
    const plan = await formBody(byPercent, request.body);
    await actions.setRollout(db, adminActor(request), slug, version, plan);
    return "Rollout saved: the feeds follow from their next check.";
  });
  for (const action of ["pause", "resume", "complete"] as const) {
    change(`${version}/rollout/${action}`, async (request) => {
      const { slug, version } = request.params;
      await actions.changeRollout(db, adminActor(request), slug, version, action);
      return "Rollout saved: the feeds follow from their next check.";
    });
  }
  change(`${version}/critical`, async (request) => {
    const { slug, version } = request.params;
    const { critical } = await formBody(setCritical.schema.body, request.body);
    await actions.setCritical(db, adminActor(request), slug, version, critical);
    return "Critical flag saved.";
  });
  change("/admin/releases/:slug/delivery", async (request) => {
    const delivery = await formBody(updateProduct.schema.body, request.body, deliveryFields);
    await productActions.updateProduct(db, adminActor(request), request.params.slug, delivery);
    return "Update delivery saved.";
  });
  change(`${version}/delete`, async (request) => {
    const { slug, version } = request.params;
    await actions.deleteRelease(db, adminActor(request), slug, version);
    return "Version deleted.";
  });
}

const onePlatform = { fields: ["platform", "arch"] } as const;
const deliveryFields = { fields: ["updatesRequireLicense", "downloadRedirects"] } as const;

async function productReleases(db: Kysely<DB>, product: Product): Promise<ProductReleases> {
  const versions = await listReleases(db, product.slug);
  const publishers = await lastActors(db, "release.publish", {
    type: "release",
    ids: versions.map((v) => `${product.slug}@${v.version}`),
  });
  const usage = await usageReport(db, product.slug, usageDays);
  return { product, versions, publishers, usage };
}
