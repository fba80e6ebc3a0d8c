import { type Static, Type } from "typebox";
import {
  contract,
  DateTime,
  Deleted,
  NullableDateTime,
  NullableInteger,
  NullableString,
  Slug,
  SlugParams,
  StringEnum,
  strict,
} from "./kit.js";
import {
  arches,
  channels,
  limits,
  platforms,
  rolloutRange,
  rolloutStates,
  rolloutSteps,
  usageReportDays,
} from "./vocabulary.js";

// The admin API's releases: a product's versions, their rollouts, yanks and entries, and its
// usage report. (Publishing and the feeds: releases.ts.)

export const RolloutView = Type.Object(
  {
    state: StringEnum(rolloutStates, {
      description: "rolling: offered to `percent` of machines; paused: to no machine without it",
    }),
    percent: Type.Integer({
      minimum: 0,
      maximum: rolloutRange.maxPercent,
      description: "The share of machines the rollout reaches now (a schedule's steps begun)",
    }),
    stepHours: NullableInteger({
      description: `A schedule: a ${rolloutSteps}th more machines every stepHours; null: a set percentage`,
    }),
    startedAt: DateTime("When the rollout (or its schedule) started, pauses excluded"),
    pausedAt: NullableDateTime("When the rollout was paused; null while it rolls"),
  },
  { title: "Rollout" },
);
export type RolloutView = Static<typeof RolloutView>;

const rolloutFields = {
  critical: Type.Boolean({
    description: "Offered to every machine whatever its rollout (a pause still halts it)",
  }),
  rollout: Type.Union([RolloutView, Type.Null()], {
    description: "null: released to every machine",
  }),
};

export const ReleaseVersion = Type.Object(
  {
    version: Type.String(),
    channel: StringEnum(channels),
    ...rolloutFields,
    releaseNotes: NullableString({ description: "Markdown" }),
    releaseNotesHtml: NullableString({
      description:
        "The notes as the dashboard and the Sparkle appcast show them: sanitised HTML, rendered " +
        "when published (no raw HTML, links to http(s) and mailto only)",
    }),
    createdAt: DateTime(),
    updatedAt: DateTime(),
    yankedAt: NullableDateTime("When an admin withdrew the version from the feeds"),
    entries: Type.Array(
      Type.Object({
        platform: StringEnum(platforms),
        arch: StringEnum(arches),
        downloadUrl: Type.String({ format: "uri" }),
        signature: NullableString(),
        fileSize: NullableInteger(),
        sha512: NullableString(),
        updatedAt: DateTime(),
      }),
    ),
  },
  { title: "ReleaseVersion" },
);
export type ReleaseVersion = Static<typeof ReleaseVersion>;

export const UsageReport = Type.Object(
  {
    product: Type.String(),
    since: Type.String({ format: "date", description: "The first UTC day counted" }),
    downloads: Type.Array(
      Type.Object({
        version: Type.String(),
        platform: StringEnum(platforms),
        count: Type.Integer(),
      }),
    ),
    updateChecks: Type.Array(
      Type.Object({
        currentVersion: NullableString({ description: "null: the client sent none" }),
        platform: StringEnum(platforms),
        channel: StringEnum(channels),
        count: Type.Integer(),
      }),
    ),
    machinesByVersion: Type.Array(
      Type.Object({
        version: NullableString({
          description: "The app's version the machine reported; null: none reported",
        }),
        machines: Type.Integer(),
      }),
      { description: "Active machines now, per app version, most machines first" },
    ),
  },
  { title: "UsageReport" },
);
export type UsageReport = Static<typeof UsageReport>;

const VersionParams = Type.Object({
  slug: Slug,
  version: Type.String({ minLength: 1, maxLength: limits.identifier }),
});
const releaseErrors = ["PRODUCT_NOT_FOUND", "PRODUCT_NOT_IN_KEY", "RELEASE_NOT_FOUND"] as const;

export const listReleases = contract({
  method: "GET",
  url: "/api/admin/products/:slug/releases",
  operationId: "listReleases",
  tag: "Admin: releases",
  summary: "A product's releases, newest version first",
  auth: "releases:read",
  errors: ["PRODUCT_NOT_FOUND", "PRODUCT_NOT_IN_KEY"],
  schema: {
    params: SlugParams,
    response: { 200: Type.Object({ items: Type.Array(ReleaseVersion) }) },
  },
});

export const usage = contract({
  method: "GET",
  url: "/api/admin/products/:slug/usage",
  operationId: "getUsageReport",
  tag: "Admin: releases",
  summary: "Machines per version, downloads and update checks",
  description:
    "The product's active machines per app version, as the SDK reports it (appVersion with " +
    "activate, validate and checkout; null: machines whose app reported none). Downloads (through /api/downloads) " +
    "per version and platform, and update checks per client version, platform and channel, " +
    `summed over the last \`days\` UTC days (1 to ${usageReportDays.max}, ` +
    `default ${usageReportDays.default}). Counts and versions are written once a second.`,
  auth: "releases:read",
  errors: ["PRODUCT_NOT_FOUND", "PRODUCT_NOT_IN_KEY"],
  schema: {
    params: SlugParams,
    querystring: Type.Object(
      { days: Type.Optional(Type.String({ pattern: "^[1-9][0-9]{0,2}$" })) },
      strict,
    ),
    response: { 200: UsageReport },
  },
});

