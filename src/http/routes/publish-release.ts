import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import { arches, channels, type DB, platforms } from "../../db/schema.js";
import { authenticateApiKey } from "../../domain/api-keys/authenticate.js";
import { limits } from "../../domain/limits.js";
import { publishSchema, documentationOnly } from "./public-schemas.js";
import { findProductBySlug } from "../../domain/products/products.js";
import { checkPublishLimits, type PublishRequest } from "../../domain/releases/publish-release.js";
import { assertKeyCovers } from "../../domain/api-keys/key-authority.js";
import { publishReleaseAudited } from "../../domain/audit/audited-actions.js";
import type { Actor } from "../../domain/audit/audit-log.js";
import { normalizeDownloadUrl } from "../../domain/releases/download-url.js";
import { normalizeVersion } from "../../domain/releases/version.js";
import { ShipkeyError } from "../../errors.js";
import {
  assertNoNul,
  assertPresent,
  isMissing,
  type JsonObject,
  missingFields,
  requiredString,
  requireJsonObject,
  singleHeader,
  wrongType,
} from "../request-fields.js";

export function publishReleaseRoute(app: FastifyInstance, db: Kysely<DB>): void {
  app.post("/api/releases/publish", {
    schema: publishSchema,
    validatorCompiler: documentationOnly,
    bodyLimit: limits.publishBodyBytes,
    config: { jsonBody: true },
    // onRequest runs before the body is read: an unauthenticated caller learns nothing else.
    onRequest: async (request) => {
      const authorization = singleHeader(request.raw, "authorization");
      const key = await authenticateApiKey(db, authorization, "releases:write");
      request.actor = {
        type: "api_key",
        id: key.apiKeyId,
        label: key.name,
        ip: request.ip,
        productIds: key.productIds,
      };
    },
    handler: async (request) => {
      const publish = parsePublishRequest(request.body);
      const product = await findProductBySlug(db, publish.productSlug);
      if (!product) throw ShipkeyError.spec("PRODUCT_NOT_FOUND");
      // A key limited to products publishes only theirs (after the spec's 404, before limits).
      assertKeyCovers(key(request).productIds, product);
      const { releaseNotes, entries } = checkPublishLimits(publish);
      return publishReleaseAudited(db, key(request), product, {
        version: publish.version,
        channel: publish.channel,
        releaseNotes,
        entries,
      });
    },
  });
}

/** The API key onRequest resolved. */
function key(request: FastifyRequest): Actor {
  if (!request.actor) throw new Error("publish without its onRequest authentication");
  return request.actor;
}

/**
 * The spec's publish checks in their binding order; each check is one pass over all entries.
 * Product existence and the documented limits follow in the handler.
 */
export function parsePublishRequest(rawBody: unknown): PublishRequest {
  const body = requireJsonObject(rawBody);
  assertPresent(body, ["productSlug", "version", "channel", "releases"]);
  const productSlug = requiredString(body, "productSlug");
  const rawVersion = requiredString(body, "version");
  const channel = requiredString(body, "channel");
  const releases = body.releases;
  if (!Array.isArray(releases)) throw wrongType("releases", "an array");
  if (releases.length === 0) throw missingFields(["releases"]);
  const notes = body.releaseNotes;
  if (!isMissing(notes) && typeof notes !== "string") throw wrongType("releaseNotes", "a string");
  if (typeof notes === "string") assertNoNul("releaseNotes", notes);

  if (!isOneOf(channels, channel)) throw ShipkeyError.spec("INVALID_CHANNEL");

  const entries: JsonObject[] = [];
  for (const entry of releases) {
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      throw ShipkeyError.spec("INVALID_RELEASE_ENTRY");
    }
    const fields = entry as JsonObject;
    if (isMissing(fields.platform) || isMissing(fields.arch) || isMissing(fields.downloadUrl)) {
      throw ShipkeyError.spec("INVALID_RELEASE_ENTRY");
    }
    entries.push(fields);
  }
  const targeted = entries.map((entry) => {
    const { platform, arch } = entry;
    if (!isOneOf(platforms, platform) || !isOneOf(arches, arch)) {
      throw ShipkeyError.spec("INVALID_PLATFORM_ARCH");
    }
    return { entry, platform, arch };
  });
  const located = targeted.map(({ entry, platform, arch }, i) => {
    const downloadUrl =
      typeof entry.downloadUrl === "string" ? normalizeDownloadUrl(entry.downloadUrl) : null;
    if (downloadUrl === null) throw ShipkeyError.spec("INVALID_DOWNLOAD_URL");
    const { signature, fileSize, sha512 } = entry;
    if (typeof signature === "string") {
      assertNoNul("signature", signature, `releases[${i}].signature`);
    }
    return { platform, arch, downloadUrl, signature, fileSize, sha512 };
  });

  const version = normalizeVersion(rawVersion);
  if (version === null) throw ShipkeyError.spec("INVALID_VERSION");

  return { productSlug, version, channel, releaseNotes: notes, releases: located };
}

function isOneOf<T extends string>(values: readonly T[], value: unknown): value is T {
  return typeof value === "string" && (values as readonly string[]).includes(value);
}
