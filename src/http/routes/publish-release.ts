import type { FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import { type DB } from "../../db/schema.js";
import { authenticateApiKey } from "../../domain/api-keys/authenticate.js";
import {
  publish as publishContract,
  PublishEntry,
  PublishRequest as PublishFields,
} from "../../contracts/releases.js";
import { type App, documentationOnly, routeSchema } from "../contract-route.js";
import { findProductBySlug } from "../../domain/products/products.js";
import {
  checkPublishLimits,
  fileSizeInvalid,
  type PublishRequest,
  publishWarnings,
  type ReleaseEntry,
} from "../../domain/releases/publish-release.js";
import { assertKeyCovers } from "../../domain/api-keys/key-authority.js";
import { publishRelease } from "../../actions/releases.js";
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
import { arches, channels, limits, platforms, rolloutRange } from "../../contracts/vocabulary.js";
import { assertKnownFields } from "../unknown-fields.js";

export function publishReleaseRoute(app: App, db: Kysely<DB>): void {
  app.post(publishContract.url, {
    schema: routeSchema(publishContract),
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
      refuseUnknownFields(publish);
      const typed = typedPublish(publish);
      const { releaseNotes, entries } = checkPublishLimits(typed);
      const { rollout, critical } = typed;
      const result = await publishRelease(db, key(request), product, {
        version: publish.version,
        channel: publish.channel,
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

/** A publish after the spec's checks: its optional fields not yet read, `fields` the body. */
interface SpecChecked extends Omit<
  PublishRequest,
  "releaseNotes" | "releases" | "rollout" | "critical"
> {
  fields: JsonObject;
  releaseNotes: unknown;
  rollout: unknown;
  critical: unknown;
  releases: Array<Pick<ReleaseEntry, "platform" | "arch" | "downloadUrl"> & { fields: JsonObject }>;
}

/**
 * The spec's publish checks in their binding order; each check is one pass over all entries.
 * Product existence, then unknown fields, the optional fields' types (typedPublish) and the
 * documented limits follow in the handler.
 */
export function parsePublishRequest(rawBody: unknown): SpecChecked {
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

  if (!isOneOf(channels, channel)) throw ShipkeyError.spec("INVALID_CHANNEL", { field: "channel" });

  const entries: JsonObject[] = [];
  releases.forEach((entry: unknown, i) => {
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      throw ShipkeyError.spec("INVALID_RELEASE_ENTRY", { field: `releases[${i}]` });
    }
    const fields = entry as JsonObject;
    const missing = (["platform", "arch", "downloadUrl"] as const).find((name) =>
      isMissing(fields[name]),
    );
    if (missing) {
      throw ShipkeyError.spec("INVALID_RELEASE_ENTRY", { field: `releases[${i}].${missing}` });
    }
    entries.push(fields);
  });
  const targeted = entries.map((fields, i) => {
    const { platform, arch } = fields;
    if (!isOneOf(platforms, platform)) {
      throw ShipkeyError.spec("INVALID_PLATFORM_ARCH", { field: `releases[${i}].platform` });
    }
    if (!isOneOf(arches, arch)) {
      throw ShipkeyError.spec("INVALID_PLATFORM_ARCH", { field: `releases[${i}].arch` });
    }
    return { fields, platform, arch };
  });
  const located = targeted.map(({ fields, platform, arch }, i) => {
    const downloadUrl =
      typeof fields.downloadUrl === "string" ? normalizeDownloadUrl(fields.downloadUrl) : null;
    if (downloadUrl === null) {
      throw ShipkeyError.spec("INVALID_DOWNLOAD_URL", { field: `releases[${i}].downloadUrl` });
    }
    if (typeof fields.signature === "string") {
      assertNoNul("signature", fields.signature, `releases[${i}].signature`);
    }
    return { platform, arch, downloadUrl, fields };
  });

  const version = normalizeVersion(rawVersion);
  if (version === null) throw ShipkeyError.spec("INVALID_VERSION", { field: "version" });

  return {
    fields: body,
    productSlug,
    version,
    channel,
    releaseNotes: notes,
    releases: located,
    rollout: body.rollout,
    critical: body.critical,
  };
}

const requestFields = Object.keys(PublishFields.properties);
const entryFields = Object.keys(PublishEntry.properties);

/**
 * A field the contract does not define, in the body, then in each entry in order (after the
 * spec's checks, so a request failing one gets the spec's answer): 400 UNKNOWN_FIELD, naming it
 * and the known field it is close to (`notes`: releaseNotes). Nothing would read it, so the
 * publish would succeed without what was meant.
 */
function refuseUnknownFields(publish: SpecChecked): void {
  assertKnownFields(publish.fields, requestFields);
  publish.releases.forEach(({ fields }, i) => {
    assertKnownFields(fields, entryFields, `releases[${i}]`);
  });
}

/** The optional fields, each of its type or null ("" is missing, like any optional field). */
function typedPublish(publish: SpecChecked): PublishRequest {
  const optional = (value: unknown) => (value === undefined || value === "" ? null : value);
  const releases = publish.releases.map(({ fields, ...entry }, index): ReleaseEntry => {
    const at = `releases[${index}]`;
    const signature = optional(fields.signature);
    if (signature !== null && typeof signature !== "string") {
      throw new ShipkeyError("INVALID_FIELD_TYPE", `${at}.signature must be a string`, {
        field: `${at}.signature`,
      });
    }
    const fileSize = optional(fields.fileSize);
    if (fileSize !== null && typeof fileSize !== "number") throw fileSizeInvalid(at);
    const sha512 = optional(fields.sha512);
    if (sha512 !== null && typeof sha512 !== "string") {
      throw new ShipkeyError("INVALID_FIELD_TYPE", `${at}.sha512 must be a string`, {
        field: `${at}.sha512`,
      });
    }
    return { ...entry, signature, fileSize, sha512 };
  });
  // The spec's pass already refused notes that are neither missing nor a string.
  const notes = publish.releaseNotes;
  return {
    productSlug: publish.productSlug,
    version: publish.version,
    channel: publish.channel,
    releaseNotes: typeof notes === "string" && notes !== "" ? notes : null,
    releases,
    ...rolloutSettings(publish),
  };
}

/**
 * The optional rollout (`{percent}` or `{stepHours}`, whole numbers in their ranges) and
 * critical (a boolean); missing ones are null.
 */
function rolloutSettings(publish: SpecChecked): Pick<PublishRequest, "rollout" | "critical"> {
  const critical = isMissing(publish.critical) ? null : publish.critical;
  if (critical !== null && typeof critical !== "boolean") throw wrongType("critical", "a boolean");
  if (isMissing(publish.rollout)) return { rollout: null, critical };
  const rollout = publish.rollout;
  if (typeof rollout !== "object" || rollout === null || Array.isArray(rollout)) {
    throw wrongType("rollout", "an object");
  }
  const fields = rollout as JsonObject;
  const keys = Object.keys(fields);
  const [name] = keys;
  if (keys.length !== 1 || (name !== "percent" && name !== "stepHours")) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      "rollout must have exactly one of percent or stepHours",
      { field: "rollout" },
    );
  }
  const value = fields[name];
  const [min, max] =
    name === "percent"
      ? [rolloutRange.minPercent, rolloutRange.maxPercent]
      : [rolloutRange.minStepHours, rolloutRange.maxStepHours];
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `rollout.${name} must be a whole number from ${min} to ${max}`,
      { field: `rollout.${name}` },
    );
  }
  return { rollout: name === "percent" ? { percent: value } : { stepHours: value }, critical };
}

function isOneOf<T extends string>(values: readonly T[], value: unknown): value is T {
  return typeof value === "string" && (values as readonly string[]).includes(value);
}
