import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { DB } from "../../../db/schema.js";
import { overview } from "../../../domain/overview/overview.js";
import { listProducts } from "../../../domain/products/products.js";
import { type Form, text } from "../form-body.js";
import { contextOf, sendPage } from "../page-kit.js";
import { overviewView } from "../views/overview.js";

export function overviewPages(app: FastifyInstance, db: Kysely<DB>): void {
  app.get<{ Querystring: Form }>("/admin", async (request, reply) => {
    const products = await listProducts(db);
    const slug = text(request.query, "product");
    const product = products.find((p) => p.slug === slug)?.slug ?? null;
    const shown = await overview(db, product);
    return sendPage(reply, overviewView({ context: contextOf(request), products, shown }));
  });
}
