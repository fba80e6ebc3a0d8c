import type { FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import { type DB } from "../../db/schema.js";
import { authenticateApiKey } from "../../domain/api-keys/authenticate.js";
import {
  publish as publishContract,
  PublishEntry,
  PublishRequest as PublishFields,
} from "../../contracts/releases.js";
import { type App, publicRoute } from "../contract-route.js";
import { findProductBySlug } from "../../domain/products/products.js";
import {
  checkPublishLimits,
  type PublishRequest,
  publishWarnings,
} from "../../domain/releases/publish-release.js";
import { assertKeyCovers } from "../../domain/api-keys/key-authority.js";
import { publishRelease } from "../../actions/releases.js";
import type { Actor } from "../../domain/audit/audit-log.js";
import { normalizeDownloadUrl } from "../../domain/releases/download-url.js";
import { normalizeVersion } from "../../domain/releases/version.js";
import { ShipkeyError } from "../../errors.js";
import { singleHeader } from "../request-fields.js";
import {
  checkNul,
  checkType,
  checkValue,
  isMissing,
  type JsonObject,
  readFields,
  readObject,
  refuseUnknownFields,
  requirePresent,
} from "../request-reader.js";
import { limits } from "../../contracts/vocabulary.js";

export function publishReleaseRoute(app: App, db: Kysely<DB>): void {
  app.post(publishContract.url, {
    ...publicRoute(publishContract, checkSpecFields),
    bodyLimit: limits.publishBodyBytes,
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
      const product = await findProductBySlug(db, request.body.productSlug);
      if (!product) throw ShipkeyError.spec("PRODUCT_NOT_FOUND");
      // A key limited to products publishes only theirs (after the spec's 404, before limits).
      assertKeyCovers(key(request).productIds, product);
      const publish = readPublish(request.body);
      const { releaseNotes, entries } = checkPublishLimits(publish);
      const { version, channel, rollout, critical } = publish;
      const result = await publishRelease(db, key(request), product, {
        version,
        channel,
        releaseNotes,
        entries,
        rollout,
        critical,
      });
      const warnings = publishWarnings(product, entries);
      return warnings.length === 0 ? result : { ...result, warnings };
    },
  });
}

/** The API key onRequest resolved. */
function key(request: FastifyRequest): Actor {
  if (!request.actor) throw new Error("publish without its onRequest authentication");
  return request.actor;
}

const fields = PublishFields.properties;
const entryFields = PublishEntry.properties;

/** The entries of a body checkSpecFields passed: objects, each at its path. */
const entriesOf = (body: JsonObject) =>
  (body.releases as JsonObject[]).map((entry, i) => ({ entry, at: `releases[${i}]` }));

/**
 * The route's validator: the spec's publish checks (section 7) in their binding order, each
 * check on the entries one pass over them all. The product's existence, then the rest of the
 * body (readPublish) follow in the handler.
 */
function checkSpecFields(value: unknown): unknown {
  const body = readObject(value);
  requirePresent(PublishFields, body);
  for (const name of ["productSlug", "version", "channel", "releases", "releaseNotes"] as const) {
    if (isMissing(body[name])) continue;
    checkType(fields[name], body[name], name);
    checkNul(body[name], name);
  }
  checkValue(fields.channel, body.channel, "channel");
  const entries = (body.releases as unknown[]).map((item, i) => {
    const at = `releases[${i}]`;
    const entry = readObject(item, PublishEntry, at);
    requirePresent(PublishEntry, entry, at);
    return { entry, at };
  });
  for (const { entry, at } of entries) {
    checkValue(entryFields.platform, entry.platform, `${at}.platform`);
    checkValue(entryFields.arch, entry.arch, `${at}.arch`);
  }
  for (const { entry, at } of entries) {
    downloadUrlOf(entry.downloadUrl, at);
    checkNul(entry.signature, "signature", `${at}.signature`);
  }
  versionOf(body.version as string);
  return body;
}

/** The spec's "well-formed URL using HTTPS", normalised (download-url.ts). */
function downloadUrlOf(raw: unknown, at: string): string {
  const url = typeof raw === "string" ? normalizeDownloadUrl(raw) : null;
  if (url === null) throw ShipkeyError.spec("INVALID_DOWNLOAD_URL", { field: `${at}.downloadUrl` });
  return url;
}

/** Semver, one leading "v" stripped (409 otherwise, as the spec says). */
function versionOf(raw: string): string {
  const version = normalizeVersion(raw);
  if (version === null) throw ShipkeyError.spec("INVALID_VERSION", { field: "version" });
  return version;
}

const orNull = <T>(value: T | undefined): T | null => (isMissing(value) ? null : (value ?? null));

/**
 * The rest of a publish the spec's checks passed, after the product's: a field the request or an
 * entry does not define (UNKNOWN_FIELD: nothing would read it, so the publish would succeed
 * without what was meant), then each entry's optional fields' types, then critical and rollout.
 * Returns the publish as the domain takes it; its documented limits follow (checkPublishLimits).
 */
function readPublish(value: unknown): PublishRequest {
  const body = value as JsonObject;
  const entries = entriesOf(body);
  refuseUnknownFields(PublishFields, body);
  for (const { entry, at } of entries) refuseUnknownFields(PublishEntry, entry, at);
  for (const { entry, at } of entries) {
    for (const name of ["signature", "fileSize", "sha512"] as const) {
      if (!isMissing(entry[name])) checkType(entryFields[name], entry[name], `${at}.${name}`);
    }
  }
  // Every field is read here: the body is the contract's, but for its missing optional fields.
  const { critical = null, rollout = null } = readFields(PublishFields, body, [
    "critical",
    "rollout",
  ]);
  const publish = body as PublishFields;
  return {
    productSlug: publish.productSlug,
    version: versionOf(publish.version),
    channel: publish.channel,
    releaseNotes: orNull(publish.releaseNotes),
    releases: publish.releases.map((entry, i) => ({
      platform: entry.platform,
      arch: entry.arch,
      downloadUrl: downloadUrlOf(entry.downloadUrl, `releases[${i}]`),
      signature: orNull(entry.signature),
      fileSize: orNull(entry.fileSize),
      sha512: orNull(entry.sha512),
    })),
    rollout,
    critical,
  };
}
