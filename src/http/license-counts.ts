import type { FastifyInstance, FastifyRequest } from "fastify";
import { activate, deactivate, validate } from "../contracts/license-api.js";
import { limits } from "../contracts/vocabulary.js";
import type { LicenseEvent, UsageCounts } from "../domain/releases/usage-counts.js";
import { ShipkeyError } from "../errors.js";

declare module "fastify" {
  interface FastifyRequest {
    /**
     * The product a license endpoint's answer counts under, set by a route whose request names
     * none (deactivate: the license's); null: the body's productSlug.
     */
    countedProduct: string | null;
  }
}

/** The license endpoints whose answers the overview counts, and the event each one is. */
const eventOf: Record<string, { done: LicenseEvent; refused: LicenseEvent | null }> = {
  [activate.url]: { done: "activation", refused: "activation_refused" },
  [deactivate.url]: { done: "deactivation", refused: null },
  [validate.url]: { done: "validation", refused: "validation_refused" },
};

/**
 * Counts the license endpoints' answers per product and day into the buffered usage counts: an
 * answer under 400 as done, a refusal (a ShipkeyError) as refused with its code. The product is
 * the one the route found (request.countedProduct), else the body's productSlug. Nothing is
 * written per request; the counts' flush adds them up.
 */
export function countLicenseAnswers(scope: FastifyInstance, counts: UsageCounts): void {
  scope.decorateRequest("countedProduct", null);
  scope.addHook("onError", async (request, _reply, error) => {
    if (error instanceof ShipkeyError && error.statusCode < 500) {
      count(counts, request, "refused", error.code);
    }
  });
  scope.addHook("onResponse", async (request, reply) => {
    if (reply.statusCode < 400) count(counts, request, "done", "");
  });
}

function count(
  counts: UsageCounts,
  request: FastifyRequest,
  outcome: "done" | "refused",
  code: string,
): void {
  const event = eventOf[request.routeOptions.url ?? ""]?.[outcome];
  if (event === undefined || event === null) return;
  const body: unknown = request.body;
  const slug =
    request.countedProduct ??
    (typeof body === "object" && body !== null && "productSlug" in body
      ? body.productSlug
      : undefined);
  if (typeof slug !== "string" || slug === "" || slug.length > limits.identifier) return;
  counts.countEvent(slug, event, Date.now(), code);
}