export const deleteRelease = contract({
  method: "DELETE",
  url: "/api/admin/products/:slug/releases/:version",
  operationId: "deleteRelease",
  tag: "Admin: releases",
  summary: "Delete a version and all its entries",
  auth: "releases:write",
  errors: releaseErrors,
  schema: {
    params: VersionParams,
    response: { 200: Deleted({ product: Type.String(), version: Type.String() }) },
  },
});

const yankChange = (action: "yank" | "unyank", summary: string) =>
  contract({
    method: "POST",
    url: `/api/admin/products/:slug/releases/:version/${action}`,
    operationId: `${action}Release`,
    tag: "Admin: releases",
    summary,
    auth: "releases:write",
    errors: releaseErrors,
    schema: {
      params: VersionParams,
      response: {
        200: Type.Object({
          product: Type.String(),
          version: Type.String(),
          yankedAt: NullableDateTime(),
        }),
      },
    },
  });
export const yankRelease = yankChange("yank", "Withdraw a version from the feeds and downloads");
export const unyankRelease = yankChange("unyank", "Offer a yanked version again");

export const ReleaseRollout = Type.Object(
  { product: Type.String(), version: Type.String(), ...rolloutFields },
  { title: "ReleaseRollout" },
);
export type ReleaseRollout = Static<typeof ReleaseRollout>;

export const startRollout = contract({
  method: "POST",
  url: "/api/admin/products/:slug/releases/:version/rollout",
  operationId: "startRollout",
  tag: "Admin: releases",
  summary: "Put a version into a phased rollout, or change its percentage or schedule",
  description:
    "`percent` (1 to 100): that share of machines is offered the version from now on; raising it " +
    `only adds machines. \`stepHours\` (1 to ${rolloutRange.maxStepHours}): a schedule of ` +
    `${rolloutSteps} steps, a ${rolloutSteps}th more machines every stepHours from now. A paused ` +
    "rollout stays paused. Machines outside are offered the newest released version above theirs.",
  auth: "releases:write",
  errors: releaseErrors,
  schema: {
    params: VersionParams,
    body: Type.Union(
      [
        Type.Object(
          {
            percent: Type.Integer({
              minimum: rolloutRange.minPercent,
              maximum: rolloutRange.maxPercent,
            }),
          },
          strict,
        ),
        Type.Object(
          {
            stepHours: Type.Integer({
              minimum: rolloutRange.minStepHours,
              maximum: rolloutRange.maxStepHours,
            }),
          },
          strict,
        ),
      ],
      { title: "RolloutPlan" },
    ),
    response: { 200: ReleaseRollout },
  },
});

const rolloutChange = (action: "pause" | "resume" | "complete", summary: string) =>
  contract({
    method: "POST",
    url: `/api/admin/products/:slug/releases/:version/rollout/${action}`,
    operationId: `${action}Rollout`,
    tag: "Admin: releases",
    summary,
    auth: "releases:write",
    errors: [...releaseErrors, "NO_ROLLOUT"],
    schema: { params: VersionParams, response: { 200: ReleaseRollout } },
  });
export const pauseRollout = rolloutChange(
  "pause",
  "Halt a rollout: no machine without the version is offered it",
);
export const resumeRollout = rolloutChange(
  "resume",
  "Resume a paused rollout (a schedule continues where it stopped)",
);
export const completeRollout = rolloutChange(
  "complete",
  "Release a version in a rollout to every machine",
);

export const setCritical = contract({
  method: "POST",
  url: "/api/admin/products/:slug/releases/:version/critical",
  operationId: "setReleaseCritical",
  tag: "Admin: releases",
  summary: "Mark a version critical (offered to every machine whatever its rollout) or not",
  auth: "releases:write",
  errors: releaseErrors,
  schema: {
    params: VersionParams,
    body: Type.Object({ critical: Type.Boolean() }, strict),
    response: { 200: ReleaseRollout },
  },
});

export const deleteReleaseEntry = contract({
  method: "DELETE",
  url: "/api/admin/products/:slug/releases/:version/:platform/:arch",
  operationId: "deleteReleaseEntry",
  tag: "Admin: releases",
  summary: "Delete one platform/arch entry of a version",
  auth: "releases:write",
  errors: releaseErrors,
  schema: {
    params: Type.Object({
      ...VersionParams.properties,
      platform: StringEnum(platforms),
      arch: StringEnum(arches),
    }),
    response: {
      200: Deleted({
        product: Type.String(),
        version: Type.String(),
        platform: StringEnum(platforms),
        arch: StringEnum(arches),
      }),
    },
  },
});
